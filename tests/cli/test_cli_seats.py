"""Programs as seats on the command line: `avalon play --seats external --seat-command` (or `--seat-url`, a server),
an `external` agent in an `avalon run` config, and `avalon seat-test` (its report and exit codes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import avalon

BOT = Path(__file__).resolve().parents[2] / "experiments" / "bots" / "random_bot.py"
HTTP_BOT = BOT.with_name("http_bot.py")
COMMAND = f"{sys.executable} {BOT}"


@pytest.fixture
def http_bot():
    """The example HTTP bot serving on a free loopback port: its URL (the first line it prints)."""
    server = subprocess.Popen([sys.executable, str(HTTP_BOT), "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        yield server.stdout.readline().strip()
    finally:
        server.kill()
        server.wait()
        server.stdout.close()


def test_play_seats_the_example_bot(tmp_path):
    done = avalon("play", "--seats", "external,rulebot,rulebot,external,rulebot,rulebot", "--seat-command", COMMAND,
                  "--games", "2", "--out", str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    for game in ("game-00001", "game-00002"):
        meta = json.loads((tmp_path / game / "meta.json").read_text())
        assert meta["seats"]["1"] == meta["seats"]["4"] == "external"
        assert (tmp_path / game / "result.json").exists()
        health = json.loads((tmp_path / game / "health.json").read_text())
        assert health["seat_faults"] == health["seat_fallbacks"] == 0


def test_play_seats_the_example_http_bot(tmp_path, http_bot):
    assert http_bot.startswith("http://127.0.0.1:")
    done = avalon("play", "--seats", "rulebot,external,rulebot,rulebot,rulebot,external", "--seat-url", http_bot,
                  "--seat-timeout", "10", "--out", str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "game-00001" / "meta.json").read_text())
    assert meta["seats"]["2"] == meta["seats"]["6"] == "external"
    health = json.loads((tmp_path / "game-00001" / "health.json").read_text())
    assert health["seat_faults"] == health["seat_fallbacks"] == 0 and (tmp_path / "game-00001" / "result.json").exists()


def test_play_refuses_a_program_seat_without_its_command():
    done = avalon("play", "--seats", "external")
    assert done.returncode == 2 and "seat-command" in done.stderr
    done = avalon("play", "--seat-command", COMMAND)
    assert done.returncode == 2 and "no seat is 'external'" in done.stderr


@pytest.mark.parametrize("args, error", [
    (["--seat-url", "http://127.0.0.1:8000/"], "seat-url: no seat is 'external'"),
    (["--seats", "external", "--seat-url", "http://127.0.0.1:8000/", "--seat-command", COMMAND],
     "seat-url: give --seat-command or --seat-url, not both"),
    (["--seats", "external", "--seat-url", "ftp://127.0.0.1/"], "seat-url: the seat's server as an http://"),
    (["--seats", "external", "--seat-url", "127.0.0.1:8000"], "seat-url: the seat's server as an http://"),
])
def test_play_refuses_a_wrong_seat_url_in_one_line(args, error):
    done = avalon("play", *args)
    assert done.returncode == 2 and error in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_run_plays_an_external_agent_from_a_config(tmp_path):
    config = tmp_path / "programs.yaml"
    config.write_text(f"""name: programs
rules: official
players: 6
agents:
  bot: {{kind: external, options: {{command: [{sys.executable}, {BOT}], timeout: 10}}}}
  rules: {{kind: rulebot}}
sides: {{good: bot, evil: rules}}
series: 1
games_per_series: 2
seed: 0
""")
    done = avalon("run", str(config), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    metas = [json.loads(p.read_text()) for p in (tmp_path / "out").rglob("meta.json")
             if p.parent.name.startswith("game-")]
    assert len(metas) == 2 and all("external" in m["seats"].values() for m in metas)


def test_seat_test_passes_the_example_bot():
    done = avalon("seat-test", "--games", "2", "--", sys.executable, str(BOT))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no protocol error in 2 games" in done.stdout


def test_seat_test_passes_the_example_http_bot(http_bot):
    done = avalon("seat-test", "--games", "2", "--url", http_bot)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no protocol error in 2 games" in done.stdout


def test_seat_test_reports_a_server_that_is_down(tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/"
    done = avalon("seat-test", "--games", "1", "--url", url)
    assert done.returncode == 1 and "crash:" in done.stdout and "fallback" in done.stdout


@pytest.mark.parametrize("args, error", [
    ([], "command or url: give the program after --"),
    (["--url", "http://127.0.0.1:8000/", "--", sys.executable, str(BOT)], "not both"),
    (["--url", "ftp://127.0.0.1/"], "url: the seat's server as an http://"),
])
def test_seat_test_takes_a_program_or_a_url_in_one_line(args, error):
    done = avalon("seat-test", *args)
    assert done.returncode == 2 and error in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_seat_test_reports_a_bad_program_and_exits_1(tmp_path):
    program = tmp_path / "bad.py"
    program.write_text("import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n"
                       "    if m['type'] == 'request':\n"
                       "        print('oops' if m['kind'] == 'vote' else json.dumps({'id': m['id'], 'answer': 'x'}),"
                       " flush=True)\n")
    done = avalon("seat-test", "--games", "1", "--timeout", "2", "--", sys.executable, str(program))
    assert done.returncode == 1
    assert "bad_json: not JSON: 'oops'" in done.stdout
    assert "illegal: no clear answer" in done.stdout
    assert "protocol errors" in done.stderr
    as_json = avalon("seat-test", "--json", "--games", "1", "--timeout", "2", "--", sys.executable, str(program))
    found = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and found["errors"] > 0 and found["games"] == 1
    assert {"bad_json", "illegal"} <= {f["problem"] for f in found["faults"]}
