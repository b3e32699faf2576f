"""Belief probes: one private probe per LLM seat and quest, in the trace only, built from what the seat has seen;
bad answers and failed calls never stop a game; the switch in `avalon play` and in experiment configs."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from avalon_agents import narrate
from avalon_agents.core import make_rules
from avalon_agents.core.types import Role, Team
from avalon_agents.experiments import load_experiments, run_experiment
from avalon_agents.experiments.plan import PROBES_PER_SEAT, calls_per_game
from avalon_agents.host.play import AgentSetup, play_one, trace_of
from avalon_agents.host.probe import probe_schema, read_answer
from avalon_agents.llm import ModelSettings, ScriptedChatModel
from avalon_agents.records import read_trace
from avalon_agents.records.run_dir import EVENTS, META, RESULT
from tests.helpers import avalon, scripted_setup

ROLE_LINE = re.compile(r"your role is ([A-Za-z ]+)\.")
PROBE_QUESTION = "Who is Merlin?"
SECTION = "What only you know (private facts"
RECORD_KEYS = {"type", "seat", "quest", "merlin_guess", "p_evil", "valid", "raw"}


def models(model: ScriptedChatModel | None = None, retries: int = 2) -> AgentSetup:
    return scripted_setup(model, settings=ModelSettings(spec="scripted", retries=retries))


def play(kinds, seed=0, out=None, probes=True, rules=None, **kw):
    rules = rules or make_rules("official", len(kinds))
    return asyncio.run(play_one(rules, kinds, seed, out, models(**kw), probes=probes))


def records(host, type_: str) -> list[dict]:
    return [r for r in trace_of(host) if r.type == type_]


def test_one_probe_per_llm_seat_and_quest_in_the_trace_only(tmp_path):
    out = tmp_path / "game"
    host = play(["llm", "rulebot"] * 3, out=out)
    quests = len(host.engine.result().quests)
    probes = records(host, "probe")
    assert sorted((r.seat, r.quest) for r in probes) == [(s, q) for s in (1, 3, 5) for q in range(1, quests + 1)]
    for r in probes:
        assert set(r.model_dump()) == RECORD_KEYS and r.valid is True
        assert r.merlin_guess in range(1, 7)
        assert set(r.p_evil) == {str(s) for s in range(1, 7) if s != r.seat}
        assert all(0 <= p <= 1 for p in r.p_evil.values())
        assert json.loads(r.raw)["merlin"] == r.merlin_guess
    calls = [r for r in records(host, "llm_call") if r.stage == "probe"]
    assert len(calls) == len(probes) and {c.seat for c in calls} == {1, 3, 5}
    assert all(c.prompt_id == "probes/belief" and c.constrained for c in calls)
    events = (out / EVENTS).read_text()
    assert '"probe"' not in events and PROBE_QUESTION not in events
    assert all(json.loads(line)["type"] != "probe" for line in events.splitlines())
    assert json.loads((out / META).read_text())["probes"] is True
    # no agent ever saw a probe: the agents' own prompts never contain the probe's question
    agent_calls = [r for r in records(host, "llm_call") if r.stage != "probe"]
    assert agent_calls and not any(PROBE_QUESTION in m.content for c in agent_calls for m in c.messages)


@pytest.mark.slow
def test_probe_prompts_hold_only_what_the_seat_may_know():
    """Like tests/agents/test_isolation.py, for the probe prompts: own role card and night information only,
    no final role reveal (even when the last quest ends the game), nothing after the quest being asked about."""
    checked = 0
    ended_on_a_quest = 0
    for seed in range(12):
        preset = ("official", "paper")[seed % 2]
        players = 5 + seed % 6
        rules = make_rules(preset, players)
        host = play([("llm", "cognitive")[seed // 2 % 2]] * players, seed=seed, rules=rules)
        roles = host.engine.roles
        events = host.engine.events
        night = {e.seat: narrate.announce(e, rules) for e in events if e.type == "night_info"}
        quest_end = {e.quest: e.seq for e in events if e.type == "quest_completed"}
        if events[-1].type == "game_ended" and events[-2].type == "quest_completed":
            ended_on_a_quest += 1
        calls = [r for r in host.tracer.records if r.type == "llm_call" and r.stage == "probe"]
        assert len(calls) == players * len(quest_end)
        for call in calls:
            seat, quest = call.seat, call.quest
            text = "\n".join(m.content for m in call.messages)
            assert ROLE_LINE.findall(text) == [roles[seat].value]
            assert "The roles were" not in text
            for line in text.splitlines():
                if line.startswith("Night:"):
                    assert line == night.get(seat), (seed, seat, line)
            for other, other_night in night.items():
                if other != seat and other_night != night.get(seat):
                    assert other_night not in text
            cards = sum(1 for e in events if e.type == "quest_card" and e.seat == seat and e.seq < quest_end[quest])
            assert text.count("You played a ") <= cards
            history, private = call.messages[1].content.split("\n\nQuest ", 1)[0].split("\n\n" + SECTION)
            assert history.splitlines()[-1].startswith(f"Quest {quest} ")  # the quest's result, nothing after
            assert night[seat] in private.splitlines()  # what only it knows, in its own section
            checked += 1
    assert checked > 100 and ended_on_a_quest >= 1


def test_probes_are_off_by_default():
    kinds = ["llm"] * 6
    host = asyncio.run(play_one(make_rules(), kinds, 0, setups=models()))
    assert not records(host, "probe")
    assert not any(r.stage == "probe" for r in records(host, "llm_call"))
    assert host.probe is None and host.meta["probes"] is False


def test_rule_bot_games_have_nothing_to_probe():
    host = asyncio.run(play_one(make_rules(), ["rulebot"] * 6, 0, probes=True))
    assert host.probe is None and not records(host, "probe")


@pytest.mark.parametrize("answer", ["garbage", '{"merlin": 9, "evil": {}}', None])
@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_bad_answer_or_a_failed_call_is_invalid_and_the_game_ends(answer):
    scripted = ScriptedChatModel()

    def respond(messages, kwargs):
        if PROBE_QUESTION in str(messages[-1].content):
            return answer  # None: the call fails (UnexpectedCall, not retried)
        return scripted._default(messages, kwargs)

    host = play(["llm"] * 6, model=ScriptedChatModel(respond=respond), retries=0)
    assert host.engine.is_over
    probes = records(host, "probe")
    assert probes and len(probes) == 6 * len(host.engine.result().quests)
    for r in probes:
        assert r.valid is False and r.merlin_guess is None and r.p_evil == {}
        assert r.raw == answer
    outcomes = {c.outcome for c in records(host, "llm_call") if c.stage == "probe"}
    assert outcomes == ({"failed"} if answer is None else {"ok"})


def test_reading_answers():
    rules = make_rules("official", 6)
    good = {"merlin": 2, "evil": {"1": 0.5, "3": 1.7, "Player 4": -0.2, "5": "0.25", "6": 0}}
    assert read_answer(json.dumps(good), rules, 2) == (2, {"1": 0.5, "3": 1.0, "4": 0.0, "5": 0.25, "6": 0.0}, True)
    assert read_answer("Sure! " + json.dumps(good) + " That is all.", rules, 2)[2]  # the JSON block inside
    with_self = {**good, "evil": {**good["evil"], "2": 0.1}}
    assert read_answer(json.dumps(with_self), rules, 2)[1] == read_answer(json.dumps(good), rules, 2)[1]
    invalid = (None, {}, False)
    for bad in ({**good, "merlin": 7}, {**good, "merlin": True}, {**good, "merlin": 2.5}, {"merlin": 2},
                {**good, "evil": {"1": 0.5}}, {**good, "evil": {**good["evil"], "6": "high"}},
                {**good, "evil": {**good["evil"], "6": float("nan")}},
                {**good, "evil": {**good["evil"], "the rest": 0.1}}, {**good, "evil": [0.1, 0.2]}):
        assert read_answer(json.dumps(bad), rules, 2) == invalid, bad
    assert read_answer("", rules, 2) == invalid and read_answer(None, rules, 2) == invalid
    schema = probe_schema(rules, 2)
    assert schema["properties"]["merlin"]["enum"] == [1, 2, 3, 4, 5, 6]
    assert schema["properties"]["evil"]["required"] == ["1", "3", "4", "5", "6"]


def test_avalon_play_probes_flag(tmp_path):
    out = avalon("play", "--probes", "--model", "scripted", "--seats", "llm", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    trace = read_trace(tmp_path / "game-00001")
    probes = [r for r in trace if r.type == "probe"]
    assert probes and all(r.valid for r in probes) and {r.seat for r in probes} == set(range(1, 7))
    assert "--probes" in avalon("play", "--help").stdout


EXPERIMENT = """\
name: probed
model: scripted
agents:
  ours: {kind: llm}
  bots: {kind: rulebot}
