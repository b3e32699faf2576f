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
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from loguru import logger
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from avalon_agents.aio import within
from avalon_agents.llm.chat import Answer, Chat, LangchainChat
from avalon_agents.llm.fit import fitted
from avalon_agents.llm.health import LLMCallFailed, ModelHealth, ModelUnusable, hang_limit, quota_gone
from avalon_agents.llm.http import BadAnswer, CutOff, ServerError
from avalon_agents.llm.pacer import Pacer, pacer_for
from avalon_agents.llm.providers import endpoint_of, make_chat, make_model
from avalon_agents.llm.replay import Recording, request_hash, run_recording
from avalon_agents.llm.settings import ANSWER_CHARS_PER_TOKEN, COLD_START, MIN_ANSWER_CHARS, ModelSettings
from avalon_agents.llm.tokens import count_tokens
from avalon_agents.records.trace import LLMCall, Message, Purpose, Tracer

SLOW_CALL_S = 60.0
"""A call slower than this is noted in run.log."""
THROTTLE_PATIENCE_S = 600.0
"""A 429 is waited out and asked again while the endpoint answered some call within this long; after that the
call fails (the provider is not slowing the run down, it has stopped it)."""


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


def retryable(error: BaseException) -> bool:
    """Whether another attempt may get another answer (a fault of the connection, the server or the sample)."""
    if isinstance(error, ServerError):
        return error.retryable
    return isinstance(error, RETRYABLE)


def rate_limited(error: BaseException) -> bool:
    """A 429 that waiting fixes (backpressure), not a quota that is used up."""
    status = getattr(error, "status", None) or getattr(error, "status_code", None)
    return status == 429 and not quota_gone(error)


def headers_of(error: BaseException) -> Mapping[str, str]:
    """The headers of a failed answer (llm.http's ServerError, an SDK error's response, or those LangchainChat
    kept)."""
    headers = getattr(error, "headers", None)
    if headers:
        return headers
    return getattr(getattr(error, "response", None), "headers", None) or {}


@dataclass
class Throttling:
    """What one call went through: its tries, answers 429 and seconds waited for its turn."""

    answers_429: int = 0
    waited_s: float = 0.0
    attempts: int = 0
    """Tries of the request (a 429 is not a try: the pacer waits it out)."""


def answered(task: asyncio.Future) -> bool:
    """Whether a finished request came back with something from the server: an answer, or an error status or
    body (not a timeout or a broken connection)."""
    if task.cancelled():
        return False
    error = task.exception()
    return error is None or isinstance(error, (ServerError, BadAnswer, CutOff, openai.APIStatusError,
                                               openai.APIResponseValidationError, json.JSONDecodeError))


