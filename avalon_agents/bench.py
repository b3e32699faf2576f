"""Throughput benchmarks behind `avalon bench engine` (figures, not pass/fail)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any

from avalon_agents.agents.registry import make_agent
from avalon_agents.core.rules import RuleSet
from avalon_agents.engine import AvalonEngine
from avalon_agents.host.play import agent_seed, play_one


def run_now(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that finishes without waiting on anything (a rule bot's), without an event loop."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("the agent awaited something: run it through GameHost instead")


def play_direct(rules: RuleSet, kind: str, seed: int, moves: list | None = None) -> AvalonEngine:
    """One game of engine + bots in a plain loop: no host, no asyncio, no files.

    If `moves` is given, every (seat, action) submitted is appended to it, for replaying.
    """
    engine = AvalonEngine(rules, seed)
    bots = {s: make_agent(kind, seat=s, seed=agent_seed(seed, s)) for s in rules.seats}
    inbox: dict[int, list] = {s: [] for s in rules.seats}  # delivered before a seat acts, as GameHost does

    def deliver(events: list) -> None:
        for event in events:
            for seat in inbox if event.visible_to == "all" else event.visible_to:
                inbox[seat].append(event)

    def flush(seat: int) -> None:
        if inbox[seat]:
            bots[seat].see(inbox[seat])
            inbox[seat] = []

    deliver(engine.reset())
    while not engine.is_over:
        for request in engine.pending():
            flush(request.seat)
            action = bots[request.seat].decide(request)
            if moves is not None:
                moves.append((request.seat, action))
            deliver(engine.submit(request.seat, action))
    for seat in bots:
        flush(seat)
    return engine


def bench_engine(rules: RuleSet, games: int, kind: str = "rulebot", seed: int = 0) -> dict[str, float]:
    """Games per second, three ways: the same games replayed through the engine alone (the decisions
    recorded beforehand), engine with bots in a plain loop, and through GameHost (asyncio)."""
    recorded = []
    start = time.perf_counter()
    for i in range(games):
        moves: list = []
        play_direct(rules, kind, seed + i, moves)
        recorded.append(moves)
    direct = time.perf_counter() - start

    start = time.perf_counter()
    for i, moves in enumerate(recorded):
        engine = AvalonEngine(rules, seed + i)
        for seat, action in moves:
            engine.submit(seat, action)
        assert engine.is_over
    alone = time.perf_counter() - start

    async def hosted() -> None:
        for i in range(games):
            await play_one(rules, [kind] * rules.players, seed + i)

    start = time.perf_counter()
    asyncio.run(hosted())
    host = time.perf_counter() - start
    return {
        "games": games,
        "engine_alone_games_per_s": games / alone,
        "engine_games_per_s": games / direct,
        "host_games_per_s": games / host,
    }
