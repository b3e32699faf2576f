"""SIGTERM (what Docker, systemd and Slurm send to stop a job) stops every long command as Ctrl-C does: the
summary line, progress.json written as stopped (not left "playing"), finished games whole, exit 143. Real
processes sent a real signal: the process boundary is the subject."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from avalon_agents.records.run_dir import RESULT, is_done, read_progress
from avalon_agents.records.walk import games_in
from tests.helpers import AVALON

RUN = """\
name: sigterm
model: scripted
agents:
  ours: {kind: llm}
  bots: {kind: rulebot}
sides: {good: ours, evil: bots}
series: 1
games_per_series: 300
"""


def started(args: list[str], tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "w") as err:
        proc = subprocess.Popen([AVALON, *args], stdout=subprocess.PIPE, stderr=err, text=True, cwd=tmp_path)
    return proc, stderr


def terminated(proc: subprocess.Popen, stderr: Path) -> str:
    """SIGTERM sent; the process's stderr once it ended (failing if it runs on 60 s later)."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("still running 60 s after SIGTERM")
    return stderr.read_text()


def wait_for_games(proc: subprocess.Popen, out: Path, games: int) -> None:
    # a cold start on a loaded machine once took 50 s before the first game (test_cli's Ctrl-C test)
    deadline = time.monotonic() + 180
    while sum(map(is_done, games_in(out))) < games and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sum(map(is_done, games_in(out))) >= games, "the games never finished: nothing to stop"


def assert_stopped_like_ctrl_c(proc: subprocess.Popen, err: str, out: Path, planned: int) -> None:
    assert proc.returncode == 143, err
    assert "stopped by SIGTERM: finished games are complete on disk" in err and "Traceback" not in err, err
    progress = read_progress(out)
    finished = [game for game in games_in(out) if is_done(game)]
    assert progress is not None and progress["state"] == "stopped", progress
    assert progress["finished"] == len(finished) >= 1 and progress["planned"] == planned
    for game in finished:  # every finished game is whole
        assert json.loads((game / RESULT).read_text())["winner"] in ("good", "evil")


@pytest.mark.slow  # games are played before the signal: seconds
def test_sigterm_stops_avalon_run_as_ctrl_c_does(tmp_path):
    (tmp_path / "run.yaml").write_text(RUN)
    proc, stderr = started(["run", "run.yaml", "--out", "out"], tmp_path)
    wait_for_games(proc, tmp_path / "out", 2)
    assert_stopped_like_ctrl_c(proc, terminated(proc, stderr), tmp_path / "out", 300)


@pytest.mark.slow
def test_sigterm_stops_avalon_play_out_as_ctrl_c_does(tmp_path):
    proc, stderr = started(["play", "--games", "100000", "--out", "out"], tmp_path)
    wait_for_games(proc, tmp_path / "out", 3)
    assert_stopped_like_ctrl_c(proc, terminated(proc, stderr), tmp_path / "out", 100000)


@pytest.mark.slow
@pytest.mark.parametrize("command", [["view", "runs", "--json", "--port", "0"],
                                     ["serve", "--human", "1", "--json", "--port", "0", "--out", "table"]])
def test_sigterm_stops_the_servers(tmp_path, command):
    (tmp_path / "runs").mkdir()
    proc, stderr = started(command, tmp_path)
    assert proc.stdout.readline().startswith("{"), stderr.read_text()  # serving: its address printed
    err = terminated(proc, stderr)
    assert proc.returncode == 143 and "stopped by SIGTERM" in err and "Traceback" not in err, err
