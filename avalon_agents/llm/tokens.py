"""A local token estimate for models that report no usage (no tiktoken: it downloads its encodings)."""

from __future__ import annotations

import re

PIECE = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Words and punctuation marks: close to BPE counts for English prose (within ~25%)."""
    return len(PIECE.findall(text))
