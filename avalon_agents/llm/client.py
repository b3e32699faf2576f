"""LLMClient: the one door every LLM call goes through, and the usage ledger it writes.

Each call is recorded (to the game's trace through a Tracer) as a typed `LLMCall`: seat, what the call was
for (a `Purpose`), prompt id and hash, the settings actually used, the messages and the reply, input/output
tokens (the provider's, or tiktoken's count, and which), latency, attempts and outcome (ok / retried /
failed), and the host's step (which the host sets on the tracer). Retries use tenacity with exponential
backoff and jitter; API keys never enter a record.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import weakref
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import aiohttp
import httpx
import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from loguru import logger
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from avalon_agents.llm.chat import Answer, Chat, LangchainChat
from avalon_agents.llm.health import ModelHealth
from avalon_agents.llm.http import BadAnswer, CutOff, ServerError
from avalon_agents.llm.providers import make_chat, make_model
from avalon_agents.llm.settings import ModelSettings
from avalon_agents.llm.tokens import count_tokens
from avalon_agents.records.trace import LLMCall, Message, Purpose, Tracer

SLOW_CALL_S = 60.0
"""A call slower than this is noted in run.log."""


class EmptyReply(RuntimeError):
    """The model answered with nothing (retried like a transient fault)."""


RETRYABLE = (
    openai.APIConnectionError,  # includes timeouts
    openai.RateLimitError,
    openai.InternalServerError,
    openai.APIResponseValidationError,
    openai.UnprocessableEntityError,
    httpx.HTTPError,
    json.JSONDecodeError,
    EmptyReply,
    openai.LengthFinishReasonError,  # a constrained answer cut off at max_tokens: a new sample is usually shorter
    aiohttp.ClientError,  # llm.http: connections
    asyncio.TimeoutError,
    BadAnswer,
    CutOff,
)
BACKOFF = {"multiplier": 0.2, "max": 8.0, "exp_base": 2.0, "jitter": 0.2}


class LLMCallFailed(RuntimeError):
    """Every attempt of a call failed; the failure is already in the trace."""


def retryable(error: BaseException) -> bool:
    """Whether another attempt may get another answer (a fault of the connection, the server or the sample)."""
    if isinstance(error, ServerError):
        return error.retryable
    return isinstance(error, RETRYABLE)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def response_format(schema: dict[str, Any], name: str, style: str) -> dict[str, Any] | None:
    """The `response_format` that asks this provider for output matching `schema`."""
    if style == "llama_cpp":
        return {"type": "json_object", "schema": schema}
    if style == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
    return None


class LLMClient:
    """Calls one model with complete settings and records every call.

    Args:
        settings: the model spec and call settings (complete: see ModelSettings.complete).
        model: the chat model, a langchain one or a Chat (built from `settings` if not given: see
            llm.providers.make_chat).
        tracer: receives one record per call.
        slots: an async context manager that admits a call (a semaphore shared by the clients of one model,
            so that one limit covers the agents' and the extractor's calls to one server; the Ray backend
            passes one that spans the cluster); None: no limit.
        health: the model's health across the run (shared by its clients); a call to a model found unusable
            raises ModelUnusable.
    """

    def __init__(self, *, settings: ModelSettings, model: BaseChatModel | Chat | None = None,
                 tracer: Tracer | None = None, slots: AbstractAsyncContextManager | None = None,
                 health: ModelHealth | None = None) -> None:
        self.settings = settings.complete()
        self._given: Chat | None = LangchainChat(model) if isinstance(model, BaseChatModel) else model
        self._chats: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        if model is None:
            make_model(self.settings)  # fail early on a bad spec or a missing key (and start a local server)
        self.tracer = tracer
        self._slots = slots
        self.health = health
        self._public = self.settings.public()

    @property
    def chat(self) -> Chat:
        """What answers the calls, one per event loop: an HTTP client's connections belong to the loop that
        opened them, so a client reused by a second `asyncio.run` would fail with "Event loop is closed"."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        chat = self._chats.get(loop)
        if chat is None:
            chat = self._chats[loop] = make_chat(self.settings)
        return chat

    def with_tracer(self, tracer: Tracer | None) -> LLMClient:
        """The same model and settings, recording to another tracer (one per game)."""
        clone = LLMClient.__new__(LLMClient)
        clone.__dict__.update(self.__dict__)
        clone.tracer = tracer
        return clone

    async def call(
        self,
        messages: Sequence[BaseMessage],
        *,
        purpose: Purpose,
        prompt_id: str,
        prompt_hash: str = "",
        seat: int | None = None,
        schema: dict[str, Any] | None = None,
        quest: int | None = None,
        attempt: int | None = None,
        about: dict[str, Any] | None = None,
    ) -> str:
        """Send `messages`; return the reply text. With `schema`, ask for constrained JSON output.

        Raises:
            LLMCallFailed: every attempt failed (recorded with outcome "failed").
            ModelUnusable: the model's calls fail so that the run would be fallbacks (see llm.health).
        """
        if self.health is not None:
            self.health.check()
        # Suspend once, so that the rest runs in a task of its own: the host's gather_eager runs a seat's
        # first step in the host's task, and a timeout that cancels "the current task" (aiohttp's) must
        # cancel this call, not the host.
        await asyncio.sleep(0)
        name = "_".join(p for p in (purpose.stage, purpose.name, purpose.part, purpose.request) if p)
        fmt = response_format(schema, name, self.settings.schema_style) if schema else None
        attempts = [0]
        sent = tuple(Message(role=m.type, content=str(m.content)) for m in messages)
        record = dict(seat=seat, **purpose.model_dump(), quest=quest, attempt=attempt,
                      step=self.tracer.step if self.tracer is not None else None, prompt_id=prompt_id,
                      prompt_hash=prompt_hash or text_hash("".join(m.content for m in sent)),
                      settings=self._public, constrained=fmt is not None, messages=sent, about=about or {})
        start = time.perf_counter()
        try:
            if self._slots:
                async with self._slots:
                    reply = await self._answer(messages, fmt, attempts)
            else:
                reply = await self._answer(messages, fmt, attempts)
        except Exception as exc:
            error = f"{type(exc).__name__}: {str(exc)[:300]}"
            self._trace(LLMCall(**record, outcome="failed", attempts=attempts[0], error=error,
                                latency_s=round(time.perf_counter() - start, 4)))
            logger.warning("LLM call failed after {} attempt(s): seat {}, {}, {}: {}", attempts[0], seat,
                           purpose.label, self.settings.spec, error)
            if self.health is not None:
                self.health.record(exc)
                self.health.check()
            raise LLMCallFailed(f"{purpose.label}: {error}") from exc
        if self.health is not None:
            self.health.record(None)
        text = reply.text
        provider_counts = bool(reply.input_tokens or reply.output_tokens)
        latency = round(time.perf_counter() - start, 4)
        if attempts[0] > 1:
            logger.info("LLM call retried: {} attempts, seat {}, {}, {}", attempts[0], seat, purpose.label,
                        self.settings.spec)
        if latency > SLOW_CALL_S:
            logger.info("slow LLM call: {:.1f} s, seat {}, {}, {}", latency, seat, purpose.label, self.settings.spec)
        self._trace(LLMCall(
            **record,
            outcome="ok" if attempts[0] <= 1 else "retried",
            attempts=attempts[0],
            latency_s=latency,
            reply=text,
            input_tokens=reply.input_tokens if provider_counts else sum(count_tokens(m.content) for m in sent),
            output_tokens=reply.output_tokens if provider_counts else count_tokens(text),
            tokens_source="provider" if provider_counts else "tiktoken",
        ))
        return text

    async def _answer(self, messages: Sequence[BaseMessage], fmt: dict[str, Any] | None,
                      attempts: list[int]) -> Answer:
        """The chat's answer, retried with exponential backoff and jitter while the fault is retryable;
        `attempts[0]` counts the tries."""
        chat = self.chat
        async for attempt in AsyncRetrying(stop=stop_after_attempt(self.settings.retries + 1),
                                           wait=wait_exponential_jitter(**BACKOFF),
                                           retry=retry_if_exception(retryable), reraise=True):
            with attempt:
                attempts[0] += 1
                answer = await chat.answer(messages, fmt)
                if not answer.text.strip():
                    raise EmptyReply("the model answered with an empty message")
        return answer

    def _trace(self, record: LLMCall) -> None:
        if self.tracer is not None:
            self.tracer.trace(record)
