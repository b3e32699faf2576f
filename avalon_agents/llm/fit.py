"""A constrained answer that fits its max_tokens.

A JSON schema bounds each string of an answer (`maxLength`, in characters), and a server that constrains its output
to the schema (llama.cpp's grammar, OpenAI's structured outputs) ends a string there; but the answer is also cut at
the call's `max_tokens`, and a JSON answer cut short is no answer (llm.http.CutOff, retried, then a failed call). So
a call's schema is fitted to its `max_tokens` before it is sent (`fitted`): where the strings' bounds together need
more tokens than the answer may have, each is scaled down alike, and the answer ends inside its schema. The
embedded model's combined action and answer (an action of up to 300 characters, a reason of up to 200, 96 tokens)
ran to max_tokens in 3 of 130 calls of README command 1's game before."""

from __future__ import annotations

import copy
from typing import Any

FITS_AT = 5
"""A schema whose strings' bounds fit in max_tokens at this many characters a token (English prose, about, in
cl100k_base) is sent as it is: the standard profile's combined action and speech (300 + 800 characters in 256
tokens) is, so the games of a model that writes well within its bounds do not change."""
CHARS_PER_TOKEN = 4
"""A schema that does not fit is scaled to fit at this many characters a token: with a margin, for a small model's
tokenizer and words (the embedded model's 96 tokens: 0 of 140 calls cut, against 3 of 130 before)."""
SKELETON_TOKENS = 24
"""What an answer's braces, keys, quotes and decision values take, about: the tokens its strings cannot use."""
MIN_CHARS = 40
"""No string's bound is scaled below this (a few words)."""


def _strings(node: Any) -> list[dict[str, Any]]:
    """Every string schema with a maxLength in `node`, at any depth."""
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    if not isinstance(node, dict):
        return []
    found = [node] if node.get("type") == "string" and isinstance(node.get("maxLength"), int) else []
    return found + [s for key, value in node.items() if key != "maxLength" for s in _strings(value)]


def fitted(schema: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
    """`schema` if its strings' maxLength together fit in `max_tokens` (less SKELETON_TOKENS) at FITS_AT
    characters a token; else a copy whose bounds are scaled down alike to fit at CHARS_PER_TOKEN, none under
    MIN_CHARS. Deterministic: a replay of the call sends (and hashes) the same schema."""
    if not max_tokens:
        return schema
    tokens = max(max_tokens - SKELETON_TOKENS, 1)
    total = sum(s["maxLength"] for s in _strings(schema))
    if total <= tokens * FITS_AT:
        return schema
    room = tokens * CHARS_PER_TOKEN
    schema = copy.deepcopy(schema)
    for string in _strings(schema):
        string["maxLength"] = max(MIN_CHARS, string["maxLength"] * room // total)
    return schema
