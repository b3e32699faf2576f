"""The package's import graph: floors import only downward, and no module imports itself back through others.
Every import counts, also those inside functions and under TYPE_CHECKING, and a module named in a string (a late
`importlib.import_module`). Loading a run for analysis imports no model client."""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "avalon_agents"
FLOORS = [  # lowest first; a unit imports only from its own floor or the floors below
    {"avalon_agents", "errors", "checks", "plugins", "registry", "logs", "aio", "prices", "lazy", "formats", "web"},
    {"core"},
    {"engine"},
    {"prompting", "orders", "profiles", "speeches"},
    {"narrate"},
    {"decisions"},
    {"records"},
    {"llm"},
    {"extract"},
    {"stores"},
    {"modules"},
    {"agents"},
    {"analysis"},
    {"host", "importers"},
    {"view"},
    {"table"},
    {"experiments"},
    {"bench", "extract_check", "testing"},
    {"cli"},
]
FLOOR = {unit: i for i, units in enumerate(FLOORS) for unit in units}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


@functools.lru_cache(maxsize=1)  # the package's files do not change during a test run: parsed once
def imports() -> dict[str, set[str]]:
    """Module -> the avalon_agents modules it imports (resolved to modules that exist)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("avalon_agents"):
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) ==
                  "import_module" and node.args and isinstance(node.args[0], ast.Constant)):
                targets = [node.args[0].value]  # importlib.import_module("avalon_agents..."): a late import
            else:
                continue
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
                    break
    return graph


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_every_unit_has_a_floor():
    units = {unit(module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert units <= set(FLOOR), f"put these on a floor: {sorted(units - set(FLOOR))}"


def test_imports_only_go_down_a_floor():
    upward = sorted(f"{a} -> {b}" for a, targets in imports().items() for b in targets
                    if FLOOR[unit(b)] > FLOOR[unit(a)])
    assert not upward, upward


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle a depth-first walk meets (each as the modules around it)."""
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


def test_no_import_circle():
    assert circles(imports()) == []
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]  # the walk finds one


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_the_checker_sees_an_upward_import():
    graph = imports()
    assert "avalon_agents.llm.client" in graph["avalon_agents.extract.extractor"]  # it reads real edges
    assert FLOOR["core"] < FLOOR["llm"] < FLOOR["cli"]


def test_the_analysis_stands_below_the_host():
    assert FLOOR["analysis"] < FLOOR["host"]
    into_host = sorted(f"{a} -> {b}" for a, targets in imports().items() if unit(a) == "analysis"
                       for b in targets if unit(b) == "host")
    assert into_host == []
    assert "avalon_agents.analysis.humans.games" in imports()["avalon_agents.host.human_probes"]  # the host reads it


def waits_with_a_limit() -> list[str]:
    """Where the package calls asyncio.wait_for or asyncio.timeout (module:line)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr in ("wait_for", "timeout", "timeout_at")
                    and isinstance(node.value, ast.Name) and node.value.id == "asyncio"):
                found.append(f"{module_name(path)}:{node.lineno}")
    return found


def test_every_wait_with_a_time_limit_goes_through_aio_within():
    """Python 3.11's asyncio.wait_for loses a Ctrl-C or SIGTERM that arrives as its work finishes (CI once played
    all 300 games of a run stopped after 2); asyncio.timeout cancels the host when entered in its eager first
    step. aio.within has neither fault (tests/test_aio.py)."""
    assert waits_with_a_limit() == []


def test_the_wait_check_sees_asyncio_wait_for(tmp_path, monkeypatch):
    (tmp_path / "avalon_agents").mkdir()
    (tmp_path / "avalon_agents" / "late.py").write_text("import asyncio\nasyncio.wait_for(x, 1)\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "avalon_agents")
    assert waits_with_a_limit() == ["avalon_agents.late:2"]


def test_loading_a_run_imports_no_model_client():
    code = ("import sys, avalon_agents.analysis\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('langchain', 'langchain_core', 'langchain_openai', 'openai', 'chromadb', 'llama_cpp', 'httpx')"
            " or m.startswith(('avalon_agents.host', 'avalon_agents.llm', 'avalon_agents.agents')))\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


HEAVY = ("langchain", "langchain_core", "langchain_openai", "openai", "chromadb", "llama_cpp", "onnxruntime",
         "pandas", "tiktoken")


def _loaded_by(*commands: list[str]) -> tuple[set[str], list[int]]:
    """The heavy packages one process loaded running `avalon ARGS` for each of `commands`, and their exit codes."""
    code = ("import contextlib, io, json, sys\nfrom avalon_agents.cli import main\ncodes = []\n"
            f"for args in {[list(c) for c in commands]!r}:\n"
            "    sys.argv = ['avalon', *args]\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            "        try:\n            main()\n            codes.append(0)\n"
            "        except SystemExit as exc:\n            codes.append(exc.code or 0)\n"
            f"print(json.dumps([sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})), codes]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded, codes = json.loads(out.stdout.strip().splitlines()[-1])
    return set(loaded), codes


def test_help_and_one_line_errors_load_no_model_client():
    """`avalon --help`, each command's --help and every kind of one-line mistake (an option, a seat kind, a
    config, a missing folder, a model spec) start light: no langchain, provider package, chromadb, embedded model
    or onnxruntime (the CLI imports them inside its commands, after the input is checked)."""
    from avalon_agents.cli import cli

    helps = [["--help"], *[[name, "--help"] for name in sorted(cli.commands)], ["bench", "engine", "--help"]]
    bad = Path(__file__).parent / "data" / "bad_config.yaml"
    mistakes = [["play", "--games", "x"], ["run", "--no-such-option"], ["play", "--seats", "nope"],
                ["play", "--human", "9"], *[[command, str(bad)] for command in ("run", "tournament", "redteam",
                                                                              "bias")],
                ["run", "no/such/config.yaml"], ["analyze", "no/such/run"], ["replay", "no/such/run"],
                ["probe-humans", "no/such/run", "--model", "scripted"], ["bench", "cost", "--seats", "nope"],
                ["extract", "--kind", "vote", "--text", "yes", "--seat", "9"],
                ["play", "--model", "nope", "--seats", "llm"]]
    loaded, codes = _loaded_by(*helps, *mistakes)
    assert loaded & {"langchain", "langchain_core", "langchain_openai", "openai", "chromadb", "llama_cpp",
                     "onnxruntime"} == set()
    assert codes == [0] * len(helps) + [2] * len(mistakes)


@pytest.mark.slow  # a process that imports langchain: seconds
def test_the_import_check_sees_a_heavy_import():
    """The check above can fail: a command that plays loads the model client, and the check sees it."""
    loaded, codes = _loaded_by(["play", "--model", "scripted", "--players", "5", "--seats", "llm"])
    assert "langchain_core" in loaded and codes == [0]
