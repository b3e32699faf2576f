"""Programs as seats on the command line: `avalon play --seats external --seat-command` (or `--seat-url`, a server),
an `external` agent in an `avalon run` config, and `avalon seat-test` (its report and exit codes)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from avalon_agents.records.run_dir import HEALTH, META, RESULT
from tests.helpers import AVALON, avalon

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
        meta = json.loads((tmp_path / game / META).read_text())
        assert meta["seats"]["1"] == meta["seats"]["4"] == "external"
        assert (tmp_path / game / RESULT).exists()
        health = json.loads((tmp_path / game / HEALTH).read_text())
        assert health["seat_faults"] == health["seat_fallbacks"] == 0


def test_play_seats_the_example_http_bot(tmp_path, http_bot):
    assert http_bot.startswith("http://127.0.0.1:")
    done = avalon("play", "--seats", "rulebot,external,rulebot,rulebot,rulebot,external", "--seat-url", http_bot,
                  "--seat-timeout", "10", "--out", str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "game-00001" / META).read_text())
    assert meta["seats"]["2"] == meta["seats"]["6"] == "external"
    health = json.loads((tmp_path / "game-00001" / HEALTH).read_text())
    assert health["seat_faults"] == health["seat_fallbacks"] == 0 and (tmp_path / "game-00001" / RESULT).exists()


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
    metas = [json.loads(p.read_text()) for p in (tmp_path / "out").rglob(META)
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


@pytest.mark.slow  # two processes of their own: seconds of imports
def test_two_seat_tests_at_once_against_one_http_seat_send_distinct_game_ids(http_bot):
    """Two `avalon seat-test --url` runs at once against one example HTTP bot (which keeps each seat's state by
    (game, seat) and drops it at the game's end): every game of both runs has its own id (the run's id, then
    memory-N), so neither run's seat is started again by the other: no protocol error and no fallback. A proxy in
    front of the bot notes the game id of every start."""
    starts: list[str] = []

    class Proxy(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            starts.extend(m["game"] for m in json.loads(body)["messages"] if m["type"] == "start")
            forward = urllib.request.Request(http_bot, data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(forward, timeout=10) as answer:
                reply = answer.read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{proxy.server_port}/"
        runs = [subprocess.Popen([AVALON, "seat-test", "--json", "--games", "3", "--url", url],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        done = [(run.communicate(timeout=120), run.returncode) for run in runs]
    finally:
        proxy.shutdown()
        proxy.server_close()
    for (out, err), code in done:
        assert code == 0, out + err
        assert json.loads(out) == {"games": 3, "errors": 0, "fallbacks": 0, "faults": []}
    assert len(starts) == len(set(starts)) == 6, starts
    by_run = {game.split("/")[0]: [] for game in starts}
    for game in starts:
        by_run[game.split("/")[0]].append(game.split("/")[1])
    assert sorted(sorted(games) for games in by_run.values()) == [["memory-1", "memory-2", "memory-3"]] * 2


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


def test_seat_test_reports_the_exit_code_of_a_program_that_exits(tmp_path):
    """A program that ends with exit code 3 (at once, or after reading its start) is reported with its own code,
    never asyncio's 255 for a child reaped behind its watcher's back (Popen's kill polls the child first)."""
    for name, text in (("at_once.py", "import sys\nsys.exit(3)\n"),
                       ("after_start.py", "import sys\nsys.stdin.readline()\nsys.exit(3)\n")):
        program = tmp_path / name
        program.write_text(text)
        done = avalon("seat-test", "--games", "3", "--timeout", "5", "--", sys.executable, str(program))
        lines = done.stdout.splitlines()
        assert done.returncode == 1 and len([line for line in lines if "fallback: " not in line]) == 3, lines
        assert all(line.endswith(": crash: the program ended (exit code 3)") for line in lines), lines
        assert "Unknown child process" not in done.stderr and "255" not in done.stdout + done.stderr


START_LOGGER = """import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m['type'] == 'start':
        with open({log!r}, 'a') as f:
            f.write(line)
    if m['type'] == 'request':
        legal = m['legal']
        value = (legal['players'][:legal['team_size']] if 'team_size' in legal else legal['options'][0]
                 if 'options' in legal else legal['players'][0] if 'players' in legal else 'hello')
        print(json.dumps({{'id': m['id'], 'action': {{m['key']: value}}}}), flush=True)
"""


def test_seat_test_plays_the_rules_roles_and_assassin_given(tmp_path):
    """--rules, --players, --roles, --assassin and --lady-of-the-lake mean what they mean for avalon play: the
    program's games are dealt by them, and its start's setup says so."""
    log = tmp_path / "starts.jsonl"
    program = tmp_path / "logger.py"
    program.write_text(START_LOGGER.format(log=str(log)))
    roles = "merlin,percival,loyal_servant,loyal_servant,morgana,mordred,minion"
    done = avalon("seat-test", "--games", "2", "--rules", "paper", "--roles", roles, "--assassin", "mordred",
                  "--lady-of-the-lake", "--", sys.executable, str(program))
    assert done.returncode == 0, done.stdout + done.stderr
    starts = [json.loads(line) for line in log.read_text().splitlines()]
    assert [s["seat"] for s in starts] == [1, 2]  # game i seats the program at seat i
    for start in starts:
        setup = start["setup"]
        assert start["protocol"] == 1 and start["players"] == 7 and setup["name"] == "paper"
        assert setup["roles"] == ["Merlin", "Percival", "Loyal Servant", "Loyal Servant", "Morgana", "Mordred",
                                  "Minion of Mordred"]
        assert setup["assassin"] == "Mordred" and setup["lady_of_the_lake"]["after_quests"] == [2, 3, 4]
        assert setup["proposal_order"] == "discuss_then_propose"
    assert len({s["game"] for s in starts}) == 2  # each game its own id


@pytest.mark.parametrize("args, error", [
    (["--rules", "nope"], "rules: unknown preset 'nope'"),
    (["--players", "7", "--roles", "merlin,loyal_servant,loyal_servant,morgana,assassin"],
     "players: 7 players, but the role set has 5 roles"),
    (["--roles", "merlin,loyal_servant,loyal_servant,morgana,mordred"], "assassin: no Assassin among the roles"),
    (["--roles", "merlin,loyal_servant,loyal_servant,morgana,wizard"], "roles: "),
    (["--assassin", "mordred"], "assassin: give the role set too"),
    (["--lady-of-the-lake"], "lady_of_the_lake: the Lady of the Lake takes 7 or more players"),
])
def test_seat_test_refuses_bad_rules_in_one_line_as_play_does(args, error):
    done = avalon("seat-test", *args, "--", sys.executable, str(BOT))
    played = avalon("play", *args)
    assert done.returncode == played.returncode == 2
    assert error in done.stderr and done.stderr == played.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_one_http_seat_plays_concurrent_games_of_a_run(tmp_path, http_bot):
    """One `url:` agent seated in two games at once (concurrency: {games: 2}), four seats a game: the example
    HTTP bot keeps each seat's state by (game, seat) and ends it at the game's end, so a message naming the wrong
    game would break it. Six games, no protocol error and no fallback, and the games overlapped in time."""
    config = tmp_path / "http.yaml"
    config.write_text(f"""name: http_seats
rules: official
players: 6
agents:
  bot: {{kind: external, options: {{url: "{http_bot}", timeout: 10}}}}
  rules: {{kind: rulebot}}
sides: {{good: bot, evil: rules}}
series: 2
games_per_series: 3
seed: 0
concurrency: {{games: 2}}
""")
    out = tmp_path / "out"
    done = avalon("run", str(config), "--out", str(out))
    assert done.returncode == 0, done.stderr
    games = sorted(p.parent for p in out.rglob(RESULT) if p.parent.name.startswith("game-"))
    assert len(games) == 6
    for game in games:
        health = json.loads((game / HEALTH).read_text())
        assert health["seat_faults"] == health["seat_fallbacks"] == 0, game
    spans = [((g / META).stat().st_mtime, (g / RESULT).stat().st_mtime) for g in games]
    assert any(a[0] < b[1] and b[0] < a[1] for i, a in enumerate(spans) for b in spans[i + 1:])  # at once
