"""A study's progress on stderr while it plays (`cli.studies.carry_out`): a bar that moves per round, saying the
round each game is in, the LLM calls made, the seconds per call and the tokens, with the time left from the run's
measured pace; and for a run of one game (or any run with -v) the game's transcript as it plays, with whom it
waits for, as `avalon play` shows a game (cli.live.LiveView).

Each game is followed from its start (the scheduler's `on_start`: a `GameFollower`, the host's watcher of that
game); its calls are read from the lines its recorder appends to its trace.jsonl (records.trace), so nothing is
counted twice and a resumed game's replayed answers count as replayed, not as the model's pace.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn
from rich.text import Text

from avalon_agents.cli.live import THINKING, LiveView, thinking_line, waiting_line
from avalon_agents.records.run_dir import Tail
from avalon_agents.records.trace import LLMCall
from avalon_agents.records.transcript import fell_back

if TYPE_CHECKING:
    from avalon_agents.core.actions import ActionRequest
    from avalon_agents.core.events import GameEvent
    from avalon_agents.experiments.study import Lane

POLL = 0.5
"""Seconds between reads of the games' new trace lines while the bar is drawn (calls come between events)."""

STABLE_CALLS = 20
"""The time left is said once this many calls were answered after the run's first answer (the first waits for the
model to load, a few calls at a round's start share a prompt cache): before, it is 'unknown yet', never a guess
that swings from hours to minutes."""

PLAIN_EVERY = 30.0
"""Seconds between progress lines when stderr is no terminal (piped, `2>&1 | tee`, a batch job's log): the bar
cannot be drawn in place there, so a line is printed instead, and one at each game's end."""

ROUND_SHARE = 0.2
"""The share of a game one quest stands for, when no calls say how far a game is (rule bots)."""


def new_records(tail: Tail) -> list[Any]:
    """The LLM calls and the fallbacks' records appended to a game's trace since the tail's last read
    (records.run_dir.Tail)."""
    return tail.read(keep=lambda line: '"llm_call"' in line or '"fallback"' in line)


def new_calls(tail: Tail) -> list[LLMCall]:
    """The LLM calls appended to a game's trace since the tail's last read."""
    return [r for r in new_records(tail) if isinstance(r, LLMCall)]


class Tally:
    """Calls, the model's seconds on them and tokens (replayed answers apart: they cost no time)."""

    def __init__(self) -> None:
        self.calls = self.replayed = self.tokens = 0
        self.seconds = 0.0

    def add(self, calls: Sequence[LLMCall]) -> None:
        for call in calls:
            self.calls += 1
            self.tokens += call.input_tokens + call.output_tokens
            if call.replayed:
                self.replayed += 1
            else:
                self.seconds += call.latency_s


