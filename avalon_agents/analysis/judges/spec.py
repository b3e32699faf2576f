"""What a judge is: one `JudgeSpec` per judge, declared once (the registry is `analysis.judges.registry`).

A `JudgeSpec` holds, for one judge:

- `name`: the judge's name (its table, its cache entries, the `name` of its calls in the trace),
- `prompt`: its prompt file under `prompts/` (e.g. `judges/camouflage`),
- `labels`: the labels an answer may give (empty where the answer is seats or a yes/no),
- `schema(subjects)`: the JSON schema its answer is asked to follow (the answer model),
- `parse(raw, subjects)`: the lenient reading of an answer, a dict with `valid` (an empty answer reads as an
  unreadable one),
- `ask(speech)`: whether it judges a speech (or a labelled chat message) and the prompt's values (an `Ask`),
- `columns` and `rows(base, parsed, subjects, roles)`: its table's columns and the rows of one judgment,
- `analyze`: whether `Judge.tasks` asks it about every speech of a run (the behavior metrics); the judges of
  Avalon-NLU's labels are asked only by `avalon calibrate`,
- `figures`: the report's figures of its table (`JudgeFigure`: the summary table and how it is drawn),
- `humans`: how `avalon calibrate` compares it with people's labels of chat messages (`HumanLabels`; None: none).

`subjects` are the seats a judgment is about (the other players for teamwork, the known seats for sharing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from avalon_agents.analysis.load import RunData

SPEECH_COLUMNS = ["game", "variant", "series", "game_index", "seq", "quest", "attempt", "seat", "role", "side",
                  "kind", "agent"]
"""The columns of a speech every judged row starts with."""
Roles = dict[tuple[str, int], tuple[str, str]]
"""(game, seat) -> (role, side)."""


@dataclass(frozen=True)
class Speech:
    """A speech (or a labelled chat message) to judge, with what the records say around it.

    Attributes:
        row: its record columns (SPEECH_COLUMNS, or a message's columns).
        speaker: "Player N".
        text: the speech as a JSON string literal (unforgeable: it cannot close its own quotes).
        roles: the game's role of every seat.
        night: the speaker's night information, [(known_as, seats), ...].
        round: its round's leader, team size and proposals (`context.rounds`), if known.
    """

    row: dict[str, Any]
    speaker: str
    text: str
    roles: dict[int, str]
    night: list[tuple[str, tuple[int, ...]]]
    round: dict[str, Any] | None = None

    @property
    def others(self) -> tuple[int, ...]:
        """The game's other seats, in order."""
        return tuple(s for s in sorted(self.roles) if s != int(self.row["seat"]))


@dataclass(frozen=True)
class Ask:
    """A judgment to make about a speech: the prompt's values, its subjects, columns added to its row."""

    values: dict[str, Any]
    subjects: tuple[int, ...] = ()
    row: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeFigure:
    """A report figure of a judge's table: `summary(judged, data)` gives the table `table`
    (metrics/<table>.csv), `draw(table)` the figure; `name` is the report's section and figures/<name>.png."""

    name: str
    title: str
    table: str
    summary: Callable[[pd.DataFrame, RunData], pd.DataFrame]
    draw: Callable[[pd.DataFrame], Figure]


@dataclass(frozen=True)
class HumanLabels:
    """How a judge is held to people's labels of chat messages (`avalon calibrate`, docs/humans.md).

    Attributes:
        classes: the classes compared, in the order of the confusion matrix.
        against: what the judge's answers are compared with, in words.
        truth: a labelled message's row (its `persuasion` and `deception` labels) -> its class.
        guess: the judge's parsed answer (its `parse`, valid) -> its class, None for an answer it cannot place.
    """

    classes: tuple[str, ...]
    against: str
    truth: Callable[[dict[str, Any]], str]
    guess: Callable[[dict[str, Any]], str | None]


def one_row(base: dict[str, Any], parsed: dict[str, Any], subjects: tuple[int, ...],
            roles: Roles) -> list[dict[str, Any]]:
    """A judgment's row: the speech's columns and the parsed answer."""
    return [{**base, **parsed}]


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    prompt: str
    labels: tuple[str, ...]
    schema: Callable[[tuple[int, ...]], dict[str, Any]]
    parse: Callable[[str, tuple[int, ...]], dict[str, Any]]
    ask: Callable[[Speech], Ask | None]
    columns: tuple[str, ...]
    rows: Callable[[dict[str, Any], dict[str, Any], tuple[int, ...], Roles], list[dict[str, Any]]] = one_row
    analyze: bool = True
    figures: tuple[JudgeFigure, ...] = ()
    humans: HumanLabels | None = None
    """How `avalon calibrate` compares it with people's labels (None: it has none to be held to)."""
