"""The analysis folder (records/analysis_dir.py): `avalon analyze` writes its files where the module names them and,
last, a manifest (layout, what wrote it, when, the games it counted) that its readers give back; a folder of a newer
layout is refused in one line, by the reader and by `avalon analyze`; a folder written before manifests still reads."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from avalon_agents import __version__
from avalon_agents.analysis.judges.registry import JUDGES
from avalon_agents.cli import cli
from avalon_agents.records import analysis_dir as folder

GAME = Path(__file__).parent.parent / "data" / "tables_run" / "secret" / "game-00003"
"""A finished game of random seats (secret votes) of the recorded run."""


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> tuple[Path, dict]:
    """The games analysed by `avalon analyze RUN --judge-model scripted --json`: (the run, what it printed)."""
    run = tmp_path_factory.mktemp("analysed") / "run"
    shutil.copytree(GAME, run / "game-00003")
    result = CliRunner().invoke(cli, ["analyze", str(run), "--judge-model", "scripted", "--json"])
    assert result.exit_code == 0, result.output
    return run, json.loads(result.output.splitlines()[-1])  # after the judges' progress


@pytest.mark.slow  # seconds: a game judged and drawn
def test_analyze_writes_its_manifest_last_and_the_readers_give_it_back(analysed):
    run, printed = analysed
    out = folder.analysis_dir(run)
    manifest = folder.read_manifest(out)
    assert manifest is not None and manifest.layout == folder.LAYOUT and manifest.command == "avalon analyze"
    assert manifest.games == ["game-00003"]  # the games it counted, as analysis.load names them
    assert (manifest.version, manifest.judge, manifest.run) == (__version__, "scripted", str(run))
    assert dt.timedelta(0) <= dt.datetime.now(dt.timezone.utc) - manifest.written_at < dt.timedelta(minutes=10)
    assert folder.written_at(out) == manifest.written_at
    assert Path(printed["files"][-1]) == out / folder.MANIFEST and Path(printed["report"]) == folder.report_file(out)
    metrics = folder.read_metrics(out)
    assert list(metrics) == manifest.tables and metrics["win_rate"]
    assert all(folder.metrics_file(out, name).is_file() for name in manifest.tables)
    judged = folder.read_judged(out)
    assert set(judged) == {spec.name for spec in JUDGES.values() if spec.analyze} & set(judged) and judged
    assert {row["game"] for rows in judged.values() for row in rows} <= set(manifest.games)
    assert folder.judge_calls(out).is_file() and folder.figure_file(out, "win_rate").is_file()


def written(out: Path, **manifest) -> Path:
    """An analysis folder as a writer leaves it: metrics.json, a judge's answers, the manifest (with `manifest`)."""
    folder.write_metrics(out, {"win_rate": [{"variant": "main", "side": "good", "win_rate": 0.5}]})
    folder.judged_file(out, "camouflage").write_text("game,seq,raw\ngame-00001,4,lie\n")
    folder.write_manifest(out, folder.Manifest(written=folder.now(), run="run", games=["game-00001"], **manifest))
    return out


def test_a_folder_of_a_newer_layout_is_refused_in_one_line(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(GAME, run / "game-00003")
    folder.metrics_dir(folder.analysis_dir(run)).mkdir(parents=True)
    out = written(folder.analysis_dir(run), layout=folder.LAYOUT + 1)
    with pytest.raises(folder.AnalysisLayoutError, match=f"^analysis: {out} was written in layout "
                                                         f"{folder.LAYOUT + 1} "):
        folder.read_manifest(out)
    before = folder.metrics_json(out).read_text()
    result = CliRunner().invoke(cli, ["analyze", str(run)])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and f"layout {folder.LAYOUT + 1}" in result.output
    assert folder.metrics_json(out).read_text() == before  # nothing written over it


def test_a_folder_written_before_manifests_reads(tmp_path):
    folder.metrics_dir(tmp_path / "analysis").mkdir(parents=True)
    out = written(tmp_path / "analysis")
    assert folder.read_manifest(out).games == ["game-00001"]
    (out / folder.MANIFEST).unlink()
    os.utime(folder.metrics_json(out), (0, 86_400))
    assert folder.read_manifest(out) is None
    assert folder.written_at(out) == dt.datetime(1970, 1, 2, tzinfo=dt.timezone.utc)  # metrics.json's time
    assert folder.read_metrics(out)["win_rate"]
    assert folder.read_metrics(tmp_path / "none") is None and folder.written_at(tmp_path / "none") is None
    assert folder.read_judged(out) == {"camouflage": [{"game": "game-00001", "seq": "4", "raw": "lie"}]}
    assert folder.read_judged(tmp_path / "none") == {} and folder.judged_files(tmp_path / "none") == {}
