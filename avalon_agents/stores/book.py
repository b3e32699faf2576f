"""What a seat learned in earlier games (the paper's 4.8), by role: the in-memory book; the chromadb
ExperienceStore (stores.experience) keeps the same on disk."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from avalon_agents.core.events import GameResult
from avalon_agents.core.types import Role


@dataclass
class Experience:
    """What a seat carries from earlier games into this one (experience learning, the paper's 4.8)."""

    strategy: str | None = None  # the improved strategy for the seat's role
    suggestions: str | None = None  # the last game's three suggestions
    other_roles: str | None = None  # notes on how the other roles play
    reflection: str | None = None  # the last game as the seat saw it (its summary)


class ExperienceBook:
    """Experience by role, carried from game to game (in memory; the chromadb store keeps it on disk).
    A seat takes its role's entry when it learns its role and puts back what it learned at game end."""

    def __init__(self) -> None:
        self._by_role: dict[Role, tuple[tuple[int, int], Experience]] = {}
        self.game = 0  # the game being played (the chromadb store records it)
        self.run = 1  # in memory, one run

    def get(self, role: Role) -> Experience:
        return replace(self._by_role.get(role, ((0, 0), Experience()))[1])

    def put(self, role: Role, experience: Experience, result: GameResult | None = None, seat: int = 0) -> None:
        """Keep what a seat of `role` learned; of two seats of one role in one game the higher seat's is the
        latest, whichever finished writing first (so a replay learns the same)."""
        order = (self.game, seat)
        if role not in self._by_role or order >= self._by_role[role][0]:
            self._by_role[role] = (order, replace(experience))


SEAT = re.compile(r"\b[Pp]layer (\d{1,2})\b")
UNIQUE = {Role.MERLIN, Role.PERCIVAL, Role.MORGANA, Role.ASSASSIN, Role.MORDRED, Role.OBERON}


def name_roles(text: str, roles: dict[int, Role]) -> str:
    """`text` with each "Player N" of the game it came from replaced by that seat's role ("Merlin", "the
    Assassin", "a Loyal Servant"): what is learned from a game must not name seats, which hold other roles in
    the next one."""

    def role_of(match: re.Match[str]) -> str:
        role = roles.get(int(match.group(1)))
        if role is None:
            return "a player"
        name = role.value if role in (Role.MERLIN, Role.PERCIVAL, Role.MORGANA, Role.MORDRED, Role.OBERON) else (
            f"the {role.value}" if role in UNIQUE else f"a {role.value}")
        at_start = match.start() == 0 or text[: match.start()].rstrip().endswith((".", "!", "?", ":", "\n"))
        return name[0].upper() + name[1:] if at_start else name

    return SEAT.sub(role_of, text)


def experience_without_seats(experience: Experience, roles: dict[int, Role]) -> Experience:
    """Every text of `experience` with seats named by role (see name_roles)."""
    return replace(experience, **{f: name_roles(v, roles) for f, v in vars(experience).items() if isinstance(v, str)})
