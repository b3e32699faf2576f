"""LLMClient: the one door every LLM call goes through, and the usage ledger it writes.

Each call is recorded (to the game's trace.jsonl through a Tracer) with seat, purpose, prompt id and
hash, the messages and the reply, input/output tokens (the provider's, or a local estimate, and which),
latency, attempts and outcome (ok / retried / failed). Retries use langchain's retry runnable with
exponential backoff; API keys never enter a record.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import weakref
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from typing import Any, Protocol

import httpx
import openai
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableLambda

from avalon_agents.llm.specs import ModelConfig, make_model
from avalon_agents.llm.tokens import count_tokens


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
)
HOST_STEP: ContextVar[int | None] = ContextVar("avalon_host_step", default=None)
"""The host's step (a round's preparation, one batch of requests, the game end) that a call serves; the
host sets it, every call record carries it, and the critical path of a game is computed from it."""

BACKOFF = {"initial": 0.2, "max": 8.0, "exp_base": 2.0, "jitter": 0.2}


class Tracer(Protocol):
    """Where trace records go (GameRecorder writes them to trace.jsonl)."""

    def trace(self, record: dict[str, Any]) -> None: ...


class MemoryTracer:
    """Keeps trace records in a list (tests, throwaway runs)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def trace(self, record: dict[str, Any]) -> None:
        self.records.append(record)


class LLMCallFailed(RuntimeError):
    """Every attempt of a call failed; the failure is already in the trace."""


class _Attempts(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.count = 0

    async def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.count += 1


def _nonempty(message: BaseMessage) -> BaseMessage:
    if not str(message.content).strip():
        raise EmptyReply("the model answered with an empty message")
    return message


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
    """Calls one model and records every call.

    Args:
        config: the model spec and call settings.
        model: the chat model (built from `config` if not given).
        tracer: receives one record per call.
        concurrency: at most this many calls in flight through this client (None: no limit).
        slots: a semaphore (or any async context manager that admits a call) shared with other clients of the
            same model (instead of `concurrency`), so that one limit covers, say, the agents' and the
            extractor's calls to one server; the Ray backend passes one that spans the cluster.
    """

    def __init__(self, *, config: ModelConfig, model: BaseChatModel | None = None, tracer: Tracer | None = None,
                 concurrency: int | None = None, slots: AbstractAsyncContextManager | None = None) -> None:
        self.config = config
        self._given = model
        self._models: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        if model is None:
            make_model(config)  # fail early on a bad spec or a missing key (and start a local server)
        self.tracer = tracer
        self._slots = slots or (asyncio.Semaphore(concurrency) if concurrency else None)
        self._runnables: dict[tuple[int, str], Any] = {}

    @property
    def model(self) -> BaseChatModel:
        """The chat model, one per event loop: an HTTP client's connections belong to the loop that opened
        them, so a client reused by a second `asyncio.run` would fail with "Event loop is closed"."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        model = self._models.get(loop)
        if model is None:
            model = self._models[loop] = make_model(self.config)
        return model

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
        purpose: str,
        prompt_id: str,
        prompt_hash: str = "",
        seat: int | None = None,
        schema: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
    ) -> str:
        """Send `messages`; return the reply text. With `schema`, ask for constrained JSON output.

        Raises:
            LLMCallFailed: every attempt failed (recorded with outcome "failed").
        """
        fmt = response_format(schema, purpose.replace("/", "_"), self.config.schema_style) if schema else None
        runnable = self._runnable(fmt)
        attempts = _Attempts()
        record: dict[str, Any] = {
            "type": "llm_call",
            "seat": seat,
            "purpose": purpose,
            "prompt_id": prompt_id,
            "prompt_hash": prompt_hash or text_hash("".join(str(m.content) for m in messages)),
            "model": self.config.spec,
            "constrained": fmt is not None,
            **(context or {}),
            "step": HOST_STEP.get(),
            "messages": [{"role": m.type, "content": str(m.content)} for m in messages],
        }
        start = time.perf_counter()
        try:
            if self._slots:
                async with self._slots:
                    reply = await self._invoke(runnable, messages, attempts)
            else:
                reply = await self._invoke(runnable, messages, attempts)
        except Exception as exc:
            record.update(outcome="failed", attempts=attempts.count, latency_s=round(time.perf_counter() - start, 4),
                          error=f"{type(exc).__name__}: {str(exc)[:300]}", reply=None,
                          input_tokens=0, output_tokens=0, tokens_source="none")
            self._trace(record)
            raise LLMCallFailed(f"{purpose}: {type(exc).__name__}: {str(exc)[:200]}") from exc
        text = str(reply.content)
        usage = reply.usage_metadata or {}
        provider_counts = bool(usage.get("input_tokens") or usage.get("output_tokens"))
        record.update(
            outcome="ok" if attempts.count <= 1 else "retried",
            attempts=attempts.count,
            latency_s=round(time.perf_counter() - start, 4),
            reply=text,
            input_tokens=usage.get("input_tokens", 0) if provider_counts else sum(
                count_tokens(m["content"]) for m in record["messages"]),
            output_tokens=usage.get("output_tokens", 0) if provider_counts else count_tokens(text),
            tokens_source="provider" if provider_counts else "local_estimate",
        )
        self._trace(record)
        return text

    def _runnable(self, fmt: dict[str, Any] | None):
        """model (bound to the response format) | non-empty check, with retries; built once per format."""
        model = self.model
        key = (id(model), json.dumps(fmt, sort_keys=True))
        runnable = self._runnables.get(key)
        if runnable is None:
            bound = model.bind(response_format=fmt) if fmt else model
            runnable = self._runnables[key] = (bound | RunnableLambda(_nonempty)).with_retry(
                retry_if_exception_type=RETRYABLE,
                stop_after_attempt=self.config.retries + 1,
                exponential_jitter_params=BACKOFF,
            )
        return runnable

    @staticmethod
    async def _invoke(runnable, messages: Sequence[BaseMessage], attempts: _Attempts):
        return await runnable.ainvoke(list(messages), config={"callbacks": [attempts]})

    def _trace(self, record: dict[str, Any]) -> None:
        if self.tracer is not None:
            self.tracer.trace(record)
