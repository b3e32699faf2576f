"""ScriptedChatModel: a real langchain BaseChatModel that answers by a function of the prompt.

It records every call and raises on one its function does not expect. Without a function it gives
plausible replies of realistic length, so the CLI, benchmarks and tests can run whole games with no model.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from avalon_agents.decisions.kinds import APPROVE_SHARE, scripted_answer
from avalon_agents.llm.tokens import count_tokens

Respond = Callable[[Sequence[BaseMessage], dict[str, Any]], "str | None"]
"""(messages, call kwargs such as response_format) -> reply text, or None for an unexpected call."""

SEAT = re.compile(r"\bPlayer (\d{1,2})\b")
YOU_ARE = re.compile(r"\bYou are Player (\d{1,2})\b")
FILLER = (
    "I have been watching the votes closely and the pattern matters more than any single speech.",
    "We should send people whose record is clean so far and keep the rest of us honest.",
    "If this team fails we will know exactly where to look next round, so let us decide carefully.",
    "I am willing to be judged by my votes, and I ask everyone else to accept the same standard.",
    "Nothing said so far gives me a reason to change my view, but I am listening.",
)


KEEP_CALLS = 2000
"""The scripted model keeps the last this many calls it answered (tests read them)."""


class UnexpectedCall(AssertionError):
    """The scripted model was asked something its function does not answer."""


class ScriptedChatModel(BaseChatModel):
    """Answers by `respond(messages, kwargs)`; with no `respond`, plausible defaults.

    Args:
        respond: the answering function; None picks the default plausible replies.
        seed: seeds the default replies. A default reply is a function of the seed and the prompt alone, not
            of the order calls arrive in, so a game of scripted seats plays the same however its concurrent
            calls are scheduled.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    respond: Respond | None = None
    seed: int = 0
    calls: list[dict[str, Any]] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager=None,
                  **kwargs: Any) -> ChatResult:
        with self._lock:
            text = (self.respond or self._default)(messages, kwargs)
            if text is None:
                last = messages[-1].content if messages else ""
                raise UnexpectedCall(f"no scripted answer for: {str(last)[:200]!r}")
            self.calls.append({"messages": [m.model_dump() for m in messages], "kwargs": kwargs, "reply": text})
            if len(self.calls) > KEEP_CALLS:  # a bounded history: long runs do not grow without end
                del self.calls[: len(self.calls) - KEEP_CALLS]
        usage = {
            "input_tokens": sum(count_tokens(str(m.content)) for m in messages),
            "output_tokens": count_tokens(text),
        }
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        message = AIMessage(content=text, usage_metadata=usage, response_metadata={"model_name": "scripted"})
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager=None,
                         **kwargs: Any) -> ChatResult:
        return self._generate(messages, stop, **kwargs)

    # ---------------------------------------------------------------- defaults

    def _default(self, messages: Sequence[BaseMessage], kwargs: dict[str, Any]) -> str:
        prompt = "\n".join(str(m.content) for m in messages)
        last = str(messages[-1].content) if messages else ""
        rng = random.Random(f"{self.seed}:{prompt}:{json.dumps(kwargs, sort_keys=True, default=str)}")
        me = int(m.group(1)) if (m := YOU_ARE.search(prompt)) else 1
        seats = sorted({int(s) for s in SEAT.findall(prompt)} | {me})
        others = [s for s in seats if s != me] or [me]
        schema = _schema_of(kwargs)
        if schema is not None:
            return json.dumps(_fill(schema, rng, seats, me, lambda: self._speech(rng, me, others)))
        answer = scripted_answer(last, rng, me, others)
        if answer is not None:
            return answer
        return self._speech(rng, me, others)

    @staticmethod
    def _speech(rng: random.Random, me: int, others: list[int]) -> str:
        a, b = rng.sample(others, 2) if len(others) >= 2 else (others[0], others[0])
        words = [f"As Player {me}, I trust Player {a} for now, while Player {b} has not earned it yet."]
        for line in rng.sample(FILLER, len(FILLER)):
            words.append(line)
            if len(" ".join(words).split()) >= 60:
                break
        return " ".join(words)


def _schema_of(kwargs: dict[str, Any]) -> dict | None:
    """The JSON schema a structured-output call asks for, if any."""
    fmt = kwargs.get("response_format")
    if not isinstance(fmt, dict):
        return None
    if fmt.get("type") == "json_schema":
        return fmt["json_schema"]["schema"]
    return fmt.get("schema")


def _fill(schema: dict, rng: random.Random, seats: list[int], me: int, speech: Callable[[], str],
          key: str = "") -> Any:
    """A random value that satisfies the (simple) schema: long text fields and a `response` (the combined step's
    speech, however short llm.fit made it) get a speech, short ones a sentence, a vote approves APPROVE_SHARE of
    the time."""
    kind = schema.get("type")
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        options = schema["enum"]
        if set(options) == {"approve", "reject"}:
            return "approve" if rng.random() < APPROVE_SHARE else "reject"
        return rng.choice(options)
    if kind == "object":
        return {k: _fill(v, rng, seats, me, speech, k) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        item = schema.get("items", {})
        n = schema.get("minItems", 1)
        options = list(item.get("enum", seats))
        return rng.sample(options, min(n, len(options)))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "integer":
        return rng.choice(seats)
    if kind == "number":
        return round(rng.uniform(schema.get("minimum", 0.0), schema.get("maximum", 1.0)), 2)
    if schema.get("maxLength", 0) >= 500 or key == "response":
        return speech()
    return rng.choice(FILLER)
