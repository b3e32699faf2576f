"""progress.json: a study's progress as it plays (what `avalon view` shows of a run still playing)."""

from __future__ import annotations

import asyncio
import json

from avalon_agents.experiments.config import Experiment
from avalon_agents.experiments.runner import ExperimentStudy
from avalon_agents.experiments.scheduler import play
from avalon_agents.records.run_dir import PROGRESS, read_progress
from tests.helpers import avalon

CONFIG = """\
name: progress
agents:
  bots: {kind: rulebot}
sides: {good: bots, evil: bots}
games_per_series: 4
"""


def test_progress_is_rewritten_per_game_and_says_how_the_run_ended(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG)
    out = tmp_path / "run"
    assert avalon("run", str(config), "--out", str(out), "--max-games", "2").returncode == 0
    first = read_progress(out)
    assert (first["command"], first["name"], first["planned"], first["finished"], first["state"]) == (
        "run", "progress", 4, 2, "stopped")
    seen = []
    study = ExperimentStudy({"main": Experiment.model_validate(__import__("yaml").safe_load(CONFIG))})

    def on_game(lane, n, path):
        seen.append(json.loads((out / PROGRESS).read_text()))

    asyncio.run(play(study, out, on_game=on_game))
    assert [(p["finished"], p["state"]) for p in seen] == [(3, "playing"), (4, "playing")]
    assert seen[0]["planned"] == 4 and isinstance(seen[0]["pid"], int)
    last = read_progress(out)
    assert (last["finished"], last["state"], last["aborted"]) == (4, "done", [])


def test_no_progress_file_reads_as_none(tmp_path):
    assert read_progress(tmp_path) is None
    (tmp_path / PROGRESS).write_text("{half")
    assert read_progress(tmp_path) is None
