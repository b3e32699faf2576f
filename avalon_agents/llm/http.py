"""A thin client of the chat-completions protocol, for OpenAI-compatible servers and the embedded model.

`OpenAIHTTP` posts the request with aiohttp and reads the answer, nothing more: no SDK, no langchain runnable.
Per call it costs about 0.2 ms of CPU against ChatOpenAI's 5 ms (benchmarks/client_overhead.py), which at
a few hundred calls per game was most of the framework's own CPU. `openai:` keeps ChatOpenAI (llm.chat's
LangchainChat), so both paths stay in use and tested.

Failures raise: `ServerError` for an HTTP error status (with the server's message; `retryable` for 408, 409,
422, 429 and 5xx, the rest are the same answer on every try), `BadAnswer` for a body that is not a chat
completion, `CutOff` for a constrained answer stopped by max_tokens, aiohttp's and asyncio's errors for
connections and timeouts. LLMClient decides what to retry.

Sessions: one per event loop and server (connections belong to the loop that opened them), closed when the
loop shuts down (asyncio.run closes async generators, and one holds each session open).
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import aiohttp
from langchain_core.messages import BaseMessage

from avalon_agents.llm.chat import RATE_HEADERS, Answer
from avalon_agents.llm.settings import COLD_START, ModelSettings

ROLES = {"system": "system", "human": "user", "ai": "assistant"}
RETRY_STATUS = {408, 409, 422, 429}



class ServerError(RuntimeError):
    """The server answered with an error status."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None,
                 code: str | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.retryable = status in RETRY_STATUS or status >= 500
        self.headers = dict(headers or {})
        self.code = code
        """The error's `code` in the body (OpenAI's `insufficient_quota` is a 429 that no wait fixes)."""


class BadAnswer(ValueError):
    """The body is not a chat completion (not JSON, or without a message)."""


class CutOff(RuntimeError):
    """A constrained answer stopped at max_tokens: its JSON is cut (a new sample is usually shorter)."""


_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, aiohttp.ClientSession]] = (
    weakref.WeakKeyDictionary())
_closers: list[AsyncIterator[None]] = []


async def _hold(session: aiohttp.ClientSession) -> AsyncIterator[None]:
    try:
        yield
    finally:  # the loop is shutting down (asyncio.run's shutdown_asyncgens)
        await session.close()


async def loop_session(key: Any, limit: int = 0) -> aiohttp.ClientSession:
    """The running loop's session for `key` (a server), with at most `limit` connections (0: no limit; the
    client pool's slots bound the calls in flight)."""
    loop = asyncio.get_running_loop()
    mine = _sessions.setdefault(loop, {})
    session = mine.get(key)
    if session is None or session.closed:
        session = mine[key] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, limit_per_host=limit, keepalive_timeout=60))
        closer = _hold(session)
        await closer.__anext__()
        _closers[:] = [c for c in _closers if c.ag_frame is not None] + [closer]
    return session


class OpenAIHTTP:
    """Chat completions at `url` (ending in /v1) for `model`, with complete `settings`.

    Args:
        key: the bearer token to send (never logged, never recorded).
        connections: at most this many connections to the server from one event loop (0: no limit; the
            embedded model's server takes one: see llm.local).
    """

    def __init__(self, model: str, url: str, key: str, settings: ModelSettings, connections: int = 0) -> None:
        self.url = f"{url.rstrip('/')}/chat/completions"
        self.connections = connections
        self.headers = {"Authorization": f"Bearer {key}"}
        # max_completion_tokens is OpenAI's current name; llama.cpp's server reads only max_tokens: say both
        self.base = {"model": model, "temperature": settings.temperature, "max_tokens": settings.max_tokens,
                     "max_completion_tokens": settings.max_tokens, **settings.kwargs}
        # LLMClient holds each call to the timeout (a model's first calls to three times it): this is the outer bound
        self.timeout = aiohttp.ClientTimeout(total=settings.timeout * COLD_START)
        self.cache: dict[str, Answer] | None = {} if settings.cache else None

    async def answer(self, messages: Sequence[BaseMessage], response_format: dict[str, Any] | None) -> Answer:
        body = {**self.base, "messages": [{"role": ROLES.get(m.type, m.type), "content": str(m.content)}
                                          for m in messages]}
        if response_format:
            body["response_format"] = response_format
        data = json.dumps(body)
        if self.cache is not None and data in self.cache:
            return self.cache[data]
        session = await loop_session((self.url, self.connections), self.connections)
        async with session.post(self.url, data=data, headers={**self.headers, "Content-Type": "application/json"},
                                timeout=self.timeout) as response:
            raw = await response.read()
            status = response.status
            headers = response.headers
        if status >= 400:
            raise ServerError(status, error_message(raw), headers, error_code(raw))
        answer = _read(raw, constrained=bool(response_format), headers=headers)
        if self.cache is not None:
            self.cache[data] = answer
        return answer


def error_message(raw: bytes) -> str:
    try:
        error = json.loads(raw).get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    return " ".join(str(message or raw.decode(errors="replace")).split())[:300]


def error_code(raw: bytes) -> str | None:
    """The `code` (or `type`) of an error body, if it has one."""
    try:
        error = json.loads(raw).get("error")
    except (ValueError, AttributeError):
        return None
    if not isinstance(error, dict):
        return None
    code = error.get("code") or error.get("type")
    return str(code) if code else None


def _read(raw: bytes, constrained: bool, headers: Mapping[str, str] | None = None) -> Answer:
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        text = choice["message"]["content"] or ""
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise BadAnswer(f"not a chat completion ({type(exc).__name__}): {raw[:200]!r}") from None
    if constrained and choice.get("finish_reason") == "length":
        raise CutOff("the constrained answer reached max_tokens")
    usage = data.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return Answer(str(text), int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                  {k.lower(): v for k, v in (headers or {}).items() if k.lower().startswith(RATE_HEADERS)},
                  int(cached))
