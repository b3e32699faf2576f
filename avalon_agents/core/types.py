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


GOOD_ROLES = frozenset({Role.MERLIN, Role.PERCIVAL, Role.LOYAL_SERVANT})
_SIDES = {role: Team.GOOD if role in GOOD_ROLES else Team.EVIL for role in Role}


class Phase(str, Enum):
    """Where the game is. The engine's `pending()` requests follow from it."""

    NIGHT = "night"
    PROPOSAL = "proposal"
    DISCUSSION = "discussion"
    VOTE = "vote"
    QUEST = "quest"
    ASSASSINATION = "assassination"
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
