"""`avalon play`'s live view of one game: the transcript printed as the game goes, and on a terminal one line,
kept up to date in place, naming who the game is waiting for ("waiting for Player 3 to vote, 12 s"), or, while
every seat thinks at once (a round's preparation, the belief probes, the learning at the end), the step and seat
of the game's last LLM call ("the seats think: Player 3's plan, 40 s"), read from the game's trace as it is
written (the host's `tracing`).

The view is the host's `GameWatcher` (host.watching). Its transcript lines are the end-of-game transcript's
(records.transcript), printed as their events arrive, so `avalon play` prints at the end only those not yet
printed. The waiting line goes to stderr, only when stderr is a terminal; anything else written meanwhile (a
transcript line, a human seat's view, a log message) clears it first, and while a human seat is asked it is
not drawn at all, so it never overwrites the person's prompt or typing.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

import click

from avalon_agents.core.actions import RequestKind
from avalon_agents.core.types import Seat, seat_name
from avalon_agents.decisions.kinds import KINDS, kind_of
from avalon_agents.records.trace import LLMCall
from avalon_agents.records.transcript import Decided, transcript

if TYPE_CHECKING:
    from avalon_agents.core.actions import ActionRequest
    from avalon_agents.core.events import GameEvent
    from avalon_agents.records.trace import Record

TICK = 0.5
"""Seconds between redraws of the waiting line (its clock counts whole seconds)."""

THINKING = 1.0
"""Seconds without a request or an event after which the line says the seats are thinking (a round's
preparation, the belief probes, the learning at the game's end: the host waits on every seat at once)."""

CLEAR = "\r\x1b[K"
"""Back to the start of the line and erase it (the waiting line is never longer than the terminal is wide)."""


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def waiting_line(pending: Sequence[tuple[Seat, RequestKind]], seconds: float) -> str:
    """"waiting for Player 3 to vote, 12 s": the seats waited on, by request kind ("" for none)."""
    if not pending:
        return ""
    kinds: dict[RequestKind, list[Seat]] = {}
    for seat, kind in pending:
        kinds.setdefault(kind, []).append(seat)
    parts = []
    for kind, seats in kinds.items():
        listed = [seat_name(s) for s in sorted(seats)]
        who = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
        parts.append(f"{who} to {KINDS[kind].asking}")
    return f"waiting for {'; '.join(parts)}, {int(seconds)} s"


def thinking_line(call: LLMCall | None, seconds: float) -> str:
    """"the seats think: Player 3's plan, 40 s": what every seat is busy with while none is asked, named by the
    game's last LLM call (its seat and its step, the module's or stage's registered name: `LLMCall.name`), or
    "the seats think, 40 s" before any call."""
    what = "" if call is None else f": {seat_name(call.seat)}'s {call.name}" if call.seat else f": {call.name}"
    return f"the seats think{what}, {int(seconds)} s"


def last_call(records: Sequence[Record], start: int, call: LLMCall | None) -> tuple[LLMCall | None, int]:
    """The last LLM call among `records[start:]` (else `call`), and where the next read starts."""
    end = len(records)
    for record in reversed(records[start:end]):
        if isinstance(record, LLMCall):
            return record, end
    return call, end


class LiveView:
    """Follows one game (a host.GameWatcher): prints its transcript as it goes and draws the waiting line.

    Args:
        out: where the transcript lines go as their events arrive (None: none; the command prints the transcript
            at the end as before).
        status: the terminal the waiting line is drawn on (None: no waiting line).
        human: the seat a person plays: while it is asked, the waiting line is not drawn.
        tick: seconds between redraws of the waiting line (default TICK).
        clock: the time in seconds (tests may pass their own).
        prefix: put before each transcript line (a run streaming several games names the game).
    """

    def __init__(self, out: TextIO | None = None, status: TextIO | None = None, *, human: Seat | None = None,
                 tick: float | None = None, clock: Callable[[], float] = time.monotonic, prefix: str = "") -> None:
        self.out = out
        self.prefix = prefix
        self.status = status
        self.human = human
        self.tick = TICK if tick is None else tick
        self.clock = clock
        self.events: list[GameEvent] = []
        self.decided: Decided = frozenset()
        """The decisions a fallback made so far (records.transcript.fell_back), marked on their lines."""
        self.printed = 0
        """How many lines of the game's transcript have been printed."""
        self._pending: dict[tuple[Seat, RequestKind], float] = {}
        self._trace: Sequence[Record] = ()  # the game's trace records as they are written (`tracing`)
        self._read = 0  # how many of them were read
        self._last_call: LLMCall | None = None
        self._quiet_since: float | None = None  # since when nothing was asked or told (None: not running)
        self._shown = ""
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # ------------------------------------------------------------------ the host's GameWatcher

    def waiting(self, request: ActionRequest) -> None:
        if self.human is not None and request.seat != self.human and not kind_of(request).asked_in_public:
            return  # the person at the terminal may not learn whom an assassination is asked of
        with self._lock:
            self._pending[(request.seat, request.kind)] = self.clock()
            self._draw()

    def answered(self, request: ActionRequest) -> None:
        with self._lock:
            self._pending.pop((request.seat, request.kind), None)
            if not self._pending and self._quiet_since is not None:
                self._quiet_since = self.clock()
            self._draw()

    def tracing(self, records: Sequence[Record]) -> None:
        with self._lock:
            self._trace, self._read, self._last_call = records, 0, None

    def delivered(self, events: Sequence[GameEvent]) -> None:
        self.events.extend(events)
        if self._quiet_since is None and self.status is None:
            self._quiet_since = self.clock()  # no waiting line of its own: `line()` is read by a progress bar
        if self._quiet_since is not None:
            self._quiet_since = self.clock()
        if self.out is None:
            return
        lines = transcript(self.events, decided=self.decided)
        if len(lines) > self.printed:
            with self._lock:
                shown = self._erase()
                for line in lines[self.printed:]:
                    click.echo(self.prefix + line, file=self.out)  # as the end-of-game transcript: ANSI stripped when piped
                self.printed = len(lines)
                self.out.flush()
                self._draw(again=shown)

    # ------------------------------------------------------------------ others writing to the terminal

    def guard(self, stream: TextIO) -> TextIO:
        """`stream`, written to only after the waiting line is cleared (a human seat's Terminal writes here)."""
        return _Guarded(stream, self) if self.status is not None else stream  # type: ignore[return-value]

    def log(self, message: str) -> None:
        """A log message for stderr (logs.stderr_through), on its own line, the waiting line drawn again below."""
        with self._lock:
            shown = self._erase()
            if self.status is not None:
                self.status.write(message)
                self.status.flush()
            self._draw(again=shown)

    # ------------------------------------------------------------------ the waiting line

    @contextmanager
    def running(self) -> Iterator[LiveView]:
        """While the block runs the waiting line is kept up to date (and log messages go through `log`); it is
        cleared at the end, however the block ends."""
        from avalon_agents import logs

        if self.status is None:
            yield self
            return
        self._stop.clear()
        self._quiet_since = self.clock()
        self._ticker = threading.Thread(target=self._tick, name="live-view", daemon=True)
        self._ticker.start()
        try:
            with logs.stderr_through(self.log):
                yield self
        finally:
            self._stop.set()
            self._ticker.join()
            with self._lock:
                self._pending.clear()
                self._quiet_since = None
                self._erase()

    def _tick(self) -> None:
        while not self._stop.wait(self.tick):
            with self._lock:
                self._draw(again=True)

    def line(self) -> str:
        """The waiting line as it reads now: the seats asked, or, when nothing was asked or told for THINKING
        seconds, that all are thinking and on what (`thinking_line`; with a person at the terminal, not on what:
        which seat thinks on which step could tell them a role, an Assassin's strike say) ("" otherwise, or while
        a human seat is asked)."""
        with self._lock:
            if not self._pending:
                quiet = self.clock() - self._quiet_since if self._quiet_since is not None else 0.0
                if quiet < THINKING:
                    return ""
                self._last_call, self._read = last_call(self._trace, self._read, self._last_call)
                return thinking_line(self._last_call if self.human is None else None, quiet)
            if any(seat == self.human for seat, _ in self._pending):
                return ""
            started = min(self._pending.values())
            return waiting_line(list(self._pending), self.clock() - started)

    def _draw(self, again: bool = False) -> None:
        """Bring the waiting line up to date: erase it when nothing is waited on; else update it if it shows, or
        draw it `again` (a new line is drawn by the ticker, so answers that come at once never flicker)."""
        if self.status is None:
            return
        text = self.line()
        if not text:
            self._erase()
            return
        text = text[: _width(self.status) - 1]
        if text != self._shown and (self._shown or again):
            self.status.write(CLEAR + text)
            self.status.flush()
            self._shown = text

    def _erase(self) -> bool:
        """Erase the waiting line; whether it showed."""
        if self._shown and self.status is not None:
            self.status.write(CLEAR)
            self.status.flush()
            self._shown = ""
            return True
        return False


class _Guarded:
    """A text stream that clears the live view's waiting line before each write."""

    def __init__(self, stream: TextIO, view: LiveView) -> None:
        self._stream = stream
        self._view = view

    def write(self, text: str) -> int:
        with self._view._lock:
            self._view._erase()
            return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _width(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80
