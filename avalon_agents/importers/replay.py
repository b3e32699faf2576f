"""Replay a recorded game through the engine, then write it as an ordinary game directory.

An importer reads its format and calls `Replay` step by step with what was recorded (proposals, votes, quest
cards, the assassination, speeches if there are any). Every action goes through `AvalonEngine.submit`, so a
game the rules refuse, or one that stops before its end, raises `ReplayError` with a one-line reason. A
finished replay is written by `write_game` through the recorder a played game is written with
(records.recorder): started with its meta and seating, its events and trace records appended, finished with its
result and health.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avalon_agents import __version__
from avalon_agents.core.actions import (
    Action,
    ActionRequest,
    Assassinate,
    IllegalAction,
    ProposeTeam,
    QuestCard,
    RequestKind,
    Speak,
    Vote,
)
from avalon_agents.core.events import GameEvent, GameResult, QuestCompleted, VotesRevealed
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role, Seat, seat_name
from avalon_agents.engine import AvalonEngine
from avalon_agents.records import GameRecorder, write_json_atomic
from avalon_agents.records.run_dir import IMPORT_REPORT, Seating, game_dir
from avalon_agents.records.run_record import read_run_record, write_run_record
from avalon_agents.records.trace import Record

NO_SPEECH = ""
"""The speech of a seat whose record holds none (logs without chat): the engine's discussion step asks every
seat to speak, and an empty text tells analysis it was not a speech (`data.speeches["text"] == ""`)."""
KIND = "human"
"""The agent kind of every imported seat."""


@dataclass
class ImportReport:
    """What an import did: each game imported (its file and directory), each file skipped (its name and why),
    the annotation records written by kind, and notes on what was mapped or dropped."""

    source: str = ""
    imported: list[tuple[str, Path]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    annotations: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source,
                "imported": [{"file": f, "game": Path(g).name} for f, g in self.imported],
                "skipped": [{"file": f, "reason": r} for f, r in self.skipped],
                "annotations": dict(self.annotations), "notes": self.notes}

    def write(self, out: Path) -> None:
        write_json_atomic(Path(out) / IMPORT_REPORT, self.as_dict())

    def lines(self) -> list[str]:
        """The report as a person reads it."""
        total = len(self.imported) + len(self.skipped)
        out = [f"imported {len(self.imported)} of {total} game(s) from {self.source}"]
        out += [f"skipped {f}: {r}" for f, r in self.skipped]
        if self.annotations:
            out.append("annotations: " + ", ".join(f"{n:,} {k}" for k, n in sorted(self.annotations.items())))
        out += [f"note: {n}" for n in self.notes]
        return out


@dataclass(frozen=True)
class Importer:
    """One format's importer, declared once: `avalon import NAME FOLDER --out RUN` is made of it (cli/imports.py
    iterates `importers.IMPORTERS`)."""

    name: str
    """The format's name: the `avalon import` subcommand."""
    help: str
    """The subcommand's help (its first line is the summary `avalon import --help` lists)."""
    argument: str
    """What FOLDER holds, as the subcommand names it ("dir", "dataset"): its one-line errors start with it."""
    log_files: Callable[[Path], list[Path]]
    """The folder's game logs, in the order they are numbered (none: the folder holds no game logs)."""
    import_logs: Callable[..., ImportReport]
    """`(files, out, on_file=None, root=None)`: replay each log and write the games the rules accept as
    OUT/game-NNNNN; `on_file(path)` after each file (a progress bar), `root` the folder file names are relative to."""


class ReplayError(ValueError):
    """A recorded game that cannot be imported; the message says why in one line."""