def _retrieved(task: asyncio.Future) -> None:
    """A request given up: its end (cancelled, or an error after the wait ended) is nobody's to report."""
    if not task.cancelled():
        task.exception()


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
        endpoint = endpoint_of(self.settings)
        self.pacer: Pacer | None = pacer_for(endpoint, *self.settings.limits) if endpoint else None
        """The endpoint's pacer, shared with every other client of that endpoint in the process."""

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
        schema = fitted(schema, self.settings.max_tokens) if schema else None  # an answer ends inside it (llm.fit)
        fmt = response_format(schema, name, self.settings.schema_style) if schema else None
        throttling = Throttling()
        sent = tuple(Message(role=m.type, content=str(m.content)) for m in messages)
        step = self.tracer.step if self.tracer is not None else None
        record = dict(seat=seat, **purpose.model_dump(), quest=quest, attempt=attempt, step=step,
                      prompt_id=prompt_id, prompt_hash=prompt_hash or text_hash("".join(m.content for m in sent)),
                      settings=self._public, constrained=fmt is not None, messages=sent, about=about or {},
                      request_hash=request_hash(sent, schema if fmt else None))
        recording = self._recording()
        if recording is not None:
            found = recording.take(record["request_hash"])
            if found is not None:  # paid for already: answered from the record, nothing sent
                self._trace(LLMCall(**record, reply=found.reply, input_tokens=found.input_tokens,
                                    output_tokens=found.output_tokens, cached_tokens=found.cached_tokens,
                                    tokens_source=found.tokens_source, replayed=True))
                return found.reply
            if recording.strict:
                raise recording.mismatch(seat, step, purpose.label, sent)
        start = time.perf_counter()
        try:
            if self._slots:
                async with self._slots:
                    reply = await self._answer(messages, fmt, throttling)
            else:
                reply = await self._answer(messages, fmt, throttling)
        except Exception as exc:
            error = f"{type(exc).__name__}: {str(exc)[:300]}"
            self._trace(LLMCall(**record, outcome="failed", attempts=throttling.attempts, error=error,
                                latency_s=round(time.perf_counter() - start, 4),
                                throttled=throttling.answers_429, waited_s=round(throttling.waited_s, 4)))
            logger.warning("LLM call failed after {} attempt(s): seat {}, {}, {}: {}", throttling.attempts, seat,
                           purpose.label, self.settings.spec, error)
            if self.health is not None:
                self.health.record(exc)
                self.health.check()
            raise LLMCallFailed(f"{purpose.label}: {error}") from exc
        if self.health is not None:
            self.health.record(None)
        text = reply.text
        cap = max(MIN_ANSWER_CHARS, (self.settings.max_tokens or 0) * ANSWER_CHARS_PER_TOKEN)
        cut = max(0, len(text) - cap)
        if cut:
            logger.warning("LLM answer cut at {:,} characters ({:,} more): seat {}, {}, {} (the server ignored "
                           "max_tokens)", cap, cut, seat, purpose.label, self.settings.spec)
            text = text[:cap]
        provider_counts = bool(reply.input_tokens or reply.output_tokens)
        latency = round(time.perf_counter() - start, 4)
        if throttling.attempts > 1:
            logger.info("LLM call retried: {} attempts, seat {}, {}, {}", throttling.attempts, seat, purpose.label,
                        self.settings.spec)
        if latency > SLOW_CALL_S:
            logger.info("slow LLM call: {:.1f} s, seat {}, {}, {}", latency, seat, purpose.label, self.settings.spec)
        self._trace(LLMCall(
            **record,
            outcome="ok" if throttling.attempts <= 1 else "retried",
            attempts=throttling.attempts,
            latency_s=latency,
            throttled=throttling.answers_429,
            waited_s=round(throttling.waited_s, 4),
            cut_chars=cut,
            reply=text,
            input_tokens=reply.input_tokens if provider_counts else sum(count_tokens(m.content) for m in sent),
            output_tokens=reply.output_tokens if provider_counts else count_tokens(text),
            cached_tokens=reply.cached_tokens,
            tokens_source="provider" if provider_counts else "tiktoken",
        ))
        return text

    async def _answer(self, messages: Sequence[BaseMessage], fmt: dict[str, Any] | None,
                      throttling: Throttling) -> Answer:
        """The chat's answer, retried with exponential backoff and jitter while the fault is retryable;
        `throttling.attempts` counts the tries (a 429 is not a try: the pacer waits it out, see `_paced`)."""
        chat = self.chat
        chars = sum(len(str(m.content)) for m in messages)
        async for attempt in AsyncRetrying(stop=stop_after_attempt(self.settings.retries + 1),
                                           wait=wait_exponential_jitter(**BACKOFF),
                                           retry=retry_if_exception(retryable), reraise=True):
            with attempt:
                throttling.attempts += 1
                answer = await self._paced(chat, messages, fmt, chars, throttling)
                if not answer.text.strip():
                    raise EmptyReply("the model answered with an empty message")
        return answer

    async def _paced(self, chat: Chat, messages: Sequence[BaseMessage], fmt: dict[str, Any] | None, chars: int,
                     throttling: Throttling) -> Answer:
        """One request at the endpoint's pace; a 429 waits as long as the server says and asks again, while
        the endpoint makes progress (THROTTLE_PATIENCE_S)."""
        pacer = self.pacer
        if pacer is None:
            return await self._timed(chat, messages, fmt)
        while True:
            ticket = await pacer.acquire(chars, self.settings.max_tokens or 0)
            throttling.waited_s += ticket.waited_s
            try:
                answer = await self._timed(chat, messages, fmt)
            except Exception as exc:
                if rate_limited(exc):
                    pacer.throttle(ticket, headers_of(exc))
                    throttling.answers_429 += 1
                    if not pacer.stalled(THROTTLE_PATIENCE_S):
                        continue
                else:
                    pacer.release(ticket)
                raise
            except BaseException:  # cancelled (a timeout, the watchdog): the request is no longer in flight
                pacer.release(ticket)
                raise
            pacer.settle(ticket, answer.headers, chars, answer.input_tokens, answer.output_tokens)
            return answer

    def _recording(self) -> Recording | None:
        """The answers this call may take instead of asking: the game's own earlier attempt (a resumed game), or
        under `replay:RUN_DIR` the recorded game at the same place in that run."""
        tracer = self.tracer
        if tracer is None:
            return None
        found = getattr(tracer, "recording", None)
        if found is None and self.settings.declared.replays:
            found = run_recording(Path(self.settings.spec.partition(":")[2]), getattr(tracer, "path", None))
            tracer.recording = found
        return found

    async def _timed(self, chat: Chat, messages: Sequence[BaseMessage], fmt: dict[str, Any] | None) -> Answer:
        """One request under the timeout; a model's first calls (none answered yet) wait COLD_START times as
        long (the chats themselves are built with the longer timeout). While it waits, the server's silence is
        watched (llm.health): once nothing came back from it for `hang_limit`, the request stops with
        ModelUnusable, whatever its own timeout (the first calls' too)."""
        health = self.health
        timeout = self.settings.timeout
        if health is None:
            return await within(chat.answer(messages, fmt), timeout)
        health.check()  # found unusable while this call waited for its turn: nothing more is sent
        if health.ok == 0:
            timeout = timeout * COLD_START
        limit = hang_limit(self.settings.timeout)
        end = time.monotonic() + timeout
        task = asyncio.ensure_future(chat.answer(messages, fmt))
        health.sent()
        heard = False
        try:
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    raise asyncio.TimeoutError()
                done, _ = await asyncio.wait({task}, timeout=min(left, max(health.quiet_left(limit), 0.01)))
                if done:
                    heard = answered(task)
                    return task.result()
                if health.hung(limit):
                    raise ModelUnusable(health.verdict)
        finally:
            if not task.done():
                task.cancel()
            task.add_done_callback(_retrieved)
            health.came_back(heard)

    def _trace(self, record: LLMCall) -> None:
        if self.tracer is not None:
            self.tracer.trace(record)