class GameFollower:
    """The watcher of one game (host.GameWatcher): its round, its calls so far, whom it waits for; with a
    `view`, its transcript streamed (cli.live.LiveView)."""

    def __init__(self, board: RunBoard, lane: Lane, n: int, path: Path, view: LiveView | None) -> None:
        self.board, self.lane, self.n, self.view = board, lane, n, view
        self.tail: Tail | None = None
        self.path = path
        self.tally = Tally()
        self.last_call: LLMCall | None = None  # the last call read: whom and what the seats think about
        self.quest = self.attempt = 0
        self.pending: dict[tuple[int, Any], float] = {}  # (seat, kind) -> since when (the bar reads it: no lock)
        self.quiet_since = board.clock()  # since when nothing was asked or told

    def waiting(self, request: ActionRequest) -> None:
        self.pending[(request.seat, request.kind)] = self.board.clock()
        if self.view is not None:
            self.view.waiting(request)

    def answered(self, request: ActionRequest) -> None:
        self.pending.pop((request.seat, request.kind), None)
        self.quiet_since = self.board.clock()
        if self.view is not None:
            self.view.answered(request)
        self.board.moved()

    def tracing(self, records: Sequence[Any]) -> None:
        """The calls are read from the game's trace.jsonl as it grows (`poll`), as for every game of a run."""

    def delivered(self, events: Sequence[GameEvent]) -> None:
        if self.tail is None:  # the recorder has started the game's files (an earlier attempt's put aside)
            self.tail = Tail.of(self.path)
        last = events[-1]
        self.quest, self.attempt = last.quest, last.attempt
        self.quiet_since = self.board.clock()
        if self.view is not None:
            with self.board.lock:  # the decisions a fallback made are traced before their events: marked on them
                self.poll()
            self.view.delivered(events)
        self.board.moved()

    def poll(self) -> None:
        if self.tail is not None:
            records = new_records(self.tail)
            calls = [r for r in records if isinstance(r, LLMCall)]
            self.tally.add(calls)
            self.last_call = calls[-1] if calls else self.last_call
            if self.view is not None and (decided := fell_back(records)):
                self.view.decided |= decided

    def share(self, per_game: float | None) -> float:
        """How far into the game it is (0 to 0.95): its calls of those a game takes, else its quests."""
        if per_game and self.tally.calls:
            return min(0.95, self.tally.calls / per_game)
        return min(0.95, max(0, self.quest - 1) * ROUND_SHARE)

    def where(self) -> str:
        """'quest 2.3' (the transcript's: quest 2, its third proposal), or 'starting'."""
        return f"quest {self.quest}.{self.attempt}" if self.quest else "starting"

    def waited_for(self) -> str:
        """Whom the game waits for ('waiting for Player 4 to vote, 6 s'; while every seat prepares a round, is
        probed or learns, nothing asked or told for THINKING seconds, the step and seat of the last call read:
        'the seats think: Player 3's planning, 40 s'). Kept here, not read from the view, whose lock its printing
        holds while the bar is drawn."""
        pending, now = dict(self.pending), self.board.clock()
        if pending:
            return waiting_line(list(pending), now - min(pending.values()))
        quiet = now - self.quiet_since
        if not self.quest or quiet < THINKING:
            return ""
        return thinking_line(self.last_call, quiet)


