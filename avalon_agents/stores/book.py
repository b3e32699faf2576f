"""What a seat learned in earlier games (the paper's 4.8), by role: the in-memory book; the chromadb
ExperienceStore (stores.experience) keeps the same on disk."""

from __future__ import annotations

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
        self._by_role: dict[Role, Experience] = {}
        self.game = 0  # the game being played (the chromadb store records it)

    def get(self, role: Role) -> Experience:
        return replace(self._by_role.get(role, Experience()))

    def put(self, role: Role, experience: Experience, result: GameResult | None = None) -> None:
        self._by_role[role] = replace(experience)
