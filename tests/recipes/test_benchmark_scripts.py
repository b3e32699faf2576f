"""The recipe "a new benchmark": a script in benchmarks/ that says in its docstring what it measures and how to
run it, and whose figures a doc records (docs/benchmarks.md, or the doc of what it measures) by naming it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from avalon_agents.records.run_dir import RESULT

ROOT = Path(__file__).parents[2]


def test_every_benchmark_says_how_to_run_it_and_a_doc_names_it():
    docs = "\n".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        doc = ast.get_docstring(ast.parse(script.read_text())) or ""
        assert "benchmarks/" + script.name in doc or "python" in doc, f"{script.name}: no command in its docstring"
        assert f"benchmarks/{script.name}" in docs, f"{script.name}: no doc records its figures"


@pytest.mark.slow  # plays a few rule-bot games and times the view over them
def test_view_scale_makes_its_runs_once_and_prints_its_table(tmp_path):
    import os
    import subprocess
    import sys

    command = [sys.executable, str(ROOT / "benchmarks/view_scale.py"), "--out", str(tmp_path), "--runs", "3",
               "--games", "2", "--big", "5", "--template", "4", "--repeats", "1", "--first-repeats", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "playing the template: 4 rule-bot games" in first.stdout
    assert sorted(p.name for p in (tmp_path / "index").iterdir()) == ["run-0001", "run-0002", "run-0003"]
    assert len(list((tmp_path / "big/run-big").rglob(RESULT))) == 5
    lines = first.stdout[first.stdout.index("measurement"):].splitlines()[1:]
    assert len(lines) == 8 and all(float(line.split()[-4]) >= 0 for line in lines)
    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0 and "playing the template" not in again.stdout  # made once: kept
    assert len(list((tmp_path / "index/run-0003").rglob(RESULT))) == 2  # the game it gained: gone
    inside = subprocess.run([*command[:3], str(ROOT / "runs-view-scale")], capture_output=True, text=True, env=env)
    assert inside.returncode != 0 and "--out" in inside.stderr  # never inside the repository


@pytest.mark.slow  # plays a few rule-bot games, loads and compares their runs in new processes
def test_columns_makes_its_runs_once_and_times_the_copy(tmp_path):
    import os
    import subprocess
    import sys

    from avalon_agents.records.columns import FOLDER

    command = [sys.executable, str(ROOT / "benchmarks/columns.py"), "--out", str(tmp_path), "--big", "5",
               "--template", "4", "--repeats", "1", "--huge", "7"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    header, *table = first.stdout[first.stdout.index("measurement"):].splitlines()
    at = header.index("wall s")
    names = [line[:at].rstrip() for line in table]
    assert names == ["run-a: load_run, no copy (files read, copy written)",
                     "run-b: load_run, no copy (files read, copy written)", "run-a: load_run, the copy there",
                     "compare run-a and run-b, a new View", "  ... of which both runs loaded and analyzed",
                     "run-huge: load_run, no copy (files read, copy written)", "run-huge: load_run, the copy there",
                     "run-huge: load_run and report.compute"]
    assert all(float(line[at:].split()[0]) >= 0 for line in table)  # each one's median wall seconds
    for run in ("big/run-a", "big/run-b", "huge/run-huge"):
        assert len(list((tmp_path / run).rglob(RESULT))) == (7 if "huge" in run else 5)
        assert any((tmp_path / run / FOLDER).iterdir())  # the copy the first read wrote
    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0 and "playing the template" not in again.stdout
    assert "no copy" not in again.stdout  # the copies kept: read from them
