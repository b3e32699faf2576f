"""The recorder: the one writer of a game directory, through the game's lifecycle.

    recorder = GameRecorder(path, seating=...)     # nothing touched yet; a finished game: `recorder.finished`
    recorder.earlier_calls()                       # the answers an interrupted attempt paid for (resume)
    recorder.start(meta)                           # seating.json, meta.json (with the layout); the game begins
    recorder.append_events(events); recorder.trace(record)     # events.jsonl, trace.jsonl, line by line
    recorder.finish(result, health)                # health.json, then result.json (last)
    recorder.abort(reason, step)                   # or aborted.json: the game is no result, replayed on resume

Whoever plays or imports a game (the game job, the host, the importers) says what happened; the recorder alone
names the files (records.run_dir lays them out). JSON files are written atomically; a directory without
result.json is an unfinished game.

No call is paid twice, whatever kill interrupts a game: `start` over an unfinished attempt keeps that attempt's
trace as `attempt-<n>.jsonl` (a rename, so a kill at any moment leaves it in one piece) and removes the rest; the
answers a new attempt replays are read from those files (`earlier_calls`); they are removed only when the game
finishes, before result.json. A new attempt killed while it replays them leaves them where they were.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from avalon_agents.core.events import GameEvent, GameResult
from avalon_agents.records.run_dir import (
    ABORTED,
    ATTEMPT,
    EVENTS,
    HEALTH,
    LAYOUT,
    META,
    RESULT,
    SEATING,
    TRACE,
    Seating,
    Tail,
    attempt_files,
    check_layout,
    write_json_atomic,
)
from avalon_agents.records.run_record import game_id
from avalon_agents.records.trace import LLMCall, Record, from_line, to_line
from avalon_agents.records.usage import usage

CLEARED = (RESULT, ABORTED, HEALTH, EVENTS, SEATING, META)
"""What a new attempt removes of an earlier one (meta.json last: until then the directory still says its layout)."""


class GameRecorder:
    """Writes one game's directory (see the module's docstring for its lifecycle).

    Args:
        path: the game directory (made by `start`).
        recording: answers already paid for (llm.replay.Recording), which the game's LLM calls take before asking
            a model (the game job gives a resumed game its `earlier_calls`).
        seating: who sits where and the game's place in its run (seating.json, written by `start`); None: none.

    Raises:
        LayoutError: `path` holds a game of a layout this code does not write (one line).
    """

    def __init__(self, path: Path, recording: Any = None, seating: Seating | None = None) -> None:
        self.path = Path(path)
        self.game = game_id(self.path)
        """The game's id, unique across runs: its run's id and its path in the run (records.run_record.game_id)."""
        self.recording = recording
        """Answers this game already paid for (llm.replay.Recording: an interrupted attempt's), asked first."""
        self.seating = seating
        self.step: int | None = None
        self.records: list[Record] = []  # what was written, for the game's health without reading it back
        self._events: Any = None
        self._trace: Any = None
        if (self.path / META).is_file():
            check_layout(self.path, [self.path])

    @property
    def finished(self) -> bool:
        """The directory holds the finished game (result.json)."""
        return (self.path / RESULT).is_file()

    def earlier_calls(self) -> list[LLMCall]:
        """The LLM calls earlier attempts of this game made and recorded, in order: all of the first attempt's,
        and of each later one those it did not itself replay (so each answer paid for is there once)."""
        files = [*attempt_files(self.path), self.path / TRACE]
        calls: list[LLMCall] = []
        for n, file in enumerate(f for f in files if f.is_file()):
            calls += [r for r in Tail(file, from_line).read() if isinstance(r, LLMCall) and (n == 0 or not r.replayed)]
        return calls

    def start(self, meta: dict[str, Any]) -> None:
        """The game begins: an earlier attempt's trace is kept as attempt-<n>.jsonl and the rest of it removed,
        then seating.json (if any) and meta.json (with this code's `layout`) are written and events.jsonl and
        trace.jsonl opened, empty."""
        self.path.mkdir(parents=True, exist_ok=True)
        if (self.path / TRACE).is_file():
            os.replace(self.path / TRACE, self.path / ATTEMPT.format(len(attempt_files(self.path)) + 1))
        for name in CLEARED:
            (self.path / name).unlink(missing_ok=True)
        if self.seating is not None:
            write_json_atomic(self.path / SEATING, self.seating.model_dump(mode="json", exclude_none=True))
        write_json_atomic(self.path / META, {"layout": LAYOUT, **meta})
        self._events = open(self.path / EVENTS, "w")
        self._trace = open(self.path / TRACE, "w")

    def append_events(self, events: Iterable[GameEvent]) -> None:
        for event in events:
            self._events.write(event.to_json() + "\n")
        self._events.flush()

    def trace(self, record: Record) -> None:
        """Append one trace record (an LLM call, a module output, an extraction, a probe)."""
        self._trace.write(to_line(record) + "\n")
        self._trace.flush()
        self.records.append(record)

    def finish(self, result: GameResult, health: dict[str, Any] | None = None) -> None:
        """The game ended: health.json (given, or counted from what was traced), the earlier attempts' traces
        removed (this attempt's trace holds every answer the game took), then result.json."""
        self.close()
        write_json_atomic(self.path / HEALTH, usage(self.records) if health is None else health)
        for file in attempt_files(self.path):
            file.unlink()
        write_json_atomic(self.path / RESULT, result)

    def abort(self, reason: str, step: int | None = None, health: dict[str, Any] | None = None) -> None:
        """The game ends without a result: aborted.json says why (and at which step); health.json too if given.
        Nothing of its attempts is removed: a resume replays it. (The files stay open for what the game's
        cancelled tasks still trace; `close` closes them.)"""
        if health is not None:
            write_json_atomic(self.path / HEALTH, health)
        write_json_atomic(self.path / ABORTED, {"reason": reason, "step": step})

    def close(self) -> None:
        """Close the files (however the game ended; an unfinished game stays as it is)."""
        for f in (self._events, self._trace):
            if f is not None and not f.closed:
                f.close()
