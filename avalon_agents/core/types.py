"""Basic game vocabulary: roles, sides, phases, seats and end reasons.

Seats are numbered from 1 to the player count, as players are named in the paper ("player 1").
"""

from __future__ import annotations

from enum import Enum

Seat = int
"""A seat number, 1-based: seat 1 is "Player 1"."""


class Team(str, Enum):
    """The two sides of the game."""

    GOOD = "good"
    EVIL = "evil"


class Role(str, Enum):
    """Role cards. `side` and the night-information rules hang off these."""

    MERLIN = "Merlin"
    PERCIVAL = "Percival"
    LOYAL_SERVANT = "Loyal Servant"
    MORGANA = "Morgana"
    ASSASSIN = "Assassin"
    MORDRED = "Mordred"
    OBERON = "Oberon"
    MINION = "Minion of Mordred"

    @property
    def side(self) -> Team:
        return _SIDES[self]

    @classmethod
    def parse(cls, name: str | Role) -> Role:
        """A role from its name, any case, with underscores or spaces: "loyal_servant", "Minion", "MORDRED".

        Raises ValueError naming the unknown role and the known ones.
        """
        if isinstance(name, Role):
            return name
        key = " ".join(str(name).replace("_", " ").replace("-", " ").lower().split())
        found = _NAMES.get(key)
        if found is None:
            known = ", ".join(r.name.lower() for r in cls)
            raise ValueError(f"unknown role {name!r} (known: {known})")
        return found


GOOD_ROLES = frozenset({Role.MERLIN, Role.PERCIVAL, Role.LOYAL_SERVANT})
_SIDES = {role: Team.GOOD if role in GOOD_ROLES else Team.EVIL for role in Role}
_NAMES = {**{r.value.lower(): r for r in Role}, **{r.name.lower().replace("_", " "): r for r in Role}}
"""Lower-case names a role is known by: its card's name ("minion of mordred") and its short one ("minion")."""


class Phase(str, Enum):
    """Where the game is. The engine's `pending()` requests follow from it."""

    NIGHT = "night"
    PROPOSAL = "proposal"
    DISCUSSION = "discussion"
    VOTE = "vote"
    QUEST = "quest"
    ASSASSINATION = "assassination"
    LADY = "lady"
    OVER = "over"


class EndReason(str, Enum):
    """Why a game ended."""

    THREE_SUCCESSES = "three_successes"
    """Good completed three quests and no assassination is left to try."""
    ASSASSIN_MISSED = "assassin_missed"
    """Good completed three quests and the Assassin then named the wrong player."""
    THREE_FAILS = "three_fails"
    MERLIN_ASSASSINATED = "merlin_assassinated"
    FIVE_REJECTIONS = "five_rejections"

    @property
    def winner(self) -> Team:
        good = {EndReason.THREE_SUCCESSES, EndReason.ASSASSIN_MISSED}
        return Team.GOOD if self in good else Team.EVIL


def seat_name(seat: Seat) -> str:
    """The name a seat goes by in transcripts and prompts."""
    return f"Player {seat}"
