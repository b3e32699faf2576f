"""LLMAgent: the vanilla LLM baseline. One LLM call per decision, nothing else.

Each call gets the system prompt (rules and role card), everything the seat has seen as the host's
words, and the host's instruction. Decisions ask for JSON-schema constrained output where the model's
server supports it. The paper's modular agent builds on the same pieces.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import HumanMessage, SystemMessage

from avalon_agents.agents.base import Reply
from avalon_agents.core.actions import ActionRequest, RequestKind
from avalon_agents.core.events import GameEvent, GameResult, GameStarted, RoleAssigned
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role, Seat
from avalon_agents.extract.decisions import decision_schema
from avalon_agents.llm.client import LLMCallFailed, LLMClient
from avalon_agents.llm.tokens import count_tokens
from avalon_agents.narrate import announce, system_prompt
from avalon_agents.prompting import template

HISTORY_TOKENS = 2500
"""How much of what the seat has seen goes into each prompt (the most recent part; night info always)."""
LOCAL_HISTORY_TOKENS = 900
"""The same for the embedded 135M model: on 2 CPU cores every prompt token costs about 3.5 ms."""


class LLMAgent:
    """Answers every request with one LLM call.

    Args:
        seat: the seat it plays.
        seed: unused (the model's sampling is the randomness); kept for a uniform factory.
        llm: the client that calls the model and records each call.
        history_tokens: budget for the game-so-far section of the prompt (default: HISTORY_TOKENS, or
            LOCAL_HISTORY_TOKENS for the embedded model).
    """

    needs_llm = True

    def __init__(self, *, seat: Seat, seed: int = 0, llm: LLMClient, history_tokens: int | None = None) -> None:
        self.seat = seat
        self.llm = llm
        local = llm.config.provider == "local"
        self.history_tokens = history_tokens or (LOCAL_HISTORY_TOKENS if local else HISTORY_TOKENS)
        self.rules: RuleSet | None = None
        self.role: Role | None = None
        self.night: list[str] = []
        self.seen: list[str] = []
        self.sizes: list[int] = []  # token count of each seen line
        self.start = 0  # first seen line still in the prompt

    async def observe(self, events: Sequence[GameEvent]) -> None:
        for e in events:
            if isinstance(e, GameStarted):
                self.rules = e.rules
            elif isinstance(e, RoleAssigned):
                self.role = e.role
            elif (text := announce(e, self.rules)) is not None:
                (self.night if e.type == "night_info" else self.seen).append(text)

    def history(self) -> str:
        """Night information, then what the seat has seen since `self.start`. When that outgrows the token
        budget, the oldest lines are dropped down to half the budget at once: between such cuts each prompt
        extends the previous one, so a server's prompt cache (llama.cpp) resumes instead of re-reading."""
        budget = self.history_tokens - sum(count_tokens(line) for line in self.night)
        while len(self.sizes) < len(self.seen):
            self.sizes.append(count_tokens(self.seen[len(self.sizes)]))
        if sum(self.sizes[self.start:]) > budget:
            kept = 0
            self.start = len(self.seen)
            while self.start > 0 and kept + self.sizes[self.start - 1] <= budget // 2:
                self.start -= 1
                kept += self.sizes[self.start]
        return "\n".join(self.night + self.seen[self.start:])

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        prompt = template("agent/vanilla")
        messages = [
            SystemMessage(system_prompt(self.rules, self.seat, self.role)),
            HumanMessage(prompt.render(history=self.history() or "(nothing yet)", instruction=instruction)),
        ]
        schema = decision_schema(request) if self.llm.config.schema_style != "none" else None
        purpose = "speak" if request.kind is RequestKind.SPEAK else f"decide/{request.kind.value}"
        try:
            text = await self.llm.call(messages, purpose=purpose, prompt_id=prompt.id, prompt_hash=prompt.hash,
                                       seat=self.seat, schema=schema,
                                       context={"quest": request.quest, "attempt": request.attempt})
        except LLMCallFailed:
            text = ""  # recorded in the trace; the extractor's fallback decides
        return Reply(text=text)

    async def on_game_end(self, result: GameResult) -> None:
        return None
