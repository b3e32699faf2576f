"""The run a notebook opens (experiments/sample.py): the one it names, else a sample beside it, said in a note.
Playing a sample is tested where the notebooks run on a fresh clone (tests/analysis/test_notebooks.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from avalon_agents.experiments.sample import notebook_run

REPLAY = Path(__file__).parents[1] / "data" / "replay"


def test_the_run_named_or_given_is_opened_as_it_is(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("AVALON_RUN", raising=False)
    assert notebook_run(REPLAY / "run", REPLAY / "config.yaml") == REPLAY / "run"  # it has games
    monkeypatch.setenv("AVALON_RUN", str(tmp_path / "mine"))
    assert notebook_run(REPLAY / "run", REPLAY / "config.yaml") == tmp_path / "mine"  # as given, even missing
    assert capsys.readouterr().out == ""  # no note: no sample


def test_a_missing_run_opens_its_sample_without_playing_it_again(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("AVALON_RUN", raising=False)
    shutil.copytree(REPLAY / "run", tmp_path / "runs" / "replay-scripted")  # a sample made before: 1 game of 1
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("*")}
    assert notebook_run(tmp_path / "runs" / "replay", REPLAY / "config.yaml") == tmp_path / "runs" / "replay-scripted"
    note = capsys.readouterr().out
    assert note.startswith(f"NOTE: {tmp_path / 'runs' / 'replay'} holds no finished game") and "1 game of" in note
    assert "made just now" not in note and f"--out {tmp_path / 'runs' / 'replay'}`" in note
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("*")} == before  # nothing played or written