class Replay:
    """Drives an `AvalonEngine` with recorded actions.

    Args:
        rules: the rules the game was played by (its `first_leader` is replaced by `first_leader`).
        deal: each seat's role, in seat order.
        first_leader: the seat that proposed first (None: the rules').
        seed: the engine's seed (with a fixed deal and first leader it changes nothing of the game).

    Raises:
        ReplayError: the deal or the first leader does not fit the rules.
    """

    def __init__(self, rules: RuleSet, deal: Sequence[Role], first_leader: Seat | None = None,
                 seed: int = 0) -> None:
        first_leader = rules.first_leader if first_leader is None else first_leader
        if not 1 <= first_leader <= rules.players:
            raise ReplayError(f"first leader: seat {first_leader} is not a seat of a {rules.players}-player game")
        self.rules = rules.model_copy(update={"first_leader": first_leader})
        try:
            self.engine = AvalonEngine(self.rules, seed, deal=deal)
        except ValueError as exc:
            raise ReplayError(str(exc).splitlines()[0]) from None

    @property
    def where(self) -> str:
        """The engine's place, as reasons name it: "quest 2.3" (quest 2, its third proposal)."""
        return f"quest {self.engine.quest}.{self.engine.attempt}"

    @property
    def events(self) -> list[GameEvent]:
        """Every event so far."""
        return list(self.engine.events)

    def asked(self, kind: RequestKind, what: str) -> list[ActionRequest]:
        """The pending requests, which must be of `kind` (`what`: what the record has there, for the reason)."""
        if self.engine.is_over:
            raise ReplayError(f"{self.where}: the record has {what} after the game ended by the rules")
        requests = self.engine.pending()
        if requests[0].kind is not kind:
            raise ReplayError(f"{self.where}: the record has {what} where the rules ask for a "
                              f"{requests[0].kind.value}")
        return requests

    def speak(self, seat: Seat, text: str) -> None:
        """A recorded speech (the engine must be asking `seat` to speak)."""
        self._expect(RequestKind.SPEAK)
        self.submit(seat, Speak(text=text))

    def skip_speeches(self) -> None:
        """Answer every speech the engine asks for now with `NO_SPEECH`, until it asks for something else."""
        while not self.engine.is_over and self._asked() is RequestKind.SPEAK:
            self.submit(self.engine.pending()[0].seat, Speak(text=NO_SPEECH))

    def propose(self, leader: Seat, team: Collection[Seat]) -> None:
        """`leader` names `team` (speeches not recorded before it are skipped)."""
        self.skip_speeches()
        self._expect(RequestKind.PROPOSE)
        if leader != self.engine.leader:
            raise ReplayError(f"{self.where}: {seat_name(leader)} proposes, but the leader is "
                              f"{seat_name(self.engine.leader)}")
        self.submit(leader, ProposeTeam(team=tuple(sorted(team))))

    def vote(self, approvals: Collection[Seat]) -> bool:
        """Every seat votes, those in `approvals` for the team; returns whether the rules approve it."""
        self.skip_speeches()
        self._expect(RequestKind.VOTE)
        unknown = sorted(set(approvals) - set(self.rules.seats))
        if unknown:
            raise ReplayError(f"{self.where}: approvals by seats {unknown}, not seats of this game")
        new = []
        for request in self.engine.pending():
            new += self.submit(request.seat, Vote(approve=request.seat in approvals))
        return next(e.approved for e in new if isinstance(e, VotesRevealed))

    def quest(self, cards: Mapping[Seat, bool]) -> QuestCompleted:
        """The team plays its cards (True: success); returns the quest's outcome."""
        self._expect(RequestKind.QUEST)
        team = sorted(r.seat for r in self.engine.pending())
        if sorted(cards) != team:
            raise ReplayError(f"{self.where}: quest cards recorded for seats {sorted(cards)}, but the team is "
                              f"{team}")
        new = []
        for seat in team:
            new += self.submit(seat, QuestCard(success=cards[seat]))
        return next(e for e in new if isinstance(e, QuestCompleted))

    def assassinate(self, target: Seat | None) -> None:
        """The assassination (None: the holder holds off, where the rules allow it)."""
        self._expect(RequestKind.ASSASSINATE)
        self.submit(self.engine.pending()[0].seat, Assassinate(target=target))

    @property
    def asks(self) -> RequestKind | None:
        """What the engine asks for now (None: the game is over)."""
        return None if self.engine.is_over else self._asked()

    def result(self) -> GameResult:
        """The finished game's result. Raises ReplayError if the record stopped before the end."""
        if not self.engine.is_over:
            raise ReplayError(f"unfinished game: the record stops at {self.where}, where the rules ask for "
                              f"a {self._asked().value}")
        return self.engine.result()

    def _asked(self) -> RequestKind:
        return self.engine.pending()[0].kind

    def _expect(self, kind: RequestKind) -> None:
        if self.engine.is_over:
            raise ReplayError(f"the record goes on after the game ended ({self.engine.result().reason.value}): "
                              f"a {kind.value} follows")
        if self._asked() is not kind:
            raise ReplayError(f"{self.where}: the record has a {kind.value}, but the rules ask for a "
                              f"{self._asked().value}")

    def submit(self, seat: Seat, action: Action) -> list[GameEvent]:
        """Any recorded action, through the rules; returns the new events."""
        try:
            return self.engine.submit(seat, action)
        except IllegalAction as exc:
            raise ReplayError(f"{self.where}: the rules refuse it ({exc})") from None


def write_game(out: Path, replay: Replay, *, variant: str, index: int, source: Mapping[str, Any],
               records: Iterable[Record] = ()) -> Path:
    """Write a finished replay as game `index` of the run directory `out`, as a played game is written.

    Args:
        out: the run directory (the game's directory is made in it, records.run_dir.game_dir).
        replay: a replay whose game is over.
        variant: the run's variant name in analysis (e.g. the importer's name).
        index: the game's number in the run (its directory, and its seating's `game`).
        source: where the game came from, kept in its meta under `source` (format, file, ...).
        records: trace records to keep with it (e.g. a dataset's labels as `annotation` records).

    Returns:
        The game's directory.
    """
    if read_run_record(out) is None:  # the import's run record (records.run_record), before its first game
        write_run_record(out, "import", Path(out).name, {"format": source.get("format", variant)})
    result = replay.result()
    rules = replay.rules
    kinds = {seat: KIND for seat in rules.seats}
    recorder = GameRecorder(game_dir(out, index), seating=Seating(agents=kinds, series=1, game=index,
                                                                  variant=variant, seed=replay.engine.seed))
    try:
        recorder.start({"version": __version__, "seed": replay.engine.seed, "rules": rules.model_dump(mode="json"),
                        "seats": kinds, "probes": False, "source": dict(source)})
        recorder.append_events(replay.engine.events)
        for record in records:
            recorder.trace(record)
        recorder.finish(result)
    finally:
        recorder.close()
    return recorder.path
