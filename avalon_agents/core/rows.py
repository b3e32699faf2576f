"""What a game's records give the analysis tables, in plain Python (no pandas).

Each event type (core/events.py) and each trace record type (records/trace.py) declares its own rows:
`rows(self, game)` returns them by table name (`Rows`), built with `game` (a `GameRows`: the game's place in its
run, its seats' columns, the proposal waiting for its vote); `rows = no_rows` declares none (an event's row of the
events table is every event's, made by analysis.load). A type in either union that declares nothing is refused at
import, in one line (`check_declared`); analysis.load refuses rows for a table it does not make, in one line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from avalon_agents.core.types import Role

Row = dict[str, Any]
Rows = dict[str, list[Row]]
"""Rows by table name (analysis.load.RunData's fields: "speeches", "calls", ...)."""

SEAT_COLUMNS = ["role", "side", "kind", "agent"]
"""The columns a row about a seat carries: its role, side, agent kind and agent name."""


def no_rows(self: Any, game: GameRows) -> Rows:
    """None (an event's row of the events table aside)."""
    return {}


class GameRows:
    """One game as the row builders see it.

    Attributes:
        place: the columns every row of the game starts with (game, variant, series, game_index).
        seats: each seat's SEAT_COLUMNS.
        rules: the game's rules (meta.json's `rules`).
        evil: the evil seats, sorted; merlin: Merlin's seat (None without one).
        pending: the proposals row of the team waiting for its vote (TeamProposed sets it, VotesRevealed ends it).
    """

    def __init__(self, place: Row, seats: dict[int, Row], rules: Mapping[str, Any]) -> None:
        self.place = place
        self.seats = seats
        self.rules = rules
        self.evil = sorted(s for s, info in seats.items() if info["side"] == "evil")
        self.merlin = next((s for s, info in seats.items() if info["role"] == Role.MERLIN.value), None)
        self.pending: Row | None = None

    def seat_row(self, seat: int | None, record: Row) -> Row:
        """A row about `seat`: the game's place, `record`, the seat and its columns (None for a seat not dealt)."""
        info = self.seats.get(seat, dict.fromkeys(SEAT_COLUMNS)) if seat is not None else dict.fromkeys(SEAT_COLUMNS)
        return {**self.place, **record, "seat": seat, **info}

    def column(self, seat: int | None, name: str) -> Any:
        """One of a seat's columns (None for a seat not dealt)."""
        return self.seats[seat][name] if seat in self.seats else None

    def clean(self, team: Iterable[int]) -> bool:
        """No evil seat on `team`."""
        return not set(team) & set(self.evil)


def check_declared(types: Iterable[type], what: str) -> None:
    """Refuse, in one line, the first of `types` (a union's members) that declares no rows of its own."""
    for cls in types:
        if "rows" not in vars(cls):
            raise TypeError(f"{what} type {cls.__name__} declares no rows: give it rows(self, game) returning its "
                            "rows by table name, or `rows = no_rows` (core/rows.py)")
