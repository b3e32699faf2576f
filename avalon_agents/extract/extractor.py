"""The extractor: free text -> a legal action, through stages that are each recorded.

For every answer: the agent's typed action -> a JSON decision (constrained output) or the whole-word
rule parse -> the LLM extractor (few-shot, temperature 0, structured output where available) ->
validation against the request. If nothing legal comes out, the agent is asked again with the reason,
at most `max_reasks` times, and then the paper's fallback (Appendix A.4) decides: an unclear team vote
approves, an unclear quest card fails for evil and succeeds for good, too many players are truncated,
too few are filled at random, an unclear Assassin names a random player (or holds off when allowed).

Every extraction becomes one trace record with its `method` (typed / rule / llm / fallback), the number
of answers it took, the raw texts, and `valid` (the first answer gave a legal action: the paper's Valid
Response Rate, eq. 8, counts these).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import HumanMessage

from avalon_agents.agents.base import Reply
from avalon_agents.core.actions import (
    Action,
    ActionRequest,
    Assassinate,
    IllegalAction,
    ProposeTeam,
    QuestCard,
    RequestKind,
    Speak,
    Vote,
)
from avalon_agents.core.types import seat_name
from avalon_agents.extract.decisions import load_json, read_decision
from avalon_agents.extract.parse import parse_quest, parse_target, parse_team, parse_vote, seats_named
from avalon_agents.llm.client import LLMCallFailed, LLMClient, Tracer
from avalon_agents.prompting import template

MAX_REASKS = 2
EXTRACT_SCHEMAS: dict[RequestKind, dict[str, Any]] = {
    RequestKind.PROPOSE: {"type": "object", "properties": {"team": {"type": "array", "items": {"type": "integer"}}},
                          "required": ["team"]},
    RequestKind.VOTE: {"type": "object", "properties": {"vote": {"type": "string",
                                                                  "enum": ["approve", "reject", "unclear"]}},
                       "required": ["vote"]},
    RequestKind.QUEST: {"type": "object", "properties": {"card": {"type": "string",
                                                                   "enum": ["success", "fail", "unclear"]}},
                        "required": ["card"]},
    RequestKind.ASSASSINATE: {"type": "object", "properties": {"seat": {"type": "integer"}}, "required": ["seat"]},
}
TEMPLATE_OF = {RequestKind.PROPOSE: "extract/team", RequestKind.VOTE: "extract/vote",
               RequestKind.QUEST: "extract/quest", RequestKind.ASSASSINATE: "extract/assassinate"}

AskAgain = Callable[[str], Awaitable[Reply]]
"""Ask the agent the same request again, telling it why its answer could not be used."""


@dataclass
class Extraction:
    action: Action
    method: str
    answers: int = 1
    valid: bool = True
    texts: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def record(self, request: ActionRequest) -> dict[str, Any]:
        return {
            "type": "extraction",
            "seat": request.seat,
            "kind": request.kind.value,
            "quest": request.quest,
            "attempt": request.attempt,
            "method": self.method,
            "valid": self.valid,
            "answers": self.answers,
            "action": _plain(self.action),
            "texts": self.texts,
            "problems": self.problems,
        }


def _plain(action: Action) -> Any:
    """The action as the CLI prints it: seats list, true/false, a seat number (or null)."""
    if isinstance(action, ProposeTeam):
        return list(action.team)
    if isinstance(action, Vote):
        return action.approve
    if isinstance(action, QuestCard):
        return action.success
    if isinstance(action, Assassinate):
        return action.target
    return action.text


class Extractor:
    """Turns replies into legal actions.

    Args:
        llm: the LLM extractor's client (temperature 0); None skips the LLM stage.
        tracer: receives one record per extraction.
        max_reasks: how many times the agent is asked again before the fallback.
        seed: seeds the random fill of the fallback.
    """

    def __init__(self, *, llm: LLMClient | None = None, tracer: Tracer | None = None,
                 max_reasks: int = MAX_REASKS, seed: int = 0) -> None:
        self.llm = llm
        self.tracer = tracer
        self.max_reasks = max_reasks
        self.rng = random.Random(seed)

    async def __call__(self, request: ActionRequest, reply: Reply, ask_again: AskAgain | None = None,
                       instruction: str = "") -> Action:
        extraction = await self.extract(request, reply, ask_again, instruction)
        if self.tracer is not None and request.kind is not RequestKind.SPEAK:
            self.tracer.trace(extraction.record(request))
        return extraction.action

    async def extract(self, request: ActionRequest, reply: Reply, ask_again: AskAgain | None = None,
                      instruction: str = "") -> Extraction:
        if request.kind is RequestKind.SPEAK:
            text = reply.action.text if isinstance(reply.action, Speak) else reply.text
            return Extraction(Speak(text=text), "typed" if reply.action else "rule", texts=[text])
        texts: list[str] = []
        problems: list[str] = []
        partial: Action | None = None
        for answer in range(self.max_reasks + 1):
            texts.append(reply.text)
            action, method, problem, near = await self._one(request, reply, instruction)
            if action is not None:
                return Extraction(action, method, answer + 1, answer == 0, texts, problems)
            problems.append(problem)
            partial = near or partial
            if self._too_many(request, near):  # the paper truncates at once
                return Extraction(self._fallback(request, near), "fallback", answer + 1, False, texts, problems)
            if ask_again is None or answer == self.max_reasks:
                break
            reply = await ask_again(problem)
        action = self._fallback(request, partial)
        return Extraction(action, "fallback", len(texts), False, texts, problems)

    async def _one(self, request: ActionRequest, reply: Reply, instruction: str):
        """(action, method, problem, near miss) for one answer."""
        near: Action | None = None
        candidates: list[tuple[str, Action | None]] = []
        if reply.action is not None:
            candidates.append(("typed", reply.action))
        candidates.append(("rule", read_decision(reply.text, request) or self._parse(request, reply.text)))
        problem = "no clear answer"
        for method, action in candidates:
            if action is None:
                continue
            try:
                return request.validate(action), method, "", None
            except IllegalAction as exc:
                problem, near = str(exc), action
        if self.llm is not None and reply.text.strip():
            action = await self._ask_llm(request, reply.text, instruction)
            if action is not None:
                try:
                    return request.validate(action), "llm", "", None
                except IllegalAction as exc:
                    problem, near = str(exc), action
        return None, "", self._explain(request, problem), near

    @staticmethod
    def _parse(request: ActionRequest, text: str) -> Action | None:
        kind, seat = request.kind, request.seat
        players = max(request.options or (seat,))
        if kind is RequestKind.PROPOSE:
            team = parse_team(text, seat=seat, players=players, team_size=request.team_size)
            if team is None:
                named = seats_named(text, seat=seat, players=players)
                return ProposeTeam(team=tuple(named)) if named else None
            return ProposeTeam(team=team)
        if kind is RequestKind.VOTE:
            vote = parse_vote(text)
            return None if vote is None else Vote(approve=vote)
        if kind is RequestKind.QUEST:
            card = parse_quest(text)
            return None if card is None else QuestCard(success=card)
        if kind is RequestKind.ASSASSINATE:
            if request.may_pass and text.strip().lower().strip(".!") in ("pass", "i pass", "hold off", "wait"):
                return Assassinate(target=None)
            target = parse_target(text, seat=seat, players=max(players, seat))
            return None if target is None else Assassinate(target=target)
        return None

    async def _ask_llm(self, request: ActionRequest, text: str, instruction: str) -> Action | None:
        prompt = template(TEMPLATE_OF[request.kind])
        values = {"question": instruction, "answer": text}
        if "speaker" in prompt.variables:
            values["speaker"] = seat_name(request.seat)
        try:
            out = await self.llm.call([HumanMessage(prompt.render(**values))], purpose=f"extract/{request.kind.value}",
                                      prompt_id=prompt.id, prompt_hash=prompt.hash, seat=request.seat,
                                      schema=EXTRACT_SCHEMAS[request.kind],
                                      context={"quest": request.quest, "attempt": request.attempt})
        except LLMCallFailed:
            return None
        value = load_json(out)
        if value is None:
            return None
        try:
            if request.kind is RequestKind.PROPOSE:
                return ProposeTeam(team=tuple(int(s) for s in value.get("team", []))) if value.get("team") else None
            if request.kind is RequestKind.VOTE:
                return {"approve": Vote(approve=True), "reject": Vote(approve=False)}.get(value.get("vote"))
            if request.kind is RequestKind.QUEST:
                return {"success": QuestCard(success=True), "fail": QuestCard(success=False)}.get(value.get("card"))
            seat = int(value.get("seat", 0))
            return Assassinate(target=seat) if seat else (Assassinate(target=None) if request.may_pass else None)
        except (TypeError, ValueError):
            return None

    @staticmethod
    def _explain(request: ActionRequest, problem: str) -> str:
        if request.kind is RequestKind.PROPOSE:
            return f"{problem}; name exactly {request.team_size} different players as \"Player N\""
        return problem

    @staticmethod
    def _too_many(request: ActionRequest, near: Action | None) -> bool:
        if not isinstance(near, ProposeTeam):
            return False
        legal = {s for s in near.team if s in request.options}
        return len(legal) > request.team_size

    def _fallback(self, request: ActionRequest, near: Action | None) -> Action:
        """The paper's documented defaults (Appendix A.4)."""
        kind = request.kind
        if kind is RequestKind.VOTE:
            return Vote(approve=True)
        if kind is RequestKind.QUEST:
            return QuestCard(success=not request.can_fail)
        if kind is RequestKind.PROPOSE:
            named = [s for s in dict.fromkeys(near.team if isinstance(near, ProposeTeam) else ())
                     if s in request.options]
            rest = [s for s in request.options if s not in named]
            self.rng.shuffle(rest)  # too many: keep the first named; too few: fill at random
            return ProposeTeam(team=tuple(sorted((named + rest)[: request.team_size])))
        if request.may_pass:
            return Assassinate(target=None)
        return Assassinate(target=self.rng.choice(request.options))
