"""The notebooks execute top to bottom on a Jupyter kernel: over the session's small scripted experiment
(`analysis_run`, tests/conftest.py), and as on a fresh clone (no runs/ folder: each plays a small scripted run of
its config on first use and says so); no error output, and each of their figures shown exactly once. Slow (a
kernel start and a full analysis each); needs the notebooks extra, imported here only, so the module collects
without it."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from avalon_agents.records.run_dir import RESULT

ROOT = Path(__file__).parent.parent.parent

pytestmark = pytest.mark.slow


FIGURES = {"social_behavior": 10, "ablation_results": 3}
"""Figures each notebook shows over `analysis_run` (the social notebook's probes figure needs a run with probes)."""
DEFAULT_RUN = {"social_behavior": "quickstart", "ablation_results": "table2"}


def execute(root: Path, name: str, monkeypatch) -> list:
    """Run notebooks/NAME.ipynb under `root` top to bottom (the kernel in root/notebooks, as Jupyter starts it);
    its code cells' outputs."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("AVALON_JUDGE_MODEL", "scripted")
    # the kernel imports this checkout's package (not whichever one the environment has installed)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    book = nbformat.read(root / "notebooks" / f"{name}.ipynb", as_version=4)
    NotebookClient(book, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(root / "notebooks")}}).execute()
    outputs = [o for cell in book.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})]
    assert len(set(images)) == len(images)  # each figure once: none shown twice
    return outputs


def images(outputs: list) -> int:
    return sum("image/png" in o.get("data", {}) for o in outputs)


def printed(outputs: list) -> str:
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")


@pytest.mark.parametrize("name", ["social_behavior", "ablation_results"])
def test_notebooks_execute(name, analysis_run, monkeypatch):
    monkeypatch.setenv("AVALON_RUN", str(analysis_run))
    outputs = execute(ROOT, name, monkeypatch)
    assert images(outputs) == FIGURES[name]
    assert "sample run" not in printed(outputs)  # the run it was given, no sample
    assert os.environ["AVALON_RUN"] == str(analysis_run)
    tables = "".join(o.get("data", {}).get("text/plain", "") for o in outputs if o.get("output_type") != "stream")
    assert re.search(r"\d+% \[\d+%, \d+%\]", tables)  # a rate with its interval, as every output shows it
    assert not re.search(r"\d\.\d{4,}", tables)  # formats.shown_table: no raw float (0.206549) in a table


@pytest.mark.parametrize("name", ["social_behavior", "ablation_results"])
def test_notebooks_execute_on_a_fresh_clone(name, tmp_path, monkeypatch):
    """A fresh clone has notebooks/ and experiments/ and no runs/: the notebook plays a few scripted games of
    its config beside the run it looks for, says so above its figures, and shows them."""
    for folder in ("notebooks", "experiments"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    monkeypatch.delenv("AVALON_RUN", raising=False)
    outputs = execute(tmp_path, name, monkeypatch)
    run = DEFAULT_RUN[name]
    assert f"NOTE: ../runs/{run} holds no finished game" in printed(outputs)
    assert "made just now" in printed(outputs) and f"--out ../runs/{run}`" in printed(outputs)
    assert not (tmp_path / "runs" / run).exists()  # the real run's folder is left for the real run
    assert list((tmp_path / "runs" / f"{run}-scripted").rglob(RESULT))
    assert images(outputs) == FIGURES[name] - (name == "social_behavior")  # no probes in the quickstart
