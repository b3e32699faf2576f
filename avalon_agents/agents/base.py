"""The Agent protocol every player implements, and AgentBase with its optional hooks as no-ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol, runtime_checkable

from avalon_agents.core.actions import ActionRequest, Reply
from avalon_agents.core.events import GameEvent, GameResult


@runtime_checkable
class Agent(Protocol):
    """A player. The host calls `observe` with the events this seat may see, `act` when it must act.

    Attributes:
        reads_instructions: False for agents that ignore the host's wording (rule bots): the host then
            skips wording it.
    """

    reads_instructions: bool

    async def observe(self, events: Sequence[GameEvent]) -> None:
        """Take in new events. Cheap: store them; never an LLM call."""

    async def prepare(self) -> None:
        """A round (quest) begins: per-round thinking. The host calls every seat's at once, since this work
        is independent across seats."""

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        """Answer a request. `instruction` is the host's wording of it."""

    async def on_game_end(self, result: GameResult) -> None:
        """The game is over (experience learning happens here)."""


class AgentBase:
    """The optional parts of the Agent protocol as no-ops: subclass it and write `act` (and `observe`)."""

    reads_instructions: ClassVar[bool] = True

    async def observe(self, events: Sequence[GameEvent]) -> None:
        return None

    async def prepare(self) -> None:
        return None

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        raise NotImplementedError

    async def on_game_end(self, result: GameResult) -> None:
        return None

    async def close(self) -> None:
        """The game is over or stopped (finished, aborted, failed or interrupted): release what the agent holds
        (a program's process). The host calls it, if an agent has it, after every game."""
        return None
