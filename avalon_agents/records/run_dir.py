"""The run-directory layout of one game: events.jsonl, meta.json, result.json (trace.jsonl later).

A game directory without result.json is not done. JSON files are written atomically (temp file, then
rename); events.jsonl grows line by line as the game goes and is started afresh when a game restarts.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from avalon_agents.core.events import EVENT_ADAPTER, GameEvent, GameResult

EVENTS = "events.jsonl"
META = "meta.json"
RESULT = "result.json"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to `path` so that readers see either the old file or the whole new one."""
    text = data.model_dump_json(indent=2) if isinstance(data, BaseModel) else json.dumps(data, indent=2, default=str)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class GameRecorder:
    """Writes one game's directory.

    Args:
        path: the game directory (created if missing).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / RESULT).unlink(missing_ok=True)
        self._events = open(self.path / EVENTS, "w")

    def write_meta(self, meta: dict[str, Any]) -> None:
        write_json_atomic(self.path / META, meta)

    def append_events(self, events: Iterable[GameEvent]) -> None:
        for event in events:
            self._events.write(event.to_json() + "\n")
        self._events.flush()

    def write_result(self, result: GameResult) -> None:
        self._events.close()
        write_json_atomic(self.path / RESULT, result)

    def close(self) -> None:
        if not self._events.closed:
            self._events.close()


def is_done(path: Path) -> bool:
    """True if the game directory holds a finished game."""
    return (Path(path) / RESULT).is_file()


def read_events(path: Path) -> list[GameEvent]:
    """The game events of a game directory, in order."""
    with open(Path(path) / EVENTS) as f:
        return [EVENT_ADAPTER.validate_json(line) for line in f if line.strip()]


def read_result(path: Path) -> GameResult:
    return GameResult.model_validate_json((Path(path) / RESULT).read_text())
