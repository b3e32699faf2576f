"""`avalon serve` on the command line: the addresses it prints, the game it records, its one-line errors."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import re
import socket
import subprocess
import sys
import time
import urllib.request

import aiohttp
import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.core.rules import make_rules
from avalon_agents.host.play import AgentSetup
from avalon_agents.records.run_dir import RESULT, read_meta
from avalon_agents.table.serve import TableGame, serve_table
from avalon_agents.web.hosts import reachable
from tests.helpers import avalon

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
    (["--host", "192.0.2.7"], "host: cannot listen on 192.0.2.7:0 (cannot assign requested address)"),
])
def test_a_mistake_is_one_line_and_exit_2(tmp_path, args, message):
    result = CliRunner().invoke(cli, ["serve", "--out", str(tmp_path / "t"), "--port", "0", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("args", [
    ["--roles", "merlin,loyal_servant,loyal_servant,morgana,mordred"],
    ["--assassin", "mordred"],
    ["--roles", "merlin,loyal_servant,loyal_servant,morgana,wizard"],
    ["--players", "7", "--roles", "merlin,loyal_servant,loyal_servant,morgana,assassin"],
    ["--lady-of-the-lake"],
])
def test_bad_rules_are_refused_in_one_line_as_play_refuses_them(tmp_path, args):
    """--rules, --players, --roles, --assassin and --lady-of-the-lake are avalon play's options (cli.play's
    rules_options): the same mistake, the same line."""
    done = avalon("serve", "--out", str(tmp_path / "t"), "--port", "0", *args)
    played = avalon("play", *args)
    assert done.returncode == played.returncode == 2
    assert done.stderr == played.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "t").exists()


def test_a_table_deals_the_role_set_and_assassin_given(tmp_path):
    out = tmp_path / "t"
    roles = "merlin,percival,loyal_servant,loyal_servant,morgana,mordred,minion"
    done = avalon("serve", "--out", str(out), "--port", "0", "--rules", "paper", "--roles", roles,
                  "--assassin", "mordred", "--lady-of-the-lake", "--decision-timeout", "0.01", "--linger", "0",
                  "--no-lobby")
    assert done.returncode == 0, done.stderr
    rules = read_meta(out / "game-00001").rules
    assert rules["name"] == "paper" and rules["players"] == 7 and rules["assassin"] == "Mordred"
    assert sorted(rules["roles"]) == sorted(["Merlin", "Percival", "Loyal Servant", "Loyal Servant", "Morgana",
                                             "Mordred", "Minion of Mordred"])
    assert rules["lady_of_the_lake"] is not None


def test_a_used_folder_is_refused(tmp_path):
    used = tmp_path / "used"
    used.mkdir()
    (used / "x").write_text("x")
    result = CliRunner().invoke(cli, ["serve", "--out", str(used), "--port", "0"])
    assert result.exit_code == 2 and "out:" in result.output and "not empty" in result.output


def test_a_table_that_cannot_listen_leaves_its_folder_as_it_was(tmp_path):
    new, empty = tmp_path / "new" / "t", tmp_path / "empty"
    empty.mkdir()
    quick = ["--decision-timeout", "0.01", "--linger", "0", "--no-lobby"]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        for out in (new, empty):
            result = CliRunner().invoke(cli, ["serve", "--out", str(out), "--port", str(port), *quick])
            assert result.exit_code == 2, result.output
            [line] = result.output.strip().splitlines()
            assert line.endswith(f"port: cannot listen on 127.0.0.1:{port} (address already in use)"), line
    assert not (tmp_path / "new").exists() and list(empty.iterdir()) == []
    for out in (new, empty):  # the port free, the same folders take a table
        result = CliRunner().invoke(cli, ["serve", "--out", str(out), "--port", str(port), *quick])
        assert result.exit_code == 0, result.output
        assert (out / "game-00001" / RESULT).is_file() and (out / "run.log").is_file()


def test_a_wildcard_address_prints_addresses_people_can_open(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--out", str(tmp_path / "t"), "--port", "0", "--host", "0.0.0.0",
                                      "--decision-timeout", "0.01", "--linger", "0", "--no-lobby"])
    assert result.exit_code == 0, result.output
    assert "warning: the table listens on 0.0.0.0" in result.output
    link = re.search(r"^Player 1: http://([^:/]+):\d+/seat/1\?token=", result.output, re.M)
    assert link and link.group(1) == reachable("0.0.0.0") and link.group(1) != "0.0.0.0"
    assert re.search(rf"^Spectators: http://{re.escape(link.group(1))}:\d+/watch\?token=", result.output, re.M)


def test_reachable_keeps_a_named_address_and_replaces_a_wildcard():
    assert [reachable(h) for h in ("127.0.0.1", "::1", "localhost", "192.0.2.7")] == [
        "127.0.0.1", "::1", "localhost", "192.0.2.7"]
    for wildcard in ("0.0.0.0", "::"):
        try:
            unspecified = ipaddress.ip_address(reachable(wildcard)).is_unspecified
        except ValueError:  # a host name
            unspecified = False
        assert not unspecified, wildcard


def test_a_table_bound_to_every_interface_opens_at_its_printed_address_and_asks_the_token(tmp_path):
    """What --host 0.0.0.0 prints is reachable, and every address still needs its token."""
    async def main():
        rules = make_rules("official", 5)
        game = TableGame(rules=rules, kinds=("human",) + ("rulebot",) * 4, seed=0, setup=AgentSetup())
        opened: asyncio.Future = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve_table(game, tmp_path, host="0.0.0.0", port=0, linger=0,
                                               ready=lambda table, address: opened.set_result((table, address))))
        table, address = await opened
        got = {}
        async with aiohttp.ClientSession() as session:
            for name, path in [("seat page", table.seat_path(1)), ("no token", "/seat/1"),
                               ("state, spectator's token", f"/api/seat/1?token={table.watch_token}"),
                               ("watch, no token", "/api/watch")]:
                async with session.get(address.url(path)) as r:
                    got[name] = (r.status, r.content_type)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return address, got

    address, got = asyncio.run(main())
    assert address.host == reachable("0.0.0.0") != "0.0.0.0"
    assert got.pop("seat page") == (200, "text/html")
    assert set(got.values()) == {(403, "application/json")}


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
