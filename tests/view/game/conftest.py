"""A small recorded run for the replay viewer's tests: two scripted games, cognitive, vanilla LLM and rule-bot
seats, belief probes on (every trace record kind the viewer shows), and its replay written by `avalon replay`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli

SEATS = "cognitive,rulebot,llm,cognitive,rulebot,cognitive"


@pytest.fixture(scope="session")
def replay_run(tmp_path_factory) -> Path:
    """The run folder (game-00001, game-00002) with its replay in run/replay/. Treat it as read-only."""
    run = tmp_path_factory.mktemp("replay") / "run"
    played = CliRunner().invoke(cli, ["play", "--seats", SEATS, "--model", "scripted", "--probes", "--games", "2",
                                      "--out", str(run), "--json"])
    assert played.exit_code == 0, played.output
    written = CliRunner().invoke(cli, ["replay", str(run)])
    assert written.exit_code == 0, written.output
    assert written.output.strip() == f"replay: {run / 'replay' / 'index.html'}"
    return run
