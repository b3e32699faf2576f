"""Imported human games read for the belief probes (`avalon probe-humans`): each game's rules, events, true roles
and the beliefs its players stated (Avalon-NLU `belief` labels), and the probes' answers as rows with the truth
attached. Asking the probes is the host's (`host.human_probes`); scoring them is `humans.scores`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avalon_agents.core.events import GameEvent
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role, Seat
from avalon_agents.records.run_dir import read_events, read_meta, read_result, read_trace
from avalon_agents.records.trace import Annotation
from avalon_agents.records.walk import finished_games

Progress = Callable[[int, int], None]


@dataclass
class HumanGame:
    """An imported game, read: its folder name, rules, events, true roles and stated beliefs."""

    name: str
    source: str
    file: str
    rules: RuleSet
    events: list[GameEvent]
    roles: dict[Seat, Role]
    beliefs: list[Annotation]

    @property
    def quest_ends(self) -> list[GameEvent]:
        """The `quest_completed` events: the probe points."""
        return [e for e in self.events if e.type == "quest_completed"]


def imported_games(run: Path, limit: int | None = None) -> list[HumanGame]:
    """The imported games of `run` (folders `game-*` whose meta.json says where they came from), in order;
    the first `limit` only if given.

    Raises:
        ValueError: `run` is not a folder, holds no game, or holds games that were not imported (one line).
    """
    run = Path(run)
    if not run.is_dir():
        raise ValueError(f"run: {run} is not a folder")
    dirs = [d for d in finished_games(run) if d.parent == run]
    if not dirs:
        raise ValueError(f"run: no finished games in {run} (import some: avalon import avalon-nlu DATASET --out RUN)")
    games = []
    for d in dirs:
        meta = read_meta(d)
        imported = meta.source
        if not imported:
            raise ValueError(f"run: {d.name} is not an imported human game (made by avalon import)")
        source = imported.get("format", "") if isinstance(imported, dict) else str(imported)
        file = imported.get("file", "") if isinstance(imported, dict) else ""
        roles = {int(s): Role(r) for s, r in read_result(d).roles.items()}
        beliefs = [r for r in read_trace(d) if isinstance(r, Annotation) and r.kind == "belief"]
        games.append(HumanGame(name=d.name, source=source, file=file, rules=RuleSet.model_validate(meta.rules),
                               events=read_events(d), roles=roles, beliefs=beliefs))
    return games[:limit] if limit is not None else games


@dataclass
class Asked:
    """One probe: the game, seat and quest, the answer read, and whether the history was cut to fit."""

    game: str
    seat: Seat
    quest: int
    end: int
    merlin_guess: int | None
    p_evil: dict[str, float]
    valid: bool
    raw: str | None
    cut: bool
    cached: bool


def answers_to_rows(games: Sequence[HumanGame], asked: Sequence[Asked]) -> list[dict[str, Any]]:
    """The probes as rows with the truth attached (what `scores.score_rows` takes)."""
    by_name = {g.name: g for g in games}
    rows = []
    for a in asked:
        g = by_name[a.game]
        evil = sorted(s for s, r in g.roles.items() if r.side.value == "evil")
        merlin = next((s for s, r in g.roles.items() if r is Role.MERLIN), None)
        role = g.roles[a.seat]
        rows.append({"game": a.game, "file": g.file, "seat": a.seat, "role": role.value, "side": role.side.value,
                     "quest": a.quest, "end_seq": a.end, "valid": a.valid, "merlin_guess": a.merlin_guess,
                     "p_evil": dict(a.p_evil), "merlin_seat": merlin, "evil_seats": evil, "history_cut": a.cut,
                     "cached": a.cached, "raw": a.raw})
    return rows
