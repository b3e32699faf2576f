"""`avalon serve` on the command line: the addresses it prints, the game it records, its one-line errors."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.records.run_dir import read_meta

ADDRESS = re.compile(r"^Player (\d+): (http://127\.0\.0\.1:(\d+)/seat/\1\?token=([A-Za-z0-9_-]{20,}))$")


@pytest.mark.slow  # a process of its own: seconds of imports
def test_serve_prints_each_seat_address_records_the_game_and_exits_0(tmp_path):
    out = tmp_path / "table"
    proc = subprocess.Popen([sys.executable, "-m", "avalon_agents.cli", "serve", "--human", "2,4", "--port", "0",
                             "--out", str(out), "--decision-timeout", "0.05", "--linger", "0.5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = [proc.stdout.readline().strip() for _ in range(3)]
    seats = [ADDRESS.match(line) for line in first[:2]]
    assert all(seats), first
    assert [m.group(1) for m in seats] == ["2", "4"] and seats[0].group(4) != seats[1].group(4)
    assert first[2].startswith("Spectators: http://127.0.0.1:") and "/watch?token=" in first[2]
    def state(seat: re.Match) -> dict:
        with urllib.request.urlopen(seat.group(2).replace("/seat/", "/api/seat/"), timeout=10) as r:
            return json.load(r)

    first_state = state(seats[0])  # the lobby: the game waits for Player 4's page
    assert first_state["seat"] == 2 and not first_state["started"] and first_state["joined"] == [2]
    assert first_state["people"] == [2, 4] and first_state["role"] is None
    time.sleep(0.5)
    assert state(seats[0])["lines"] == [] and proc.poll() is None
    state(seats[1])
    rest, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "game 1: " in rest and "wins (" in rest and f"replay: {out / 'replay' / 'index.html'}" in rest
    assert "people's seats 2, 4:" in rest and "answers by the fallback (no answer in 0.05 s)" in rest
    assert read_meta(out / "game-00001").seats[2] == "human"


@pytest.mark.parametrize("args, message", [
    (["--human", "7"], "human: seats from 1 to 6"),
    (["--human", "one"], "human: seats as a comma list"),
    (["--seats", "rulebot,llm"], "seats: 2 kinds given for 6 players"),
    (["--seats", "wizard"], "seats: unknown seat kind 'wizard'"),
    (["--seats", "human,rulebot,rulebot,rulebot,rulebot,rulebot", "--human", "2"], "seats: seat 1 is 'human'"),
    (["--players", "11"], "players"),
    (["--rules", "house"], "rules"),
])
def test_a_mistake_is_one_line_and_exit_2(tmp_path, args, message):
    result = CliRunner().invoke(cli, ["serve", "--out", str(tmp_path / "t"), "--port", "0", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "t").exists()


def test_a_used_folder_or_port_is_refused(tmp_path):
    used = tmp_path / "used"
    used.mkdir()
    (used / "x").write_text("x")
    result = CliRunner().invoke(cli, ["serve", "--out", str(used), "--port", "0"])
    assert result.exit_code == 2 and "out:" in result.output and "not empty" in result.output
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(cli, ["serve", "--out", str(tmp_path / "t"), "--port", str(port)])
    assert result.exit_code == 2 and f"port: cannot listen on 127.0.0.1:{port}" in result.output


def test_another_address_than_loopback_is_warned_about(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--out", str(tmp_path / "t"), "--port", "0", "--host", "0.0.0.0",
                                      "--decision-timeout", "0.01", "--linger", "0", "--no-lobby"])
    assert result.exit_code == 0, result.output
    assert "warning: the table listens on 0.0.0.0" in result.output
    assert re.search(r"^Player 1: http://0\.0\.0\.0:\d+/seat/1\?token=", result.output, re.M)


@pytest.mark.slow  # five bot processes
def test_programs_take_the_other_seats(tmp_path):
    out = tmp_path / "t"
    result = CliRunner().invoke(cli, ["serve", "--out", str(out), "--port", "0", "--human", "3", "--seats", "external",
                                      "--seat-command", f"{sys.executable} experiments/bots/random_bot.py",
                                      "--decision-timeout", "0.01", "--linger", "0", "--no-lobby"])
    assert result.exit_code == 0, result.output
    seats = read_meta(out / "game-00001").seats
    assert seats[3] == "human" and [seats[s] for s in (1, 2, 4, 5, 6)] == ["external"] * 5


def test_json_gives_the_addresses_then_the_end(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--out", str(tmp_path / "t"), "--port", "0", "--human", "1,2",
                                      "--decision-timeout", "0.01", "--linger", "0", "--no-lobby", "--json"])
    assert result.exit_code == 0, result.output
    opened, end = [json.loads(line) for line in result.stdout.splitlines()]
    assert set(opened["seats"]) == {"1", "2"} and "/watch?token=" in opened["watch"]
    assert [g["winner"] in ("good", "evil") for g in end["games"]] == [True] and set(end["fallbacks"]) == {"1", "2"}
    assert sum(end["fallbacks"].values()) > 0 and end["replay"].endswith("index.html")
