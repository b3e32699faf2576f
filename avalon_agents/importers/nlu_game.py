"""What an importer needs beside its own format: the reason a game is skipped, the engine driven by recorded
actions (each checked against the rules), the game directory it writes, and the import's report."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avalon_agents import __version__
from avalon_agents.core.actions import Action, ActionRequest, IllegalAction, RequestKind
from avalon_agents.core.events import GameEvent
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role, Seat
from avalon_agents.engine import AvalonEngine
from avalon_agents.records.run_dir import HEALTH, GameRecorder, write_json_atomic
from avalon_agents.records.trace import Record
from avalon_agents.records.usage import usage

HUMAN = "human"
"""The agent kind of every imported seat."""
REPORT = "import.json"
"""The import's report in the output folder: the games imported, and each one skipped with its reason."""


class Skip(ValueError):
    """A game that cannot be imported; the message says why, in one line."""


class Replay:
    """An engine driven by recorded actions. Each action goes through the rules; one they refuse, or a step the
    log has where the rules ask for another, skips the game (`Skip`, naming the quest and attempt)."""

    def __init__(self, rules: RuleSet, deal: Sequence[Role]) -> None:
        try:
            self.engine = AvalonEngine(rules, seed=0, deal=deal)
        except ValueError as exc:
            raise Skip(str(exc)) from None
        self.events: list[GameEvent] = list(self.engine.events)

    @property
    def where(self) -> str:
        return f"quest {self.engine.quest}, proposal {self.engine.attempt}"

    def asked(self, kind: RequestKind, what: str) -> list[ActionRequest]:
        """The pending requests, which must be of `kind` (`what` the log has there, for the message)."""
        requests = self.engine.pending()
        if self.engine.is_over:
            raise Skip(f"{self.where}: the log has {what} after the game ended by the rules")
        if not requests or requests[0].kind is not kind:
            asked = requests[0].kind.value if requests else "nothing"
            raise Skip(f"{self.where}: the log has {what} where the rules ask for {asked}")
        return requests

    def submit(self, seat: Seat, action: Action) -> list[GameEvent]:
        try:
            new = self.engine.submit(seat, action)
        except IllegalAction as exc:
            raise Skip(f"{self.where}: {exc}") from None
        self.events += new
        return new


def write_game(path: Path, replay: Replay, meta: dict[str, Any], records: Iterable[Record]) -> None:
    """Write a finished replay as a game directory (every seat of kind `human`), with its trace records."""
    engine = replay.engine
    recorder = GameRecorder(path)
    recorder.write_meta({"version": __version__, "seed": engine.seed, "rules": engine.rules.model_dump(mode="json"),
                         "seats": dict.fromkeys(engine.rules.seats, HUMAN), **meta})
    recorder.append_events(replay.events)
    for record in records:
        recorder.trace(record)
    recorder.write_result(engine.result())
    write_json_atomic(Path(path) / HEALTH, usage(recorder.records))


@dataclass
class ImportReport:
    """What an import did: each game imported (its file and directory), each skipped (its file and why), the
    annotation records written by kind, and notes on what was mapped or dropped."""

    source: str
    imported: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    annotations: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source,
                "imported": [{"file": f, "game": g} for f, g in self.imported],
                "skipped": [{"file": f, "reason": r} for f, r in self.skipped],
                "annotations": dict(self.annotations), "notes": self.notes}

    def write(self, out: Path) -> None:
        write_json_atomic(Path(out) / REPORT, self.as_dict())

    def lines(self) -> list[str]:
        """The report as a person reads it."""
        total = len(self.imported) + len(self.skipped)
        out = [f"imported {len(self.imported)} of {total} game(s) from {self.source}"]
        out += [f"skipped {f}: {r}" for f, r in self.skipped]
        if self.annotations:
            out.append("annotations: " + ", ".join(f"{n:,} {k}" for k, n in sorted(self.annotations.items())))
        out += [f"note: {n}" for n in self.notes]
        return out
