"""Information isolation: over 200 games with scripted LLM agents (vanilla and cognitive, alternating; slow,
the default run plays six: one per player count, both kinds, both presets), no prompt sent for a seat
contains a fact that seat may not know (another seat's role card or night information, the final role
reveal, someone else's quest card, or what the Lady of the Lake showed its holder: games of 7+ players alternate
with and without the Lady). Every recorded prompt is checked."""

from __future__ import annotations

import asyncio
import re

import pytest

from avalon_agents import narrate
from avalon_agents.core import make_rules
from avalon_agents.host.play import play_one
from tests.helpers import scripted_setup

GAMES = 200
FAST_SEEDS = range(6)  # 5 to 10 players, both presets, both kinds
ROLE_LINE = re.compile(r"your role is ([A-Za-z ]+)\.")
LADY_LINE = re.compile(r"You examined Player (\d+) with the Lady of the Lake: Player \d+ is (good|evil)\.")


@pytest.mark.parametrize("seeds", [pytest.param(FAST_SEEDS, id="6-games"),
                                   pytest.param(range(GAMES), id="200-games", marks=pytest.mark.slow)])
def test_no_prompt_leaks_what_its_seat_may_not_know(seeds):
    setup = scripted_setup(extractor=None)
    checked = lady_lines = 0

    async def run() -> None:
        nonlocal checked, lady_lines
        for seed in seeds:
            preset = ("official", "paper")[seed % 2]
            players = 5 + seed % 6
            rules = make_rules(preset, players, lady_of_the_lake=players >= 7 and seed // 6 % 2 == 0)
            kind = ("llm", "cognitive")[seed // 2 % 2]
            host = await play_one(rules, [kind] * players, seed, setups=setup)
            roles = host.engine.roles
            night = {e.seat: narrate.announce(e, rules) for e in host.engine.events if e.type == "night_info"}
            cards = {s: sum(1 for e in host.engine.events if e.type == "quest_card" and e.seat == s) for s in roles}
            shown = {(e.holder, str(e.target), e.loyalty.value) for e in host.engine.events if e.type == "lady_result"}
            # experience learning runs after the game, when every role is public
            calls = [r for r in host.tracer.records if r.type == "llm_call"
                     and r.name != "experience"]
            assert {c.seat for c in calls} == set(roles)
            for call in calls:
                seat = call.seat
                text = "\n".join(m.content for m in call.messages)
                assert ROLE_LINE.findall(text) == [roles[seat].value]
                for line in text.splitlines():
                    if line.startswith("Night:"):
                        assert line == night.get(seat), (seed, seat, line)
                assert "The roles were" not in text
                assert text.count("You played a ") <= cards[seat]
                for target, loyalty in LADY_LINE.findall(text):  # only what the Lady showed this seat
                    assert (seat, target, loyalty) in shown, (seed, seat, target)
                    lady_lines += 1
                for other, other_night in night.items():
                    if other != seat and other_night != night.get(seat):
                        assert other_night not in text
                checked += 1

    asyncio.run(run())
    assert checked > len(seeds) * 20 and lady_lines > 0  # the Lady's results were among what was checked
