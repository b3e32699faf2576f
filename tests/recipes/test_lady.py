"""The decision-kind recipe proven on a real rule, the Lady of the Lake (the official optional card, 7+ players),
at its last consumers: every seat kind plays it (rule bots, random seats, the vanilla, cognitive and baseline LLM
agents, a program over pipes, people at the web table), every game follows the official rule, and what the Lady
shows reaches its holder's prompts and no one else's."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import aiohttp
import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.core import make_rules
from avalon_agents.core.types import Team
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.llm.settings import ModelSettings
from avalon_agents.records.run_dir import EVENTS
from avalon_agents.records.trace import Extraction, LLMCall
from tests.table.helpers import Browser, open_table

BOT = Path(__file__).resolve().parents[2] / "experiments" / "bots" / "random_bot.py"
KINDS = ("rulebot", "random", "llm", "cognitive", "baseline", "external")
LLM = ("llm", "cognitive", "baseline")


def setup(kind: str) -> AgentSetup:
    if kind == "external":
        return AgentSetup(options={"command": [sys.executable, str(BOT)], "timeout": 5.0})
    return AgentSetup(settings=ModelSettings(spec="scripted")) if kind in LLM else AgentSetup()


def lady_game(kinds: list[str], seed: int):
    rules = make_rules("official", len(kinds), lady_of_the_lake=True)
    return asyncio.run(play_one(rules, kinds, seed, setups=[setup(k) for k in kinds]))


def follows_the_rule(events: list, players: int) -> list:
    """Assert the official rule on one game's events; the examinations."""
    (given,) = [e for e in events if e.type == "lady_given"]
    first_leader = next(e.leader for e in events if e.type == "leader_chosen")
    assert given.holder == (first_leader - 2) % players + 1  # the first leader's right
    roles = next(e.roles for e in events if e.type == "game_ended")
    holders, examined = [given.holder], [e for e in events if e.type == "lady_examined"]
    for e in examined:
        assert e.holder == holders[-1] and e.target not in holders and e.target != e.holder
        holders.append(e.target)
    results = [e for e in events if e.type == "lady_result"]
    assert [(r.holder, r.target) for r in results] == [(e.holder, e.target) for e in examined]
    assert all(r.visible_to == (r.holder,) and r.loyalty is roles[r.target].side for r in results)
    assert all(isinstance(r.loyalty, Team) for r in results)  # the side, never the role
    went_on = {e.quest - 1 for e in events if e.type == "leader_chosen" and e.attempt == 1}  # a next quest began
    assert [e.quest for e in examined] == [q for q in (2, 3, 4) if q in went_on]
    return examined


def test_rule_bots_and_random_seats_play_the_lady_by_the_official_rule():
    for players in (7, 8, 10):
        kinds = ["rulebot", "random"] * 5
        examined = [follows_the_rule(lady_game(kinds[:players], seed).engine.events, players)
                    for seed in range(8)]
        assert sum(map(len, examined)) >= 8


@pytest.mark.slow  # about twenty scripted 7-seat games with every seat kind: seconds
def test_every_seat_kind_plays_the_lady_and_only_its_holder_learns():
    answered: set[str] = set()
    for seed in range(24):
        kinds = [KINDS[(seat + seed) % len(KINDS)] for seat in range(6)] + ["rulebot"]
        host = lady_game(kinds, seed)
        examined = follows_the_rule(host.engine.events, 7)
        answered |= {kinds[e.holder - 1] for e in examined}
        records = host.tracer.records
        lady_reads = [r for r in records if isinstance(r, Extraction) and r.kind == "lady"]
        assert {r.seat for r in lady_reads} == {e.holder for e in examined if kinds[e.holder - 1] in LLM}
        calls = [r for r in records if isinstance(r, LLMCall) and r.seat is not None]
        for e in examined:
            learned = f"You examined Player {e.target} with the Lady of the Lake: Player {e.target} is "
            told = {r.seat for r in calls if any(learned in m.content for m in r.messages)}
            if kinds[e.holder - 1] in LLM and any(r.seat == e.holder and r.step > 0 for r in calls):
                assert told <= {e.holder}
            assert told <= {e.holder}, f"seat(s) {told - {e.holder}} were told the holder's result"
        if answered >= set(KINDS):
            break
    assert answered >= set(KINDS), f"kinds that never held the Lady: {set(KINDS) - answered}"


@pytest.mark.slow  # seven people's pages polling a table over HTTP: seconds
def test_people_at_the_web_table_play_the_lady(tmp_path):
    async def main():
        task, table, base = await open_table(tmp_path, humans=tuple(range(1, 8)), players=7, lady=True)
        async with aiohttp.ClientSession() as session:
            people = [Browser(session, base, seat, table.tokens[seat]) for seat in range(1, 8)]
            await asyncio.gather(*(p.play() for p in people))
        [played] = await task
        return people, played

    people, played = asyncio.run(main())
    asked = [s["request"] for p in people for s in p.states if s["request"] and s["request"]["kind"] == "lady"]
    assert asked and all(r["legal"]["players"] and r["key"] == "examine" for r in asked)
    assert all(status == 200 for p in people for status, _ in p.posts)
    (game,) = [d for d in tmp_path.rglob(EVENTS)]
    from avalon_agents.records.run_dir import read_events

    follows_the_rule(read_events(game.parent), 7)


def test_the_command_line_takes_the_lady(tmp_path):
    result = CliRunner().invoke(cli, ["play", "--players", "7", "--lady-of-the-lake", "--seats", "rulebot", "--out",
                                      str(tmp_path / "played")])
    assert result.exit_code == 0, result.output
    assert "holds the Lady of the Lake" in result.output and "Lady of the Lake: Player" in result.output
    refused = CliRunner().invoke(cli, ["play", "--lady-of-the-lake"])
    assert refused.exit_code == 2 and "lady_of_the_lake: the Lady of the Lake takes 7 or more players" in refused.output


EXPERIMENT = ("name: lady\nmodel: scripted\nplayers: 7\nlady_of_the_lake: true\nagents:\n  bots: {kind: rulebot}\n"
              "  ours: {kind: llm}\nsides: {good: ours, evil: bots}\n")
TOURNAMENT = ("name: lady\nplayers: 7\nlady_of_the_lake: true\nentrants:\n  bots: {kind: rulebot}\n"
              "  dice: {kind: random}\nblocks: 1\n")


@pytest.mark.slow  # a scripted experiment, a tournament of bots: seconds
@pytest.mark.parametrize(("command", "text", "games"), [("run", EXPERIMENT, 1), ("tournament", TOURNAMENT, 2)])
def test_experiment_and_tournament_configs_take_the_lady(tmp_path, command, text, games):
    from avalon_agents.records.run_dir import read_events

    config = tmp_path / "lady.yaml"
    config.write_text(text)
    result = CliRunner().invoke(cli, [command, str(config), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    played = [p.parent for p in (tmp_path / "out").rglob(EVENTS)]
    assert len(played) == games
    for game in played:
        events = read_events(game)
        assert any(e.type == "lady_given" for e in events) and follows_the_rule(events, 7) is not None
