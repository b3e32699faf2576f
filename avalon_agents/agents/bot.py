"""Bot: the base of agents that decide without an LLM and answer with typed actions."""

from __future__ import annotations

import random
from collections.abc import Sequence

from avalon_agents.agents.base import AgentBase
from avalon_agents.core.actions import Action, ActionRequest, Reply
from avalon_agents.core.events import GameEvent
from avalon_agents.core.types import Seat
from avalon_agents.decisions.kinds import say


class Bot(AgentBase):
    """Subclasses implement `decide(request) -> Action` and may override `see(events)`.

    Args:
        seat: the seat it plays.
        seed: seeds its own random.Random.
    """

    reads_instructions = False  # the host need not word instructions for it

    def __init__(self, *, seat: Seat, seed: int = 0) -> None:
        self.seat = seat
        self.rng = random.Random(seed)

    async def observe(self, events: Sequence[GameEvent]) -> None:
        self.see(events)

    def see(self, events: Sequence[GameEvent]) -> None:
        """Take in events the seat may see (bots never wait, so this is not async)."""
        return None

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        action = self.decide(request)
        return Reply(text=say(action), action=action)

    def decide(self, request: ActionRequest) -> Action:
        raise NotImplementedError
