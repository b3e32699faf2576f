"""The `avalon` command: in this process through its entry point, and as the installed console script in a
process of its own where the process boundary is the subject (exit codes, Ctrl-C)."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from avalon_agents.records.run_dir import EVENTS, META, RESULT
from tests.helpers import AVALON, avalon, avalon_process

run = avalon


def test_one_game_prints_a_transcript():
    out = run("play", "--seed", "3")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for piece in ("Quest 1.1:", "leads; team of 2", "proposes", "vote ", "quest 1 ", "wins:", "Roles: Player 1"):
        assert piece in text
    assert "Merlin" in text.splitlines()[-1] and "Assassin" in text


def test_many_games_json_summary(tmp_path):
    out = run("play", "--games", "30", "--json", "--rules", "paper", "--players", "7", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["games"] == 30 and summary["good_wins"] + summary["evil_wins"] == 30
    assert sum(summary["reasons"].values()) == 30 and summary["rules"] == "paper"
    assert len(list(tmp_path.glob("game-*/result.json"))) == 30


def test_mixed_seats_and_text_summary():
    out = run("play", "--games", "5", "--seats", "rulebot,random,rulebot,random,rulebot")
    assert out.returncode == 2  # 5 kinds for 6 players is a mistake
    assert out.stderr.startswith("error: seats:")
    out = run("play", "--games", "5", "--players", "5", "--seats", "rulebot,random,rulebot,random,rulebot")
    assert out.returncode == 0, out.stderr
    assert "5 games, official rules, 5 players" in out.stdout and "good wins" in out.stdout


@pytest.mark.parametrize(
    "args,field",
    [
        (["play", "--players", "4"], "players"),
        (["play", "--players", "11"], "players"),
        (["play", "--rules", "house"], "rules"),
        (["play", "--seats", "wizard"], "seats"),
        (["play", "--games", "0"], "games"),
        (["play", "--players", "six"], "--players"),
        (["play", "--bogus"], "--bogus"),
        (["bench", "engine", "--games", "0"], "games"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, field):
    out = run(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and field in lines[0]
    assert "Traceback" not in out.stderr


@pytest.mark.slow  # seconds: the fast suite stays under its 2 minutes
def test_the_installed_script_exits_0_on_success_and_2_on_bad_input(tmp_path):
    out = avalon_process("play", "--games", "2", "--json", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["games"] == 2 and len(list(tmp_path.glob("game-*/result.json"))) == 2
    out = avalon_process("play", "--players", "11")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and out.stderr.startswith("error:")
    assert "'--players': 11 is not in the range 5<=x<=10" in out.stderr
    assert out.stdout == "" and "Traceback" not in out.stderr


def test_help_explains():
    out = run("play", "--help")
    assert out.returncode == 0 and "--seats" in out.stdout and "Examples" in out.stdout


def test_the_top_help_names_every_command():
    from avalon_agents.cli import cli

    top = CliRunner().invoke(cli, ["--help"]).output.split("Exit codes")[0]
    missing = [name for name in cli.commands if f"avalon {name} " not in top and f"avalon {name}:" not in top]
    assert not missing, f"avalon --help's summary leaves out {missing}"


def test_bench_engine_prints_games_per_second():
    out = run("bench", "engine", "--games", "20")
    assert out.returncode == 0, out.stderr
    assert "games/s" in out.stdout and "engine + bots" in out.stdout


@pytest.mark.slow  # seconds: the fast suite stays under its 2 minutes
def test_interrupt_keeps_finished_games_and_prints_no_traceback(tmp_path):
    import signal
    import time

    out = tmp_path / "games"
    # Ctrl-C as a terminal sends it to a command in the foreground: a shell starts a background job (`.ci/run &`,
    # `nohup ... &`) with SIGINT ignored, which its processes inherit, and Python then never raises
    # KeyboardInterrupt; the command would play on through its 100,000 games
    with open(tmp_path / "stderr.txt", "w") as stderr:
        proc = subprocess.Popen([AVALON, "play", "--games", "100000", "--out", str(out)],
                                stdout=subprocess.DEVNULL, stderr=stderr,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # a cold start on a loaded machine (a fresh venv, CI's other jobs) once took 50 s before the first game
    deadline = time.time() + 180
    while len(list(out.glob("game-*/result.json"))) < 3 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert len(list(out.glob("game-*/result.json"))) >= 3, "the games never started: nothing to interrupt"
    proc.send_signal(signal.SIGINT)
    at_signal = len(list(out.glob("game-*/result.json")))
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"still running 60 s after Ctrl-C: {at_signal} games when it was sent, "
                    f"{len(list(out.glob('game-*/result.json')))} when killed")
    err = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    finished = list(out.glob("game-*/result.json"))
    assert len(finished) >= 3
    for result in finished:  # every finished game is whole
        assert json.loads(result.read_text())["winner"] in ("good", "evil")


def test_run_files_are_readable_by_colleagues(tmp_path):
    from click.testing import CliRunner

    from avalon_agents.cli import cli

    assert CliRunner().invoke(cli, ["play", "--out", str(tmp_path), "--json"]).exit_code == 0
    for name in (META, RESULT, EVENTS):
        assert (tmp_path / "game-00001" / name).stat().st_mode & 0o777 == 0o644, name


def test_a_speech_cannot_drive_the_terminal_that_shows_the_transcript():
    """A model or a person may write an escape sequence, a right-to-left override or a line separator: the
    transcript shows them as escapes, and a new line stays under its speaker."""
    from avalon_agents.core.events import SpeechGiven
    from avalon_agents.records.transcript import transcript

    said = "hi \x1b[31mred\x1b[0m \u202eexe\u2028two\nnext"
    (line,) = transcript([SpeechGiven(seq=1, quest=1, attempt=1, seat=3, text=said)])
    assert "\x1b" not in line and "\u202e" not in line and "\u2028" not in line
    assert line == "  Player 3: hi \\u001b[31mred\\u001b[0m \\u202eexe\\u2028two\n    next"
