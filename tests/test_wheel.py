"""Packaging: the wheel carries every prompt file inside the package (DESIGN: prompts shipped inside the
wheel) and installs without a compiler, llama.cpp or Ray (those are the `local` and `ray` extras); the CLI
imports neither, and a local model without the extra is a one-line error naming it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.helpers import avalon

ROOT = Path(__file__).parent.parent
HEAVY = {"llama-cpp-python": "local", "ray": "ray", "jupyterlab": "notebooks", "pytest": "dev", "pytest-xdist": "dev",
         "selenium": "dev"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp_path = tmp_path_factory.mktemp("wheel")
    source = tmp_path / "src"  # a copy, so the build leaves no build/ folder in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("avalon_agents", "prompts"):
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path), str(source)], check=True, capture_output=True)
    (built,) = tmp_path.glob("avalon_agents-*.whl")
    return built


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_wheel_ships_every_prompt(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    prompts = {f"avalon_agents/prompts/{p.relative_to(ROOT / 'prompts')}" for p in (ROOT / "prompts").rglob("*")
               if p.is_file()}
    assert len(prompts) > 30
    assert prompts <= names, sorted(prompts - names)
    assert "avalon_agents/cli/__init__.py" in names
    assert "avalon_agents/data/paper_figures.yaml" in names  # the paper's Figures 2-6 (analysis/reference.py)
    assert "avalon_agents/data/human_paper6_roles.csv" in names  # the human figures (analysis/humans.py)
    viewer = {f"avalon_agents/view/game/{p.name}" for p in (ROOT / "avalon_agents/view/game").iterdir()
              if p.suffix in (".html", ".css", ".js")}
    assert len(viewer) >= 4 and viewer <= names, sorted(viewer - names)  # the replay page's templates


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_wheel_needs_neither_llama_cpp_nor_ray_without_their_extras(wheel):
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        message = Parser().parsestr(z.read(meta).decode())
    requirements = [Requirement(r) for r in message.get_all("Requires-Dist")]
    unconditional = {r.name.lower() for r in requirements if r.marker is None}
    assert {"pydantic", "langchain-openai", "chromadb"} <= unconditional
    assert not unconditional & set(HEAVY), unconditional & set(HEAVY)
    for name, extra in HEAVY.items():
        (req,) = [r for r in requirements if r.name.lower() == name]
        assert req.marker.evaluate({"extra": extra}) and not req.marker.evaluate({"extra": ""}), (name, req)
    assert not [r for r in requirements if "==" in str(r.specifier)], "ranges, not pins (constraints.txt pins)"
    assert {"local", "ray", "notebooks", "dev"} <= set(message.get_all("Provides-Extra"))


CLI_IMPORTS = """
import sys
from avalon_agents.cli import main
sys.argv = ["avalon", "play", "--seats", "llm,rulebot,rulebot,rulebot,rulebot", "--players", "5",
            "--model", "scripted"]
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"llama_cpp", "ray", "nbclient", "ipykernel"})
print("heavy:", heavy)
"""


@pytest.mark.slow  # seconds: the fast suite stays under its 2 minutes
def test_the_cli_imports_neither_llama_cpp_nor_ray():
    """A fresh process (this one may have imported anything): `avalon play` with an LLM seat."""
    out = subprocess.run([sys.executable, "-c", CLI_IMPORTS], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[-1] == "heavy: []"


def test_a_local_model_without_the_local_extra_is_one_line_naming_it(monkeypatch):
    from avalon_agents.llm import local

    monkeypatch.setattr(local, "_servers", {})  # no server started earlier in this process
    for module in ("llama_cpp", "llama_cpp.server"):  # as if llama-cpp-python were not installed
        monkeypatch.setitem(sys.modules, module, None)
    out = avalon("play", "--seats", "llm", "--model", "local:smollm2")
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "pip install 'avalon_agents[local]'" in out.stderr
    assert "Traceback" not in out.stderr
