"""Programs as seats (agents.external, the seat protocol of docs/seats.md): the example bot plays; a crashing,
hanging, garbling or illegally answering program costs only recorded fallbacks, the game finishes and no process
is left behind; a program is told exactly what its seat may know."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from avalon_agents import narrate
from avalon_agents.agents import protocol
from avalon_agents.agents.external import ExternalAgent
from avalon_agents.agents.registry import check_options
from avalon_agents.core import make_rules
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.records.trace import SeatFault
from tests.helpers import seat_faults

BOT = Path(__file__).resolve().parents[2] / "experiments" / "bots" / "random_bot.py"
SEAT = 2

BAD = {
    # reads its start message, then dies
    "crash": "import sys\nsys.stdin.readline()\nsys.exit(3)\n",
    # reads everything, answers nothing
    "hang": "import sys\nfor line in sys.stdin:\n    pass\n",
    # answers every request with a line that is no JSON
    "bad_json": ("import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n"
                 "    if m['type'] == 'request':\n        print('{not json', flush=True)\n"),
    # answers every request with words no decision can be read from (a speech takes any words)
    "illegal": ("import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n"
                "    if m['type'] == 'request':\n"
                "        print(json.dumps({'id': m['id'], 'answer': 'banana'}), flush=True)\n"),
    # answers an id never asked first, then the right one
    "unknown_id": ("import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n"
                   "    if m['type'] == 'request':\n"
                   "        print(json.dumps({'id': 'nope', 'answer': 'hi'}), flush=True)\n"
                   "        a = {'team': m['legal'].get('players', [])[:m['legal'].get('team_size', 0)],\n"
                   "             'vote': 'approve', 'card': 'success',\n"
                   "             'merlin': (m['legal'].get('players') or [0])[0],\n"
                   "             'text': 'hello'}\n"
                   "        key = {'propose': 'team', 'vote': 'vote', 'quest': 'card', 'assassinate': 'merlin'}"
                   ".get(m['kind'], 'text')\n"
                   "        print(json.dumps({'id': m['id'], 'action': {key: a[key]}}), flush=True)\n"),
}


def play(command: list[str], seed: int = 0, timeout: float = 30.0, seat: int = SEAT, players: int = 6):
    rules = make_rules("official", players)
    kinds = ["external" if s == seat else "rulebot" for s in rules.seats]
    setups = [AgentSetup(options={"command": command, "timeout": timeout}) if s == seat else AgentSetup()
              for s in rules.seats]
    return asyncio.run(play_one(rules, kinds, seed, setups=setups))


def faults(host) -> list[SeatFault]:
    return [r for r in host.tracer.records if isinstance(r, SeatFault)]


def assert_no_process_left(agent: ExternalAgent) -> None:
    proc = agent.transport.proc
    assert proc is not None and proc.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.kill(proc.pid, 0)  # reaped, gone


def test_the_example_bot_plays_a_game_without_a_fault():
    host = play([sys.executable, str(BOT)])
    assert host.engine.is_over
    assert faults(host) == []
    assert host.meta["seats"][SEAT] == "external"
    assert_no_process_left(host.agents[SEAT])


@pytest.mark.slow
def test_the_example_bot_plays_fifty_games():
    for seed in range(50):
        seat = seed % 6 + 1
        host = play([sys.executable, str(BOT)], seed=seed, seat=seat)
        assert host.engine.is_over and faults(host) == [], seed
        assert_no_process_left(host.agents[seat])


@pytest.mark.parametrize("name, problem", [("crash", "crash"), ("hang", "timeout"), ("bad_json", "bad_json"),
                                           ("illegal", "illegal")])
def test_a_broken_program_costs_only_recorded_fallbacks(tmp_path, name, problem):
    program = tmp_path / f"{name}.py"
    program.write_text(BAD[name])
    # a short timeout only where it is the fault under test: any other program has the default's time to answer,
    # so a slow start under load (a Python process) is not taken for a hang
    host = play([sys.executable, str(program)], **({"timeout": 0.5} if name == "hang" else {}))
    found = seat_faults(host, SEAT, problem)
    agent = host.agents[SEAT]
    if name in ("crash", "hang"):  # down at once: every request after it is its fallback, no waiting again
        assert agent.down is not None and len([f for f in found if f.problem == problem]) == 1
    if name == "crash":  # its own exit code, not asyncio's 255 for a child reaped behind its watcher
        assert [f.detail for f in found if f.problem == "crash"] == ["the program ended (exit code 3)"]
    assert_no_process_left(agent)


def test_an_answer_to_an_unknown_id_is_recorded_and_the_right_one_taken(tmp_path):
    program = tmp_path / "unknown.py"
    program.write_text(BAD["unknown_id"])
    host = play([sys.executable, str(program)])
    found = faults(host)
    assert found and {f.problem for f in found} == {"unknown_id"}  # no fallback: each right answer was taken


def test_a_missing_program_is_a_crash_and_the_game_finishes():
    host = play(["/nonexistent/program"])
    assert host.engine.is_over
    assert faults(host)[0].problem == "crash" and "cannot start" in faults(host)[0].detail


def test_the_process_is_killed_when_the_game_stops_midway(tmp_path):
    """A game that fails mid-way (here: a seat's agent raises) still ends the program's process."""
    from avalon_agents.agents.rulebot import RuleBot
    from avalon_agents.host.host import GameHost

    class Broken(RuleBot):
        async def act(self, request, instruction):
            raise RuntimeError("boom")

    rules = make_rules("official", 6)
    program = ExternalAgent(seat=1, command=[sys.executable, str(BOT)])
    agents = {1: program, **{s: Broken(seat=s, seed=s) for s in rules.seats if s != 1}}
    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(GameHost(rules=rules, agents=agents, seed=0).run())
    assert_no_process_left(program)


def test_a_program_is_told_exactly_what_its_seat_may_know(tmp_path):
    """Every message a program gets, recorded by a bot that copies them to a file: its start (its own role, the
    system prompt an LLM seat gets), then every event visible to its seat, in order, with the narration an LLM
    seat in its place is given (narrate.announce, which vanilla LLM seats read), and nothing else."""
    log = tmp_path / "seen.jsonl"
    program = tmp_path / "recorder.py"
    # the recorder answers through the example bot's logic: the bot runs with its input teed into the log
    program.write_text(
        "import json, random, subprocess, sys\n"
        f"log = open({str(log)!r}, 'w')\n"
        f"bot = subprocess.Popen([sys.executable, {str(BOT)!r}], stdin=subprocess.PIPE, stdout=sys.stdout, text=True)\n"
        "for line in sys.stdin:\n"
        "    log.write(line); log.flush()\n"
        "    bot.stdin.write(line); bot.stdin.flush()\n")
    for seed, seat in ((0, 1), (1, 4), (2, 6)):
        host = play([sys.executable, str(program)], seed=seed, seat=seat)
        assert faults(host) == []
        rules, roles = host.rules, host.engine.roles
        got = [json.loads(line) for line in log.read_text().splitlines()]
        start, rest = got[0], got[1:]
        game = host.agents[seat].game
        assert start == {"type": "start", "protocol": 1, "game": game, "seat": seat, "players": 6,
                         "role": roles[seat].value, "setup": protocol.setup(rules),
                         "system": narrate.system_prompt(rules, seat, roles[seat])}
        assert all(m["game"] == game and m["seat"] == seat for m in rest)  # every message names its game and seat
        visible = [e for e in host.engine.events if (e.visible_to == "all" or seat in e.visible_to)
                   and e.type not in ("game_started", "role_assigned")]
        events = [m for m in rest if m["type"] == "event"]
        assert [m["event"]["seq"] for m in events] == [e.seq for e in visible]
        assert [m["text"] for m in events] == [narrate.announce(e, rules) or "" for e in visible]
        assert all(m["event"].get("seat", seat) == seat for m in events
                   if m["event"]["type"] in ("night_info", "quest_card"))
        assert [m["type"] for m in rest if m["type"] not in ("event", "request")] == ["end"]


SHOUTING = """import json, sys
team, spoke = None, False
for line in sys.stdin:
    m = json.loads(line)
    if m['type'] == 'event' and m['event']['type'] == 'team_proposed':
        team = m['event']['team']
    if m['type'] != 'request':
        continue
    legal, kind = m['legal'], m['kind']
    if kind in ('vote', 'quest') and m.get('team') != team:  # the team as data: the one just named
        value = 'banana'
    elif kind == 'vote':
        value = 'APPROVE'
    elif kind == 'quest':
        value = ' Fail ' if 'fail' in legal['options'] else 'SUCCESS'
    elif 'team_size' in legal:
        value = legal['players'][:legal['team_size']]
    elif 'players' in legal:
        value = legal['players'][0]
    else:  # the first speech one character too long, then as long as the cap allows
        value = 'x' * (legal['max_chars'] + (0 if spoke else 1))
        spoke = True
    print(json.dumps({'id': m['id'], 'action': {m['key']: value}}), flush=True)
"""


def test_a_program_reads_the_team_as_data_answers_in_any_case_and_speaks_within_the_cap(tmp_path):
    """A program that checks each vote's and quest card's `team` against the team just proposed, answers in capitals
    (`APPROVE`, ` Fail `) and makes its first speech one character over the cap: the only fault is that speech,
    re-asked naming the cap, and its next speech, at the cap, is taken as said; every vote and card is as it
    answered."""
    from avalon_agents.decisions.kinds import MAX_SPEECH

    program = tmp_path / "shouting.py"
    program.write_text(SHOUTING)
    for seed, seat in ((0, 2), (4, 2)):  # a Loyal Servant on two quests, then the Assassin on two (it fails)
        host = play([sys.executable, str(program)], seed=seed, seat=seat)
        found = faults(host)
        assert [(f.problem, f.kind, f.detail) for f in found] == [
            ("illegal", "speak", f"a speech has at most {MAX_SPEECH} characters, not {MAX_SPEECH + 1}")]
        speeches = [e.text for e in host.engine.events if e.type == "speech" and e.seat == seat]
        assert speeches and all(text == "x" * MAX_SPEECH for text in speeches)
        votes = [e for e in host.engine.events if e.type == "votes_revealed"]
        assert votes and all(seat in e.approvals for e in votes)  # APPROVE approved
        cards = [e.success for e in host.engine.events if e.type == "quest_card" and e.seat == seat]
        assert cards and cards == [host.engine.roles[seat].side.value == "good"] * len(cards), (seed, seat)
        assert_no_process_left(host.agents[seat])


def test_a_program_is_told_its_games_id_again_only_when_its_run_is_resumed(tmp_path):
    """A game of a run (a directory with run.json) is named to its program by the run's id and its place in the
    run: played again when the run is resumed (run.json written again, the game unfinished) it has the same id,
    and the same game of another run (same config, same seed) another one."""
    from avalon_agents.host.job import GameJob, play_job
    from avalon_agents.records.run_dir import RESULT
    from avalon_agents.records.run_record import write_run_record

    log = tmp_path / "games.txt"
    program = tmp_path / "ids.py"
    program.write_text(  # the example bot answers; each start's game id is noted
        "import json, subprocess, sys\n"
        f"bot = subprocess.Popen([sys.executable, {str(BOT)!r}], stdin=subprocess.PIPE, stdout=sys.stdout, text=True)\n"
        "for line in sys.stdin:\n"
        "    if json.loads(line)['type'] == 'start':\n"
        f"        open({str(log)!r}, 'a').write(json.loads(line)['game'] + '\\n')\n"
        "    bot.stdin.write(line); bot.stdin.flush()\n")
    rules = make_rules("official", 6)
    kinds = tuple("external" if s == SEAT else "rulebot" for s in rules.seats)
    setups = tuple(AgentSetup(options={"command": [sys.executable, str(program)], "timeout": 5}) if s == SEAT
                   else AgentSetup() for s in rules.seats)
    job = GameJob(rules=rules, seed=0, kinds=kinds, setups=setups)
    first = write_run_record(tmp_path / "a", "run", "ids")
    assert faults(asyncio.run(play_job(job, tmp_path / "a" / "game-00001"))) == []
    (tmp_path / "a" / "game-00001" / RESULT).unlink()  # as if killed before its end: played again on resume
    assert write_run_record(tmp_path / "a", "run", "ids").id == first.id
    assert faults(asyncio.run(play_job(job, tmp_path / "a" / "game-00001"))) == []
    other = write_run_record(tmp_path / "b", "run", "ids")
    assert faults(asyncio.run(play_job(job, tmp_path / "b" / "game-00001"))) == []
    assert log.read_text().splitlines() == [f"{first.id}/game-00001"] * 2 + [f"{other.id}/game-00001"]
    assert other.id != first.id


def test_options_are_checked_where_a_config_is_read():
    check_options("external", {"command": ["python3", "bot.py"], "timeout": 2})
    for bad in ({}, {"command": "python3 bot.py"}, {"command": []}, {"command": ["x"], "timeout": 0},
                {"command": ["x"], "colour": 1}):
        with pytest.raises(ValueError):
            check_options("external", bad)
