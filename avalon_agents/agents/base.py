"""The Agent protocol every player implements, and the Reply it gives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from avalon_agents.core.actions import DATA, Action, ActionRequest
from avalon_agents.core.events import GameEvent, GameResult


@DATA
class Reply:
    """An agent's answer: the text the host receives and, if the agent knows it, the typed action.

    An LLM agent returns only text and the host's extractor finds the action; a rule bot returns both.
    """

    text: str = ""
    action: Action | None = None


@runtime_checkable
class Agent(Protocol):
    """A player. The host calls `observe` with the events this seat may see, `act` when it must act.

    An agent may set a class attribute `reads_instructions = False` (rule bots do) so that the host
    skips wording the instruction it would ignore.
    """

    async def observe(self, events: Sequence[GameEvent]) -> None:
        """Take in new events. Cheap: store them; never an LLM call."""

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        """Answer a request. `instruction` is the host's wording of it."""

    async def on_game_end(self, result: GameResult) -> None:
        """The game is over (experience learning happens here)."""
