"""The host's watcher (what `avalon play`'s live view follows): told of each wait on a seat and of every event, in
the game's order; it changes nothing."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.agents import RuleBot
from avalon_agents.core import RequestKind, make_rules
from avalon_agents.host import GameHost
from avalon_agents.host.host import watching


class Notes:
    """A GameWatcher that writes down what it is told."""

    def __init__(self) -> None:
        self.waits: list[tuple[str, int, RequestKind]] = []
        self.events: list = []

    def waiting(self, request) -> None:
        self.waits.append(("waiting", request.seat, request.kind))

    def answered(self, request) -> None:
        self.waits.append(("answered", request.seat, request.kind))

    def delivered(self, events) -> None:
        self.events.extend(events)


def test_the_watcher_sees_every_wait_and_every_event_and_changes_nothing():
    rules = make_rules("official", 6)
    notes = Notes()
    with watching(notes):  # the way the command line hands it to hosts made deep inside play_one
        host = GameHost(rules=rules, agents={s: RuleBot(seat=s, seed=s) for s in rules.seats}, seed=5)
    asyncio.run(host.run())
    alone = GameHost(rules=rules, agents={s: RuleBot(seat=s, seed=s) for s in rules.seats}, seed=5)
    asyncio.run(alone.run())
    assert alone.watcher is None and notes.events == host.engine.events == alone.engine.events
    waited = [(seat, kind) for what, seat, kind in notes.waits if what == "waiting"]
    assert waited == [(seat, kind) for what, seat, kind in notes.waits if what == "answered"]  # rule bots: at once
    assert {kind for _, kind in waited} >= {RequestKind.PROPOSE, RequestKind.VOTE, RequestKind.QUEST}
    assert waited.count((1, RequestKind.VOTE)) == sum(e.type == "votes_revealed" for e in notes.events)


def test_a_failed_answer_ends_its_wait():
    class Crash(RuleBot):
        async def act(self, request, instruction):
            if request.kind is RequestKind.PROPOSE:
                raise RuntimeError("no team")
            return await super().act(request, instruction)

    rules = make_rules("official", 5)
    notes = Notes()
    host = GameHost(rules=rules, agents={s: Crash(seat=s, seed=s) for s in rules.seats}, seed=1, watcher=notes)
    with pytest.raises(RuntimeError):
        asyncio.run(host.run())
    assert [what for what, _, _ in notes.waits] == ["waiting", "answered"]