class RunBoard:
    """The bars of a run: all games, and each lane of several games; see the module's docstring.

    Args:
        progress: the rich Progress drawn on stderr.
        total: the study's games; done: those finished before this run.
        to_play: the games this run plays (None: all unfinished).
        per_game: LLM calls a game is expected to take (the plan's estimate; the run's measured mean replaces it
            once a game finished); None: unknown.
        planned_seconds: the least seconds a game is planned to take (the plan's time: the bar's time left, marked
            "planned", until a call of the run was answered); None: unknown.
        stream: stream each game's transcript (a prefix names the game when the run plays several).
        plain: where a progress line goes every PLAIN_EVERY seconds and at each game's start and end (stderr when it
            is no terminal: the bar is not drawn there); None: none.
    """

    def __init__(self, progress: Progress, total: int, done: int, to_play: int | None = None,
                 per_game: float | None = None, stream: bool = False, clock: Any = time.monotonic,
                 planned_seconds: float | None = None, plain: Any = None, every: float = PLAIN_EVERY) -> None:
        self.progress, self.total, self.done = progress, total, done
        self.planned_seconds = planned_seconds
        self.to_play = total - done if to_play is None else to_play
        self.estimate, self.stream, self.clock = per_game, stream, clock
        self.tally = Tally()  # of the games finished in this run
        self.finished_calls: list[int] = []
        self.playing: dict[str, GameFollower] = {}  # by lane
        self.started = clock()
        self.polled = 0.0
        self.lock = threading.RLock()
        self.overall = progress.add_task("all games", total=total, completed=done)
        self.bars: dict[str, int] = {}
        self.first_answer: tuple[float, int] | None = None  # when the run's first call was answered, calls then
        self.plain, self.every = plain, every
        self._quiet = threading.Event()
        self._liner: threading.Thread | None = None

    # ------------------------------------------------------------------ progress lines where no bar is drawn

    def plain_line(self) -> None:
        """Print the progress line (`plain`): the games done, the bar's words and the time left."""
        if self.plain is None:
            return
        with self.lock:
            status = self.status(self.overall)
            line = f"{self.done} of {self.total} games" + (f", {status}" if status else "") + f"; {self.left_text()}"
        self.plain.write(line + "\n")
        self.plain.flush()

    def _lines(self) -> None:
        while not self._quiet.wait(self.every):
            if not self.progress.live.is_started:  # the run has stopped, however it ended
                return
            self.plain_line()

    # ------------------------------------------------------------------ the scheduler's hooks

    def on_start(self, lane: Lane, n: int, path: Path) -> GameFollower:
        view = None
        if self.stream:
            prefix = f"[{lane.game_label(n)}] " if self.to_play > 1 else ""
            view = LiveView(out=sys.stdout, prefix=prefix)  # stdout as now (the bar's, while it is drawn)
        follower = GameFollower(self, lane, n, path, view)
        with self.lock:
            self.playing[lane.label] = follower
            if len(lane.paths) > 1 and lane.label not in self.bars:
                self.bars[lane.label] = self.progress.add_task(lane.label, total=len(lane.paths), completed=n - 1)
        if self.plain is not None:
            self.plain_line()
            if self._liner is None:  # a daemon: a run that stops at once leaves nothing to join
                self._liner = threading.Thread(target=self._lines, name="progress-lines", daemon=True)
                self._liner.start()
        return follower

    def on_game(self, lane: Lane, n: int, path: Path) -> None:
        with self.lock:
            follower = self.playing.pop(lane.label, None)
            if follower is not None:
                follower.poll()
                self.tally.calls += follower.tally.calls
                self.tally.replayed += follower.tally.replayed
                self.tally.tokens += follower.tally.tokens
                self.tally.seconds += follower.tally.seconds
                self.finished_calls.append(follower.tally.calls)
            self.done += 1
            self.to_play = max(0, self.to_play - 1)
            if lane.label in self.bars:
                self.progress.update(self.bars[lane.label], completed=n)
        self.moved()
        self.plain_line()
        if not self.to_play:
            self._quiet.set()

    # ------------------------------------------------------------------ what the bars say

    def moved(self) -> None:
        """Something happened in a game: read the new calls, move the bars."""
        with self.lock:
            self.polled = self.clock()
            for follower in self.playing.values():
                follower.poll()
            if self.first_answer is None and (asked := self.calls().calls - self.calls().replayed):
                self.first_answer = (self.polled, asked)
            share = sum(f.share(self.per_game()) for f in self.playing.values())
            self.progress.update(self.overall, completed=self.done + share)
            for label, bar in self.bars.items():
                follower = self.playing.get(label)
                if follower is not None:
                    self.progress.update(bar, completed=follower.n - 1 + follower.share(self.per_game()))

    def poll(self) -> None:
        """While the bar is drawn: read the games' new calls every POLL seconds (a round's preparation makes
        many calls and no event)."""
        if self.clock() - self.polled >= POLL:
            self.moved()

    def per_game(self) -> float | None:
        """Calls per game: the mean of this run's finished games, else the plan's estimate."""
        if self.finished_calls and any(self.finished_calls):
            return sum(self.finished_calls) / len(self.finished_calls)
        return self.estimate

    def calls(self) -> Tally:
        """Every call of this run so far (finished games and those playing)."""
        found = Tally()
        for tally in [self.tally, *(f.tally for f in self.playing.values())]:
            found.calls += tally.calls
            found.replayed += tally.replayed
            found.tokens += tally.tokens
            found.seconds += tally.seconds
        return found

    def status(self, task_id: int) -> str:
        """The words after a bar: where its game is and whom it waits for; on the overall bar also the calls, their
        pace and the tokens ('quest 2.1, 48 calls, 2.7 s/call, 61k tokens; waiting for Player 3 to vote, 4 s')."""
        with self.lock:
            if task_id != self.overall:
                follower = next((f for label, f in self.playing.items() if self.bars.get(label) == task_id), None)
                if follower is None:
                    return ""
                waiting = follower.waited_for()
                return follower.where() + (f"; {waiting}" if waiting else "")
            games = list(self.playing.values())
            parts = [games[0].where()] if len(games) == 1 else [f"{len(games)} games playing"] if games else []
            t = self.calls()
            asked = t.calls - t.replayed
            if t.calls:
                parts.append(f"{t.calls:,} calls" + (f" ({t.replayed:,} replayed)" if t.replayed else ""))
            if asked:
                pace = t.seconds / asked
                parts.append(f"{pace:.1f} s/call" if pace >= 1 else f"{pace:.2f} s/call")
            if t.tokens:
                parts.append(f"{t.tokens / 1000:,.0f}k tokens" if t.tokens >= 10_000 else f"{t.tokens:,} tokens")
            waiting = games[0].waited_for() if len(games) == 1 else ""  # several: each lane's bar
            return ", ".join(parts) + (f"; {waiting}" if waiting else "")

    def planned_left(self) -> float | None:
        """Seconds left by the plan (its seconds per game for the games still to play, less the time since the
        run began); None: no plan, or past it."""
        if not self.planned_seconds:
            return None
        left = self.planned_seconds * self.to_play - (self.clock() - self.started)
        return left if left > 0 else None

    def left(self) -> float | None:
        """Seconds left at the run's stable pace (wall seconds per call answered since the run's first answer, once
        STABLE_CALLS were: the wait for the first, a model loading, is no call's pace) for the calls still expected
        (calls per game x games left, less those the games playing made); None: no stable pace yet."""
        with self.lock:
            t = self.calls()
            asked = t.calls - t.replayed
            per_game = self.per_game()
            if not asked or not per_game or self.first_answer is None:
                return None
            since, before = self.first_answer
            if asked - before < STABLE_CALLS:
                return None
            made = sum(f.tally.calls for f in self.playing.values())
            remaining = max(0.0, per_game * self.to_play - made)
            return remaining * (self.clock() - since) / (asked - before)

    def left_text(self) -> str:
        """The time left in words: at the stable pace ('12 min left'), else the plan's ('~12 min left
        (planned)') until a call is answered, else 'time left unknown yet'."""
        seconds = self.left()
        if seconds is not None:
            return f"{_duration(seconds)} left"
        if self.first_answer is None and (planned := self.planned_left()) is not None:
            return f"~{_duration(planned)} left (planned)"
        return "time left unknown yet"


