"""The run-directory layout of one game: events.jsonl, trace.jsonl, meta.json, result.json.

A game directory without result.json is not done. JSON files are written atomically (temp file, then
rename); events.jsonl and trace.jsonl (LLM calls, extractions, faults: for analysis, never shown to an
agent) grow line by line as the game goes and are started afresh when a game restarts.
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
from avalon_agents.records.trace import Record, TraceRecord, read_lines, to_line

EVENTS = "events.jsonl"
TRACE = "trace.jsonl"
META = "meta.json"
RESULT = "result.json"
HEALTH = "health.json"
"""A finished game's health: its calls, failed calls by cause, re-asks, fallbacks (records.usage)."""
ABORTED = "aborted.json"
"""Written instead of result.json when the watchdog ends a game: the reason (the game is replayed on resume)."""


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to `path` so that readers see either the old file or the whole new one."""
    text = data.model_dump_json(indent=2) if isinstance(data, BaseModel) else json.dumps(data, indent=2, default=str)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # readable by colleagues on a shared filesystem (mkstemp makes it 0600)
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
        recording: answers already paid for (a resumed game's), which LLM calls take before asking a model.
    """

    def __init__(self, path: Path, recording: Any = None) -> None:
        self.path = Path(path)
        self.recording = recording
        """Answers this game already paid for (llm.replay.Recording: an interrupted attempt's), asked first."""
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / RESULT).unlink(missing_ok=True)
        self._events = open(self.path / EVENTS, "w")
        self._trace = open(self.path / TRACE, "w")
        self.step: int | None = None
        self.records: list[Record] = []  # what was written, for the game's health without reading it back

    def write_meta(self, meta: dict[str, Any]) -> None:
        write_json_atomic(self.path / META, meta)

    def append_events(self, events: Iterable[GameEvent]) -> None:
        for event in events:
            self._events.write(event.to_json() + "\n")
        self._events.flush()

    def trace(self, record: Record) -> None:
        """Append one trace record (an LLM call, a module output, an extraction, a probe)."""
        self._trace.write(to_line(record) + "\n")
        self._trace.flush()
        self.records.append(record)

    def write_result(self, result: GameResult) -> None:
        self.close()
        write_json_atomic(self.path / RESULT, result)

    def close(self) -> None:
        for f in (self._events, self._trace):
            if not f.closed:
                f.close()


class JsonlTracer:
    """Appends trace records to one JSONL file (LLM calls made outside a game, e.g. by the analysis judges)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.step: int | None = None

    def trace(self, record: Record) -> None:
        with open(self.path, "a") as f:
            f.write(to_line(record) + "\n")


def is_done(path: Path) -> bool:
    """True if the game directory holds a finished game."""
    return (Path(path) / RESULT).is_file()


def read_events(path: Path) -> list[GameEvent]:
    """The game events of a game directory, in order."""
    with open(Path(path) / EVENTS) as f:
        return [EVENT_ADAPTER.validate_json(line) for line in f if line.strip()]


def read_trace(path: Path) -> list[TraceRecord]:
    """The typed trace records of a game directory, in order."""
    return read_lines(Path(path) / TRACE)


def read_result(path: Path) -> GameResult:
    return GameResult.model_validate_json((Path(path) / RESULT).read_text())
