"""Checks every input gets where it enters, declared once: names that become folder names, seeds, counts.

`Name` is the one type of every name the framework uses as a path component (an experiment's name, its
variants, its agents and a tournament's entrants, the red team's attacks): letters, digits, `_`, `.` and `-`,
starting with a letter or digit, at most 64 characters, never `..`, so no name reaches outside the run
directory. `Seed` is a game seed: from 0 to SEED_MAX (Python's `random` seeds a negative integer as its
absolute value, so -3 and 3 would play the same game). `Count` is a number of things that cannot be
negative. The command line takes the same ranges (MAX_GAMES, SEED_MAX).
"""

from __future__ import annotations

import re
import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import AfterValidator, Field

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
SEED_MAX = 2**32 - 1
"""The largest seed (the seeds of numpy's and most providers' generators are 32-bit)."""
MAX_GAMES = 1_000_000
"""The most games one command plays (`--games`)."""
MAX_PAIRS = 100_000
"""The most paired games per attack or list of `avalon redteam` and `avalon bias` (`--games`)."""


def check_name(name: str) -> str:
    """`name`, if it can be a folder name under the run directory. Raises ValueError saying what a name is."""
    if not NAME.match(name) or ".." in name:
        raise ValueError(f"{name!r} is not a name (letters, digits, _ . -, starting with a letter or digit, at "
                         "most 64 characters, no '..'): it names a folder")
    return name


def refuse_reserved(name: str, reserved: dict[str, str]) -> str:
    """`name`, unless the framework uses it itself (`reserved`: name -> what for). Raises ValueError naming why."""
    if name in reserved:
        raise ValueError(f"{name!r} is reserved ({reserved[name]}); choose another name")
    return name


Name = Annotated[str, AfterValidator(check_name)]
Seed = Annotated[int, Field(ge=0, le=SEED_MAX, description=f"a game seed, 0 to {SEED_MAX}")]
Count = Annotated[int, Field(ge=0)]


def _numeric(annotation: Any) -> bool:
    """Whether a field's type takes a number and not a boolean (`int`, `float`, `int | None`, ...)."""
    if get_origin(annotation) in (Union, types.UnionType):
        members = get_args(annotation)
        return bool not in members and any(_numeric(member) for member in members)
    return annotation in (int, float)


def no_bool_number(value: Any, annotation: Any) -> Any:
    """`value`, unless it is true/false where a number is meant (YAML's `seed: true` would otherwise play seed 1).
    Raises ValueError saying so."""
    if isinstance(value, bool) and _numeric(annotation):
        raise ValueError(f"a number, not {str(value).lower()}")
    return value
