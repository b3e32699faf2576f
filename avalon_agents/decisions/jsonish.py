"""Reading JSON out of a model's answer: the whole text, or its first {...} block; never a crash."""

from __future__ import annotations

import json
import re
from typing import Any

JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def load_json(text: str) -> dict[str, Any] | None:
    """The JSON object in `text` (whole, or the first {...} block), or None (also for JSON nested too deeply
    to decode)."""
    for candidate in (text, *(m.group(0) for m in [JSON_OBJECT.search(text)] if m)):
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, TypeError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None
