"""The paper's modules (Section 4.3-4.7): summarization, analysis, planning, action, response.

Each fills one slot and has its own prompt under prompts/modules/. Summarization runs once per round
(eq. 1), folding the rounds not yet summarized into the previous summary; analysis (eq. 2) and planning
(eq. 3) run per round or, with `cadence: per_turn`, before every answer as in the paper's code; action
(eq. 4) chooses privately what to do; response (4.7) writes the text the host receives.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from avalon_agents.core.types import seat_name
from avalon_agents.decisions.jsonish import load_json
from avalon_agents.decisions.kinds import kind_of
from avalon_agents.modules.base import Expected, Module, Timing, Turn, register_module
from avalon_agents.modules.sections import context, with_private
from avalon_agents.narrate import names
from avalon_agents.prices import Cost
from avalon_agents.prompting import data, template

Cadence = Literal["per_round", "per_turn"]
"""Each module's `expected` calls and tokens per game of six seats, and of the input the tokens a prompt cache can
serve (measured 2026-11-28 with `avalon bench cost --games 5`: 6 players, official rules, the scripted model,
tiktoken, the cache layout; a slow test holds them to what it measures).
Per round, action and response are one call, counted as the response's; with action off the response still
answers each request, so the count stays."""


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


@register_module("summary")
class SummaryModule(Module):
    """Eq. 1: S_t = summarize(S_{t-1} + the entries of the rounds since). Runs when the round changes."""

    slot = "summary"
    expected = Expected(Cost(15.6, 29_336, 381, 21_274), Cost(18.0, 27_704, 400, 21_146))
    prompt = "modules/summary"
    standing = "modules/standing/summary"

    class Options(_Options):
        max_words: int = Field(150, ge=20, le=1000)

    @property
    def phase(self) -> Timing:
        return "round"

    async def run(self, turn: Turn) -> None:
        mind = turn.mind
        done = turn.quest - 1  # rounds before the current one
        if done <= mind.summarized:
            return
        if mind.layout == "cache":  # the game so far as every prompt of the seat has it, then the task
            prompt = self.task_prompt(mind, "summary", "modules/cache/summary")
            text = template(prompt).render(context=context(turn, upto=self.slot), name=seat_name(mind.seat),
                                           done=done, max_words=self.options.max_words)
        else:
            prompt = self.prompt
            entries = mind.memory.listed(mind.memory.of_rounds(range(mind.summarized + 1, done + 1)))
            text = with_private(mind, template(prompt).render(
                name=seat_name(mind.seat),
                previous=turn.slots.summary or "(none yet)",
                conversation="\n".join(json.dumps(e.as_json(), ensure_ascii=False) for e in entries) or "(nothing)",
                max_words=self.options.max_words,
            ))
        summary = await self.ask(mind, text, quest=turn.quest, attempt=turn.attempt, prompt=prompt)
        if summary:
            turn.slots.summary = summary
            mind.summarized = done


@register_module("analysis")
class AnalysisModule(Module):
    """Eq. 2: the roles and strategies of other players, from memory and the seat's own role.

    `scope` (the paper's Table 8): all other players, only those the seat counts as teammates, or only
    possible adversaries, following what the seat knows."""

    slot = "analysis"
    expected = Expected(Cost(21.6, 25_913, 520, 15_974), Cost(77.8, 108_216, 1_734, 85_120))
    prompt = "modules/analysis"
    standing = "modules/standing/analysis"

    class Options(_Options):
        cadence: Cadence = "per_round"
        scope: Literal["all", "teammates", "adversaries"] = "all"
        max_words: int = Field(100, ge=20, le=500)

    def targets(self, turn: Turn) -> list[int]:
        mind = turn.mind
        if self.options.scope == "teammates":
            return mind.teammates()
        if self.options.scope == "adversaries":
            return mind.adversaries()
        return [s for s in mind.rules.seats if s != mind.seat]

    async def run(self, turn: Turn) -> None:
        targets = self.targets(turn)
        if not targets:
            return
        mind = turn.mind
        prompt = self.task_prompt(mind, "analysis")
        text = template(prompt).render(
            context=context(turn, upto=self.slot),
            name=seat_name(mind.seat),
            role=mind.role.value,
            targets=names(targets),
            max_words=self.options.max_words,
        )
        turn.slots.analysis = await self.ask(mind, text, quest=turn.quest, attempt=turn.attempt,
                                             prompt=prompt) or turn.slots.analysis


@register_module("plan", "planning")
class PlanningModule(Module):
    """Eq. 3: a plan from goal, strategy, the previous plan, the summary and the analysis."""

    slot = "plan"
    expected = Expected(Cost(21.6, 26_266, 511, 23_219), Cost(77.8, 109_528, 1_735, 99_200))
    prompt = "modules/planning"
    standing = "modules/standing/plan"

    class Options(_Options):
        cadence: Cadence = "per_round"
        max_words: int = Field(100, ge=20, le=500)

    async def run(self, turn: Turn) -> None:
        mind = turn.mind
        prompt = self.task_prompt(mind, "planning")
        values = {"context": context(turn, upto=self.slot), "goal": mind.card["goal"], "strategy": mind.strategy,
                  "previous_plan": turn.slots.plan or "(none yet)", "max_words": self.options.max_words}
        found = template(prompt)  # the short step line leaves the goal and strategy to the system message's card
        text = found.render(**{k: v for k, v in values.items() if k in found.variables})
        turn.slots.plan = await self.ask(mind, text, quest=turn.quest, attempt=turn.attempt,
                                         prompt=prompt) or turn.slots.plan


@register_module("action")
class ActionModule(Module):
    """Eq. 4: choose privately among the paper's action types for the current request.

    With `combine` (default) the same call also writes the response (4.7) as a second JSON field, so a
    request costs one call instead of two; the action stays private and the response module passes the
    response on. `combine: false` makes them two calls, as in the paper's code."""

    slot = "action"
    expected = Expected(Cost(), Cost(77.8, 112_225, 929, 101_658))
    prompt = "modules/action"
    standing = "modules/standing/action"

    class Options(_Options):
        combine: bool = True
        max_words: int = Field(100, ge=10, le=500)

    async def run(self, turn: Turn) -> None:
        if turn.request is None:
            return
        if self.options.combine:
            await self._combined(turn)
            return
        prompt = self.task_prompt(turn.mind, "action")
        text = template(prompt).render(context=context(turn, upto=self.slot), instruction=turn.instruction)
        turn.slots.action = await self.ask(turn.mind, text, quest=turn.quest, attempt=turn.attempt, prompt=prompt)

    def standing_text(self) -> str | None:
        """Combined, the step is the action and the answer in one JSON object."""
        return template("modules/standing/action_response" if self.options.combine else self.standing).render()

    async def _combined(self, turn: Turn) -> None:
        decision = turn.decision_schema
        if decision is not None:  # the answer fields are the decision the host expects
            answer = {k: v for k, v in decision["properties"].items()}
            required = ["action", *decision["required"]]
            answer_part = data("modules/answer_part")["decision"].format(fields=", ".join(answer))
        else:
            answer = {"response": {"type": "string", "maxLength": 800}}
            required = ["action", "response"]
            answer_part = data("modules/answer_part")[turn.mind.profile.answer_field]
        schema = {"type": "object", "properties": {"action": ACTION_FIELD, **answer}, "required": required}
        structured = self.llm is not None and self.llm.settings.schema_style != "none"
        prompt = self.task_prompt(turn.mind, "action_response", "modules/action_response")
        text = template(prompt).render(
            context=context(turn, upto=self.slot), instruction=turn.instruction, answer_part=answer_part,
            max_words=self.options.max_words)
        reply = await self.ask(turn.mind, text, name="action+response", request=turn.request,
                               prompt=prompt, quest=turn.quest, attempt=turn.attempt,
                               schema=schema if structured else None)
        value = load_json(reply or "")
        if not value or not value.get("action"):
            return  # nothing usable: the response module answers on its own
        turn.slots.action = str(value.pop("action"))
        if decision is None:
            turn.slots.response = str(value.get("response", "")) or None
            return
        spec = kind_of(turn.request)
        turn.decision = spec.value_of(value[spec.key]) if spec.key in value else None
        turn.slots.response = str(value.get("reason", "")) or json.dumps(value, ensure_ascii=False)


ACTION_FIELD = {"type": "string", "maxLength": 300}


@register_module("response")
class ResponseModule(Module):
    """4.7: the answer the host receives, at most `max_words` words, consistent with the chosen action.
    Decisions ask for the request's JSON schema where the model's server supports constrained output. As in the
    paper's code, its prompt holds the memory, the plan and the chosen action but not the analysis (which reached
    the action); `analysis: true` shows it here too."""

    slot = "response"
    expected = Expected(Cost(60.8, 104_537, 4_422, 79_616), Cost(77.8, 115_387, 2_077, 99_277))
    prompt = "modules/response"
    standing = "modules/standing/response"

    class Options(_Options):
        max_words: int = Field(100, ge=10, le=500)
        analysis: bool = False

    async def run(self, turn: Turn) -> None:
        request = turn.request
        if request is None or turn.slots.response is not None:  # a combined action already answered
            return
        prompt = self.task_prompt(turn.mind, "response")
        text = template(prompt).render(
            context=context(turn, upto=self.slot, leave_out=() if self.options.analysis else ("analysis",)),
            instruction=turn.instruction,
            max_words=self.options.max_words,
            fit=" Keep it consistent with the action you chose." if turn.slots.action else "",
        )
        turn.slots.response = await self.ask(turn.mind, text, request=request, quest=turn.quest, prompt=prompt,
                                             attempt=turn.attempt, schema=turn.decision_schema) or ""
        if turn.decision_schema is not None:
            turn.decision = kind_of(request).read_json(turn.slots.response)


__all__ = ["ActionModule", "AnalysisModule", "PlanningModule", "ResponseModule", "SummaryModule"]