class LeftColumn(ProgressColumn):
    """The time left at the measured pace (the overall bar; a lane's bar shows none)."""

    def __init__(self, board: RunBoard | None = None) -> None:
        super().__init__()
        self.board = board

    def render(self, task: Task) -> Text:
        board = self.board
        if board is None or task.id != board.overall or task.finished:
            return Text("")
        board.poll()
        return Text(board.left_text(), style="progress.remaining")


class StatusColumn(ProgressColumn):
    def __init__(self, board: RunBoard | None = None) -> None:
        super().__init__()
        self.board = board

    def render(self, task: Task) -> Text:
        return Text(self.board.status(task.id) if self.board is not None else "")


def run_board(total: int, done: int, to_play: int | None, pace: tuple[float, float | None] | None, stream: bool,
              console: Console | None = None) -> RunBoard:
    """A RunBoard on a Progress of its own (on stderr), `pace` the (calls, least seconds) a game is planned to take;
    start it with `with board.progress:`."""
    per_game, planned_seconds = pace or (None, None)
    left, status = LeftColumn(), StatusColumn()
    console = console or Console(stderr=True)
    progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=20), MofNCompleteColumn(), left,
                        status, console=console)
    board = RunBoard(progress, total, done, to_play, per_game, stream, planned_seconds=planned_seconds,
                     plain=None if console.is_terminal else console.file)
    left.board = status.board = board
    return board


def _duration(seconds: float) -> str:
    from avalon_agents.experiments.plan import duration

    return duration(seconds)
