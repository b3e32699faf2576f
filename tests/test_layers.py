"""The package's import graph: floors import only downward, and no module imports itself back through others.
Every import counts, also those inside functions and under TYPE_CHECKING. Loading a run for analysis imports no
model client."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "avalon_agents"
FLOORS = [  # lowest first; a unit imports only from its own floor or the floors below
    {"avalon_agents", "errors", "checks", "plugins", "logs", "aio", "prices"},
    {"core"},
    {"engine"},
    {"prompting", "orders"},
    {"narrate"},
    {"decisions"},
    {"records"},
    {"llm"},
    {"extract"},
    {"stores"},
    {"modules"},
    {"agents"},
    {"host", "importers"},
    {"analysis", "viewer"},
    {"experiments"},
    {"cost", "bench"},
    {"cli"},
]
FLOOR = {unit: i for i, units in enumerate(FLOORS) for unit in units}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


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


def test_the_checker_sees_an_upward_import():
    graph = imports()
    assert "avalon_agents.llm.client" in graph["avalon_agents.extract.extractor"]  # it reads real edges
    assert FLOOR["core"] < FLOOR["llm"] < FLOOR["cli"]


def test_loading_a_run_imports_no_model_client():
    code = ("import sys, avalon_agents.analysis\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('langchain', 'langchain_core', 'langchain_openai', 'openai', 'chromadb', 'llama_cpp', 'httpx')"
            " or m.startswith(('avalon_agents.host', 'avalon_agents.llm', 'avalon_agents.agents')))\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
