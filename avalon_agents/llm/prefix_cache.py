"""How much of a seat's input a provider's prompt cache could serve, by OpenAI's rule: a prompt whose first tokens
equal those of an earlier prompt is billed the cached-input price for the common prefix, from 1,024 tokens on and
in steps of 128 tokens (a prefix of 1,300 common tokens: 1,280 cached; of 1,000: none).

`PrefixCache` keeps the prompts a seat sent (as cl100k_base tokens, messages in order) and says of each new one
how many of its tokens were cacheable. `avalon bench cost` matches every call against the same seat's earlier
prompts with it; the figure is what a cache that forgets nothing could serve, an upper bound of what a provider
reports (its cache also expires)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from avalon_agents.llm.tokens import tokens_of

MIN_PREFIX = 1024
"""The shortest prefix a provider caches (OpenAI: 1,024 tokens)."""
STEP = 128
"""A cached prefix grows in steps of this many tokens (OpenAI: 128)."""


def cached_part(common: int) -> int:
    """The tokens of a common prefix of `common` tokens served from the cache: none below MIN_PREFIX, else whole
    STEPs."""
    return 0 if common < MIN_PREFIX else common // STEP * STEP


def prompt_tokens(messages: Sequence[Any]) -> np.ndarray:
    """A prompt's messages (anything with `content`) as one row of tokens, in order."""
    parts = [tokens_of(m.content if hasattr(m, "content") else str(m)) for m in messages]
    return np.fromiter((t for part in parts for t in part), dtype=np.int64)


class PrefixCache:
    """The prompts sent so far under each key (a seat), to match each new prompt against."""

    def __init__(self) -> None:
        self._seen: dict[Hashable, list[np.ndarray]] = {}

    def add(self, key: Hashable, messages: Sequence[Any]) -> tuple[int, int]:
        """Remember this prompt under `key`; return (its tokens, those a cache of `key`'s earlier prompts serves)."""
        tokens = prompt_tokens(messages)
        longest = 0
        for earlier in self._seen.get(key, ()):
            n = min(len(earlier), len(tokens))
            if n <= longest:
                continue
            differ = np.flatnonzero(earlier[:n] != tokens[:n])
            longest = max(longest, int(differ[0]) if len(differ) else n)
        self._seen.setdefault(key, []).append(tokens)
        return len(tokens), cached_part(longest)
