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


def play_direct(rules: RuleSet, kind: str, seed: int) -> AvalonEngine:
    """One game of engine + bots in a plain loop: no host, no asyncio, no files."""
    engine = AvalonEngine(rules, seed)
    bots = {s: make_agent(kind, seat=s, seed=agent_seed(seed, s)) for s in rules.seats}
    events = engine.reset()
    while True:
        for seat, bot in bots.items():
            visible = [e for e in events if e.visible(seat)]
            if visible:
                run_now(bot.observe(visible))
        if engine.is_over:
            return engine
        events = []
        for request in engine.pending():
            events += engine.submit(request.seat, bots[request.seat].decide(request))


def bench_engine(rules: RuleSet, games: int, kind: str = "rulebot", seed: int = 0) -> dict[str, float]:
    """Games per second: engine with bots in a plain loop, and the same games through GameHost (asyncio)."""
    start = time.perf_counter()
    for i in range(games):
        play_direct(rules, kind, seed + i)
    direct = time.perf_counter() - start

    async def hosted() -> None:
        for i in range(games):
            await play_one(rules, [kind] * rules.players, seed + i)

    start = time.perf_counter()
    asyncio.run(hosted())
    host = time.perf_counter() - start
    return {"games": games, "engine_games_per_s": games / direct, "host_games_per_s": games / host}
