"""The on-disk cache of LLM judgments: a rerun of the same judgments costs no call.

One JSONL file, `judgments.jsonl`, under the cache folder. Each line is one judgment:

    {"key": <sha256 hex>, "judge": "teamwork", "prompt_id": "judges/teamwork", "prompt_hash": ...,
     "model": "openai:gpt-4o-mini", "raw": <the judge's answer text>, "parsed": {...}, "at": <unix time>}

The key is the sha256 of (judge name, prompt template hash, rendered messages, judge model spec). Lines are
appended one `write` at a time and flushed; the file is read once when the cache opens. A line a killed process
left half-written does not parse and is skipped (the judgment is simply made again); a later line with the same
key wins.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CACHE_FILE = "judgments.jsonl"


def cache_key(judge: str, prompt_hash: str, messages: Sequence[str], model: str) -> str:
    """The cache key of one judgment.

    Args:
        judge: the judge's name ("camouflage", "teamwork", "sharing").
        prompt_hash: the hash of the prompt template the messages were rendered from.
        messages: the rendered message texts, in order.
        model: the judge model's spec.

    Returns:
        A sha256 hex digest.
    """
    blob = json.dumps([judge, prompt_hash, list(messages), model], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class JudgmentCache:
    """Judgments stored by key in `<folder>/judgments.jsonl`.

    Args:
        folder: the cache folder (made if missing); None keeps nothing and finds nothing.
        name: the file's name in it (other answers cached the same way, e.g. `probe-humans`' answers.jsonl).
    """

    def __init__(self, *, folder: Path | None, name: str = CACHE_FILE) -> None:
        self.path = Path(folder) / name if folder is not None else None
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._needs_newline = False
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._load()

    def __len__(self) -> int:
        return len(self._entries)

    def _load(self) -> None:
        assert self.path is not None
        if not self.path.is_file():
            return
        data = self.path.read_bytes()
        self._needs_newline = bool(data) and not data.endswith(b"\n")
        for line in data.decode(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a half-written line
            if isinstance(entry, dict) and isinstance(entry.get("key"), str) and isinstance(entry.get("raw"), str):
                self._entries[entry["key"]] = entry

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored judgment for `key` (with its `raw` answer), or None."""
        return self._entries.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store a judgment (`entry` must hold the judge's `raw` answer) and append it to the file."""
        record = {"key": key, **entry, "at": round(time.time(), 3)}
        with self._lock:
            self._entries[key] = record
            if self.path is None:
                return
            line = json.dumps(record, ensure_ascii=False) + "\n"
            if self._needs_newline:  # end the half-written line a killed process left behind
                line = "\n" + line
                self._needs_newline = False
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
