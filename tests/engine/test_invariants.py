"""Invariants over 10,000 seeded games through the host, with random agents and rule bots (slow; the default
run checks the first 500 in this process).

Every game ends; the whole event log passes an independent referee; no seat is delivered an event
outside its `visible_to` and every seat gets all events it may see (checked at the host's delivery
point); the same seed gives byte-identical events. Games run in two processes to stay under a minute.
"""

from __future__ import annotations

import asyncio
import hashlib
from concurrent.futures import ProcessPoolExecutor

import pytest

from avalon_agents.agents import make_agent
from avalon_agents.agents.base import AgentBase
from avalon_agents.core import EndReason, make_rules
from avalon_agents.host import GameHost
from avalon_agents.host.play import agent_seed
from tests.referee import referee

GAMES = 10_000
FAST_GAMES = 500
REPLAY_EVERY = 25
KINDS = ("random", "rulebot", "mixed")


class Watcher(AgentBase):
    """Wraps an agent and records what the host delivers to its seat."""

    def __init__(self, inner, seat: int) -> None:
        self.inner, self.seat = inner, seat
        self.received: list = []
        self.leaks: list = []
        self.reads_instructions = False

    async def observe(self, events) -> None:
        for e in events:
            if not e.visible(self.seat):
                self.leaks.append(e)
        self.received += events
        await self.inner.observe(events)

    async def act(self, request, instruction):
        assert request.seat == self.seat
        return await self.inner.act(request, instruction)

    async def on_game_end(self, result) -> None:
        await self.inner.on_game_end(result)


def setup(seed: int):
    preset = ("official", "paper")[seed % 2]
    players = 5 + (seed // 2) % 6
    kind = KINDS[(seed // 12) % 3]
    rules = make_rules(preset, players)
    kinds = [("random", "rulebot")[s % 2] if kind == "mixed" else kind for s in rules.seats]
    return rules, kinds


async def play(seed: int):
    rules, kinds = setup(seed)
    watchers = {
        s: Watcher(make_agent(k, seat=s, seed=agent_seed(seed, s)), s) for s, k in zip(rules.seats, kinds)
    }
    host = GameHost(rules=rules, agents=watchers, seed=seed)
    await host.run()
    return rules, host, watchers


def digest(events) -> str:
    return hashlib.sha256("\n".join(e.to_json() for e in events).encode()).hexdigest()


def run_chunk(seeds: range) -> dict:
    problems: list[str] = []
    digests: dict[int, str] = {}
    reasons: dict[str, int] = {}

    async def main() -> None:
        for seed in seeds:
            try:
                rules, host, watchers = await play(seed)
                events = host.engine.events
                referee(events, rules)
                for seat, w in watchers.items():
                    if w.leaks:
                        problems.append(f"seed {seed}: seat {seat} was delivered {w.leaks[0].type} not visible to it")
                    if w.received != [e for e in events if e.visible(seat)]:
                        problems.append(f"seed {seed}: seat {seat} did not get exactly its visible events")
                reason = host.engine.result().reason.value
                reasons[reason] = reasons.get(reason, 0) + 1
                if seed % REPLAY_EVERY == 0:
                    digests[seed] = digest(events)
            except Exception as exc:  # noqa: BLE001 - report every failing seed
                problems.append(f"seed {seed}: {type(exc).__name__}: {exc}")
        for seed in list(digests):  # replay: the same seed gives byte-identical events
            _, host, _ = await play(seed)
            if digest(host.engine.events) != digests[seed]:
                problems.append(f"seed {seed}: replay differs")

    asyncio.run(main())
    return {"problems": problems, "reasons": reasons, "replayed": len(digests)}


def check(parts: list[dict], games: int) -> None:
    problems = [p for part in parts for p in part["problems"]]
    assert not problems, f"{len(problems)} problems, first: {problems[:5]}"
    reasons: dict[str, int] = {}
    for part in parts:
        for k, v in part["reasons"].items():
            reasons[k] = reasons.get(k, 0) + v
    assert sum(reasons.values()) == games
    # Every way a game can end actually happened somewhere in the sample.
    assert set(reasons) == {r.value for r in EndReason}
    assert sum(p["replayed"] for p in parts) == games // REPLAY_EVERY


@pytest.mark.slow  # seconds: the fast suite stays under its 2 minutes
def test_five_hundred_games_hold_every_invariant():
    check([run_chunk(range(FAST_GAMES))], FAST_GAMES)


@pytest.mark.slow
def test_ten_thousand_games_hold_every_invariant():
    half = GAMES // 2
    with ProcessPoolExecutor(max_workers=2) as pool:
        parts = list(pool.map(run_chunk, [range(0, half), range(half, GAMES)]))
    check(parts, GAMES)


def test_different_seeds_give_different_games():
    async def both():
        return [digest((await play(seed))[1].engine.events) for seed in (0, 36)]

    a, b = asyncio.run(both())
    assert a != b


def test_the_referee_catches_a_doctored_log():
    """The referee is only worth something if it can fail."""
    import dataclasses

    from tests.referee import Foul

    rules, host, _ = asyncio.run(play(1))
    events = host.engine.events
    referee(events, rules)
    doctored = {
        "votes_revealed": lambda e: dataclasses.replace(e, approved=not e.approved),
        "quest_completed": lambda e: dataclasses.replace(e, fails=e.fails + 1),
        "leader_chosen": lambda e: dataclasses.replace(e, leader=e.leader % rules.players + 2),
        "night_info": lambda e: dataclasses.replace(e, seats=tuple(reversed(e.seats)) + (1,)),
    }
    for kind, change in doctored.items():
        i = next(i for i, e in enumerate(events) if e.type == kind)
        with pytest.raises(Foul):
            referee(events[:i] + [change(events[i])] + events[i + 1:], rules)
