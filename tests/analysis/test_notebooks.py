"""The notebooks execute top to bottom on a Jupyter kernel over the session's small scripted experiment
(`analysis_run`, tests/conftest.py): no error output, and each of their figures shown exactly once. Slow (a
kernel start and a full analysis each); needs the notebooks extra, imported here only, so the module collects
without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["social_behavior", "ablation_results"])
def test_notebooks_execute(name, analysis_run, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("AVALON_RUN", str(analysis_run))
    monkeypatch.setenv("AVALON_JUDGE_MODEL", "scripted")
    # the kernel imports this checkout's package (not whichever one the environment has installed)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    book = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    NotebookClient(book, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    outputs = [o for cell in book.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == (10 if name == "social_behavior" else 3)  # each figure once: none shown twice
    assert len(set(images)) == len(images)
    assert os.environ["AVALON_RUN"] == str(analysis_run)
