"""The Python API runs as written in a plain script and inside a running event loop (a Jupyter cell): the
coroutines are awaited there, and the synchronous forms (`run_experiment_sync`, `play_game`) work in both."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.agents import RuleBot
from avalon_agents.aio import run_sync
from avalon_agents.analysis.load import game_dirs
from avalon_agents.core import make_rules
from avalon_agents.experiments import run_experiment, run_experiment_sync
from avalon_agents.host import play_game
from avalon_agents.records.run_dir import EXPERIMENT

CONFIG = """\
name: awaitable
agents:
  ours: {kind: cognitive}
  bots: {kind: rulebot}
sides: {good: ours, evil: bots}
series: 1
games_per_series: 1
variants:
  full: {}
"""


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "awaitable.yaml"
    path.write_text(CONFIG)
    return path


def bots_game() -> dict:
    rules = make_rules("official", players=5)
    return {"rules": rules, "agents": {s: RuleBot(seat=s, seed=s) for s in rules.seats}, "seed": 3}


def test_run_sync_outside_and_inside_a_running_loop():
    async def answer():
        await asyncio.sleep(0)
        return 42

    assert run_sync(answer()) == 42

    async def cell():  # what a Jupyter cell is: code run while the kernel's loop is running
        with pytest.raises(RuntimeError, match="running event loop"):
            coro = answer()
            try:
                asyncio.run(coro)  # why the synchronous forms need run_sync
            finally:
                coro.close()
        return run_sync(answer())

    assert asyncio.run(cell()) == 42


def test_a_script_runs_an_experiment_synchronously(config, tmp_path):
    assert run_experiment_sync(config, tmp_path / "run", model="scripted") == []
    assert len(game_dirs(tmp_path / "run")) == 1
    assert play_game(**bots_game()).winner is not None


def test_a_notebook_awaits_the_experiment_and_may_call_the_sync_forms(config, tmp_path):
    async def notebook():
        aborted = await run_experiment(config, tmp_path / "awaited", model="scripted")  # the Jupyter way
        also = run_experiment_sync(config, tmp_path / "sync", model="scripted")  # a sync call in a cell
        result = play_game(**bots_game())
        return aborted, also, result

    aborted, also, result = asyncio.run(notebook())
    assert aborted == [] and also == [] and result.winner is not None
    assert len(game_dirs(tmp_path / "awaited")) == 1 and len(game_dirs(tmp_path / "sync")) == 1
    assert (tmp_path / "awaited" / EXPERIMENT).read_text().count("awaitable.yaml") == 1  # its source
