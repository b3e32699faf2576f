"""What LLMClient talks to: a `Chat` answers a list of messages with text and token counts.

Two kinds: `LangchainChat` wraps any langchain chat model (OpenAI through ChatOpenAI, the scripted model,
whatever `init_chat_model` builds); `OpenAIHTTP` (llm/http.py) speaks the chat-completions protocol to an
OpenAI-compatible server (and the embedded model's) directly, at a small fraction of the CPU per call.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from avalon_agents.llm.stable import Breakpoints


@dataclass(frozen=True)
class Answer:
    """A model's reply: its text, the provider's token counts (0 when it gave none) and the HTTP headers of the
    answer where the path can see them (the pacer reads the provider's rate limits there)."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    headers: Mapping[str, str] = field(default_factory=dict, compare=False)
    cached_tokens: int = 0
    """Input tokens the provider served from its prompt cache (billed at the cached-input price)."""


class Chat(Protocol):
    async def answer(self, messages: Sequence[BaseMessage], response_format: dict[str, Any] | None) -> Answer:
        """One request, no retry (LLMClient retries). Raises on any failure."""
        ...


RATE_HEADERS = ("x-ratelimit-", "anthropic-ratelimit-", "retry-after")
"""The headers an answer keeps for the pacer (llm.pacer): the provider's rate limits."""

_headers: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("answer_headers", default=None)


async def capture_headers(response: object) -> None:
    """An httpx response hook (the ChatOpenAI clients this package builds have it): the answer's rate-limit
    headers go to the call that is waiting for it (a context variable set by LangchainChat.answer), 429s and
    constrained answers included, where langchain's own `include_response_headers` sees neither."""
    box = _headers.get()
    if box is not None:
        box.clear()
        box.update({k.lower(): v for k, v in response.headers.items()  # type: ignore[attr-defined]
                    if k.lower().startswith(RATE_HEADERS)})


class LangchainChat:
    """A langchain chat model as a Chat (`response_format`, when given, is passed to the model).

    Args:
        breakpoints: the model's provider caches a prompt's prefix only at a marked block (Anthropic): the
            messages go as content blocks with breakpoints where their stable parts end (llm.stable).
    """

    def __init__(self, model: BaseChatModel, breakpoints: bool = False) -> None:
        self.model = model
        self.breakpoints = Breakpoints() if breakpoints else None

    async def answer(self, messages: Sequence[BaseMessage], response_format: dict[str, Any] | None) -> Answer:
        extra = {"response_format": response_format} if response_format else {}
        if self.breakpoints is not None:
            messages = self.breakpoints.apply(messages)
        box: dict[str, str] = {}
        token = _headers.set(box)
        try:
            reply = await self.model.ainvoke(list(messages), **extra)
        except Exception as exc:
            if box and not getattr(exc, "headers", None):
                exc.headers = dict(box)  # type: ignore[attr-defined]  # the pacer reads a 429's Retry-After
            raise
        finally:
            _headers.reset(token)
        usage = reply.usage_metadata or {}
        # ChatOpenAI built with include_response_headers=True puts the raw answer's headers here
        headers = box or (reply.response_metadata or {}).get("headers") or {}
        cached = (usage.get("input_token_details") or {}).get("cache_read") or 0
        return Answer(str(reply.content), usage.get("input_tokens", 0), usage.get("output_tokens", 0),
                      dict(headers), int(cached))
