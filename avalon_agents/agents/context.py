"""What an LLM seat is built with (`SeatContext`): its clients, model settings, modules and experience."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from avalon_agents.llm.settings import ModelSettings
from avalon_agents.modules.config import AgentConfig
from avalon_agents.narrate import DEFAULT_CARDS
from avalon_agents.stores.book import ExperienceBook

if TYPE_CHECKING:
    from avalon_agents.llm.client import LLMClient
    from avalon_agents.llm.pool import GameClients
    from avalon_agents.stores.experience import ExperienceStore


@dataclass
class SeatContext:
    """What an LLM seat is built with, for one game.

    Attributes:
        clients: the run's client pool, recording to this game's trace.
        settings: the agent's model settings (unset fields: the pool's defaults).
        config: the cognitive agent's modules (None: all on, the defaults).
        experience: what the seat's agent carries from game to game (by role).
        pool: the baseline agent's experience pool, made on first use (None: it learns nothing).
        end_learning: False skips learning at game end (a series' last game, which no later game reads).
        cards: the set of role cards in the seat's system prompt (prompts/cards/: `paper` or `improved`).
    """

    clients: GameClients
    settings: ModelSettings
    config: AgentConfig | None = None
    experience: ExperienceBook | None = None
    pool: Callable[[], ExperienceStore] | None = None
    end_learning: bool = True
    cards: str = DEFAULT_CARDS

    @property
    def llm(self) -> LLMClient:
        """The agent's own client."""
        return self.clients.get(self.settings)