sides: {good: ours, evil: bots}
"""


def test_experiment_config_switch(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text(EXPERIMENT)
    assert load_experiments(path)["main"].probes is False
    plain = load_experiments(path)["main"]
    path.write_text(EXPERIMENT + "probes: true\n")
    probed = load_experiments(path)["main"]
    assert probed.probes is True
    # `avalon run --check` counts one probe per LLM seat (the 4 good seats) and quest
    assert calls_per_game(probed) - calls_per_game(plain) == pytest.approx(4 * PROBES_PER_SEAT)
    path.write_text(EXPERIMENT + "probes: maybe\n")
    with pytest.raises(ValueError, match=r"x\.yaml:7: probes: .*boolean"):
        load_experiments(path)


def test_experiment_runner_passes_the_switch(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text(EXPERIMENT + "probes: true\n")
    out = tmp_path / "run"
    asyncio.run(run_experiment(load_experiments(path), out))
    game = next(out.glob("main/series-1/game-*"))
    roles = json.loads((game / RESULT).read_text())["roles"]
    good = {int(s) for s, r in roles.items() if Role(r).side is Team.GOOD}
    probes = [r for r in read_trace(game) if r.type == "probe"]
    assert probes and {r.seat for r in probes} == good  # the rule bots (evil) are not probed
