"""CognitiveAgent: the paper's agent (Section 4), built from pluggable modules.

Observing only stores memory. When a round (quest) begins, the round-phase modules run (summary, and
analysis and planning with `cadence: per_round`); the host calls `prepare()` on every seat at once there,
so that this independent work runs concurrently. For each request the turn-phase modules run in order
(analysis and planning with `cadence: per_turn`, then action, then response) and the response is the reply.
A re-ask of the same request re-runs only action and response.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from avalon_agents.agents.base import AgentBase
from avalon_agents.agents.context import SeatContext
from avalon_agents.core.actions import ActionRequest, Reply
from avalon_agents.core.events import GameEvent, GameResult, GameStarted, RoleAssigned
from avalon_agents.decisions.kinds import decision_schema
from avalon_agents.modules.base import SLOTS, Mind, Module, Slots, Turn
from avalon_agents.modules.config import AgentConfig
from avalon_agents.modules.sections import standing
from avalon_agents.narrate import check_layout, decision_first
from avalon_agents.records.trace import ModuleOutput
from avalon_agents.stores.book import experience_without_seats



class CognitiveAgent(AgentBase):
    """The paper's modular agent.

    Args:
        seat, seed: as for every agent (the model's sampling is the randomness).
        context: its clients and model settings; `context.config` says which modules are on, their classes,
            options and model settings (default: all on, each module on the agent's settings);
            `context.experience` is where the seat finds what earlier games taught its role and leaves what
            this one did; `context.end_learning` False skips experience learning at game end (the runner's
            last game of a series, which no later game reads); other modules' game_end still runs;
            `context.cards` is the set of role cards its system prompt and strategy start from.
        prompt_layout: `cache` (default) or `paper`, how its prompts are laid out (narrate.LAYOUTS, docs/paper.md).
    """

    needs_llm = True

    def __init__(self, *, seat: int, seed: int = 0, context: SeatContext, prompt_layout: str = "cache") -> None:
        self.config = context.config or AgentConfig()
        self.book = context.experience
        self.end_learning = context.end_learning
        self.mind = Mind(seat, cards=context.cards, profile=context.llm.settings.shape,
                         layout=check_layout(prompt_layout))
        self.slots = Slots()
        self.tracer = context.clients.tracer
        self.modules: dict[str, Module] = self.config.build(context.clients, context.settings)
        if self.mind.layout == "cache" and self.mind.profile.standing:
            self.mind.steps = standing(self.modules.values())
        self._last_request: ActionRequest | None = None

    @staticmethod
    def check_options(options: dict[str, Any]) -> None:
        """Raise ValueError (one line) for a `prompt_layout` it does not know."""
        check_layout(options.get("prompt_layout", "cache"))

    async def observe(self, events: Sequence[GameEvent]) -> None:
        mind = self.mind
        for event in events:
            if isinstance(event, GameStarted):
                mind.rules = event.rules
            elif isinstance(event, RoleAssigned):
                mind.role = event.role
                if self.book is not None:
                    mind.experience = self.book.get(event.role)
        entries = mind.memory.add(events, mind.rules)
        for module in self.modules.values():
            await module.observe(mind, entries)

    async def prepare(self) -> None:
        """Round-phase work for the current round, once (a no-op if it already ran)."""
        mind = self.mind
        if mind.round == mind.current_round:
            return
        mind.round = mind.current_round
        await self._run(Turn(mind, self.slots), phase="round")

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        await self.prepare()
        reask = request is self._last_request
        self._last_request = request
        self.slots.clear_turn()
        response = self.modules["response"]
        schema = decision_schema(request) if response.llm and response.llm.settings.schema_style != "none" else None
        if schema is None and self.mind.profile.decision_first:
            instruction = decision_first(instruction, request.kind.value)
        turn = Turn(self.mind, self.slots, request, instruction, decision_schema=schema)
        await self._run(turn, phase="turn", only=[n for n, s in SLOTS.items() if s.per_turn] if reask else None)
        said = {"prompt": self.mind.prompt, "profile": self.mind.profile.name}
        if turn.decision is not None:
            return Reply(text=self.slots.response or "", action=turn.decision, source="json", **said)
        return Reply(text=self.slots.response or "", **said)

    async def on_game_end(self, result: GameResult) -> None:
        before = asdict(self.mind.experience)
        turn = Turn(self.mind, self.slots)
        for slot, module in self.modules.items():
            if slot != "experience" or self.end_learning:
                await module.game_end(turn, result)
        if asdict(self.mind.experience) != before and "experience" in self.modules:
            self._trace(self.modules["experience"], turn, asdict(self.mind.experience))
        # a store embeds its texts: off the event loop, other seats' calls go on
        if self.book is not None and self.end_learning:
            learned = experience_without_seats(self.mind.experience, result.roles)  # seats hold other roles next
            await asyncio.to_thread(self.book.put, self.mind.role, learned, result, self.mind.seat)

    async def _run(self, turn: Turn, *, phase: str, only: Sequence[str] | None = None) -> None:
        for slot, module in self.modules.items():
            if module.phase != phase or (only is not None and slot not in only):
                continue
            before = turn.slots.texts()
            await module.run(turn)
            for name, value in turn.slots.texts().items():
                if value is not None and value != before[name]:
                    self._trace(module, turn, value, name)

    def _trace(self, module: Module, turn: Turn, text: Any, slot: str | None = None) -> None:
        if self.tracer is not None:
            self.tracer.trace(ModuleOutput(seat=self.mind.seat, module=module.name, slot=slot or module.slot,
                                           quest=turn.quest, attempt=turn.attempt, text=text))
