"""No answer of the web table's API holds what its seat may not know: every seat a person, over every deal
(each role at each seat) for 5 to 10 players (slow; the fast run plays one game per player count). The desks'
`state()` is what `GET /api/seat/N` answers (json-dumped), so each state a page would see at each of its
requests, and at the end, is checked; and the spectator's, which must hold no private event."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from avalon_agents import narrate
from avalon_agents.core import make_rules
from avalon_agents.core.rules import MAX_PLAYERS, MIN_PLAYERS
from avalon_agents.host.host import watching
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.table.desk import WebDesk
from avalon_agents.table.watch import Spectator
from tests.table.helpers import answer_for

ROLE_LINE = re.compile(r"your role is ([A-Za-z ]+)\.")
MAX_GAMES = 300  # per player count: enough for every role at every seat


async def autopilot(desk: WebDesk, seen: list[str]) -> None:
    """Answer as the page would, keeping each state the page would be shown at a request and at the end."""
    while True:
        changed = desk.changed
        state = desk.state()
        if state["request"] is not None or state["over"]:
            seen.append(json.dumps(state))
        if state["over"]:
            return
        if state["request"] is not None:
            assert desk.answer(answer_for(state["request"])) is None
        await changed.wait()


async def table_game(players: int, seed: int, preset: str = "official"):
    rules = make_rules(preset, players)
    desks = {s: WebDesk(s, rules) for s in rules.seats}
    spectator = Spectator(rules)
    seen: dict[int, list[str]] = {s: [] for s in rules.seats}
    pilots = [asyncio.create_task(autopilot(desks[s], seen[s])) for s in rules.seats]
    with watching(spectator):
        host = await play_one(rules, ["human"] * players, seed, setups=[AgentSetup(terminal=desks[s])
                                                                          for s in rules.seats])
    await asyncio.gather(*pilots)
    return rules, host, seen, spectator


def check_game(rules, host, seen: dict[int, list[str]], spectator: Spectator) -> None:
    roles = host.engine.roles
    events = host.engine.events
    night = {e.seat: narrate.announce(e, rules) for e in events if e.type == "night_info"}
    cards = {s: sum(e.type == "quest_card" and e.seat == s for e in events) for s in roles}
    votes = {s: sum(e.type == "vote_cast" and e.seat == s for e in events) for s in roles}
    for seat, states in seen.items():
        assert states and json.loads(states[-1])["over"]
        for text in states:
            state = json.loads(text)
            assert all(e["visible_to"] == "all" or seat in e["visible_to"] for e in state["events"]), seat
            if state["over"]:
                assert state["result"]["roles"] == {str(s): r.value for s, r in sorted(roles.items())}
                continue
            assert state["seat"] == seat and state["role"] == roles[seat].value
            assert ROLE_LINE.findall(state["system"]) == [roles[seat].value]
            assert state["result"] is None and "The roles were" not in text
            assert state["request"]["id"].startswith(f"{seat}-")
            lines = "\n".join(state["lines"])
            assert lines.count("You played a ") <= cards[seat]
            assert lines.count("You voted to ") <= votes[seat]
            for other, other_night in night.items():
                if other_night != night.get(seat):
                    assert other_night not in text, (seat, other)
    public = spectator.state()
    assert public["over"] and public["result"]["roles"] == {str(s): r.value for s, r in sorted(roles.items())}
    assert [e["visible_to"] for e in public["events"]] == ["all"] * len(public["events"])
    shown = [e for e in spectator.events]
    assert shown and all(e.visible_to == "all" for e in shown)
    assert spectator.asked and "assassinate" not in {kind for _, kind in spectator.asked}  # whom it asks is secret
    assert not any(line.lstrip().startswith("(night)") for line in public["lines"])


def deals(players: int, games: int, preset: str = "official") -> None:
    async def main() -> int:
        wanted = {(seat, role) for seat in range(1, players + 1) for role in make_rules(preset, players).roles}
        played = 0
        for seed in range(games):
            rules, host, seen, spectator = await table_game(players, seed, preset)
            check_game(rules, host, seen, spectator)
            wanted -= set(host.engine.roles.items())
            played += 1
            if not wanted and games > 1:
                break
        assert games == 1 or not wanted, f"{players} players: never dealt {sorted(wanted)[:5]}"
        return played

    asyncio.run(main())


def test_one_game_per_player_count():
    for players in range(MIN_PLAYERS, MAX_PLAYERS + 1):
        deals(players, 1, ("official", "paper")[players % 2])  # the paper's: assassination after any quest


@pytest.mark.slow  # every role at every seat: about 100 games per preset
@pytest.mark.parametrize("preset", ["official", "paper"])
@pytest.mark.parametrize("players", range(MIN_PLAYERS, MAX_PLAYERS + 1))
def test_every_deal(players, preset):
    deals(players, MAX_GAMES, preset)
