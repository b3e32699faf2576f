"""LLMAgent: the vanilla LLM baseline. One LLM call per decision, nothing else.

Each call gets the system prompt (rules and role card), everything the seat has seen as the host's words, what the
seat privately knows (its night sight, a Lady of the Lake result, its own cards: every event only it may see) and the
host's instruction, in that order (`prompt_layout: cache`, the default): each prompt starts with the previous one's
history, and a new private fact changes only what follows it; the history keeps the game's opening and its newest
lines within a token budget (`history`). `paper` puts the private section first and keeps the
private events in the history too. Decisions ask for JSON-schema constrained output where the model's
server supports it. The paper's modular agent builds on the same pieces.
"""

from __future__ import annotations

from collections.abc import Sequence

from avalon_agents.agents.base import AgentBase
from avalon_agents.agents.context import SeatContext
from avalon_agents.core.actions import ActionRequest, Reply
from avalon_agents.core.events import GameEvent, GameStarted, RoleAssigned
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role, Seat
from avalon_agents.decisions.kinds import kind_of
from avalon_agents.llm.health import LLMCallFailed
from avalon_agents.llm.stable import stable_message
from avalon_agents.llm.tokens import count_tokens, newest_that_fit
from avalon_agents.narrate import announce, check_layout, decision_first, private_section, system_prompt, told_privately
from avalon_agents.prices import Cost
from avalon_agents.prompting import template
from avalon_agents.records.trace import Purpose


OPENING = 0.2
"""The share of the history budget the game's opening keeps: its first lines stay in every prompt (the first
proposals, speeches and votes), so a cut leaves the system message and the opening, past OpenAI's 1,024-token
minimum together, cached (docs/benchmarks.md, cacheable share)."""
KEPT = 0.2
"""A cut keeps the newest lines that fit in this share of the budget after the opening."""


class LLMAgent(AgentBase):
    """Answers every request with one LLM call.

    Args:
        seat: the seat it plays.
        seed: unused (the model's sampling is the randomness); kept for a uniform factory.
        context: its client (which calls the model and records each call) and model settings.
        history_tokens: budget for the game-so-far section of the prompt (default: the model's, see
            ModelSettings.history_tokens).
        prompt_layout: `cache` (default) or `paper` (narrate.LAYOUTS).
    """

    needs_llm = True
    expected = Cost(97.2, 201_881, 4_787, 154_317)
    """Calls and tokens per game of six seats of this kind (`avalon bench cost --seats llm --games 5`,
    2026-11-28; the fourth figure: the input a prompt cache serves),
    what `avalon run --check` counts."""

    def __init__(self, *, seat: Seat, seed: int = 0, context: SeatContext, history_tokens: int | None = None,
                 prompt_layout: str = "cache") -> None:
        self.layout = check_layout(prompt_layout)
        self.seat = seat
        self.llm = context.llm
        self.cards = context.cards
        self.history_tokens = history_tokens or self.llm.settings.history_tokens
        self.rules: RuleSet | None = None
        self.role: Role | None = None
        self.private: list[str] = []  # what only it saw (narrate.told_privately)
        self.seen: list[str] = []
        self.sizes: list[int] = []  # token count of each seen line
        self.opening: int | None = None  # the first seen lines, in every prompt (set once they reach OPENING)
        self.start = 0  # first seen line after the opening still in the prompt
        self.told = 0  # private facts in the last prompt

    async def observe(self, events: Sequence[GameEvent]) -> None:
        for e in events:
            if isinstance(e, GameStarted):
                self.rules = e.rules
            elif isinstance(e, RoleAssigned):
                self.role = e.role
            elif (text := announce(e, self.rules)) is not None:
                if told_privately(e):
                    self.private.append(text)
                if self.layout == "paper" or not told_privately(e):
                    self.seen.append(text)

    @staticmethod
    def check_options(options: dict) -> None:
        """Raise ValueError (one line) for a `prompt_layout` it does not know."""
        check_layout(options.get("prompt_layout", "cache"))

    def history(self) -> str:
        """What the seat has seen, as the host told it, within the token budget (the model's, less the private
        section): the game's opening (its first lines, once they reach OPENING of the budget), then the newest
        lines. When that outgrows the budget, the lines after the opening are dropped down to the newest that fit
        in KEPT of it (the newest one at least), at once: between such cuts each history extends the previous one,
        and a cut keeps the system message and the opening in common with every earlier prompt, so a server's
        prompt cache (llama.cpp, a provider's) resumes instead of re-reading (past OpenAI's 1,024-token minimum:
        docs/benchmarks.md)."""
        budget = self.history_tokens - count_tokens(private_section(self.private))
        while len(self.sizes) < len(self.seen):
            self.sizes.append(count_tokens(self.seen[len(self.sizes)]))
        if self.opening is None and OPENING > 0:
            total = 0
            for n, size in enumerate(self.sizes, 1):
                total += size
                if total >= budget * OPENING:
                    self.opening = self.start = n
                    break
        opening = self.opening or 0
        held = sum(self.sizes[:opening]) + sum(self.sizes[self.start:])
        # paper: a new private fact changes the prompt near its start: a cut due soon is made now, at the same cost
        if held > budget or (self.layout == "paper" and len(self.private) != self.told and held > budget * 3 // 4):
            newest = newest_that_fit(self.seen[opening:], int(budget * KEPT))
            self.start = opening + max(min(newest, len(self.seen) - opening - 1), 0)  # the newest line, whatever its size
        self.told = len(self.private)
        left_out = [template("agent/left_out").render()] if self.start > opening else []
        lines = [*self.seen[:opening], *left_out, *self.seen[self.start:]]
        return "What has happened so far, as the host told you:\n" + ("\n".join(lines) or "(nothing yet)")

    def sections(self) -> tuple[str, str]:
        """The user message's part before the host's instruction, and its stable part (what the seat's next
        prompts begin with too: llm.stable). `cache`: the history, then what the seat privately knows (a new
        private fact, a card it played or a Lady result, changes no token before it, so the history stays
        cached); `paper`: the private section first."""
        history, private = self.history(), private_section(self.private)
        if self.layout == "paper":
            text = "\n\n".join(p for p in (private, history) if p)
            return text, text
        return "\n\n".join(p for p in (history, private) if p), history if self.seen else ""

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        from langchain_core.messages import SystemMessage

        prompt = template("agent/vanilla")
        shape = self.llm.settings.shape
        spec = kind_of(request)
        schema = spec.schema(request) if self.llm.settings.schema_style != "none" else None
        if shape.decision_first and schema is None:
            instruction = decision_first(instruction, request.kind.value)
        system = system_prompt(self.rules, self.seat, self.role, cards=self.cards, rules_text=shape.rules)
        before, stable = self.sections()
        asked = prompt.render(history=before, instruction=instruction)
        messages = [SystemMessage(system), stable_message(asked, stable)]
        try:
            text = await self.llm.call(messages, purpose=Purpose(stage="agent", name="vanilla",
                                                                 request=request.kind.value),
                                       prompt_id=prompt.id, prompt_hash=prompt.hash, seat=self.seat, schema=schema,
                                       quest=request.quest, attempt=request.attempt)
        except LLMCallFailed:
            text = ""  # recorded in the trace; the extractor's fallback decides
        action = spec.read_json(text) if schema is not None else None
        said = {"prompt": system + "\n\n" + asked, "profile": shape.name}
        if action is not None:
            return Reply(text=text, action=action, source="json", **said)
        return Reply(text=text, **said)
