"""What LLMClient talks to: a `Chat` answers a list of messages with text and token counts.

Two kinds: `LangchainChat` wraps any langchain chat model (OpenAI through ChatOpenAI, the scripted model,
whatever `init_chat_model` builds); `OpenAIHTTP` (llm/http.py) speaks the chat-completions protocol to an
OpenAI-compatible server (and the embedded model's) directly, at a small fraction of the CPU per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage


@dataclass(frozen=True)
class Answer:
    """A model's reply: its text and the provider's token counts (0 when it gave none)."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


class Chat(Protocol):
    async def answer(self, messages: Sequence[BaseMessage], response_format: dict[str, Any] | None) -> Answer:
        """One request, no retry (LLMClient retries). Raises on any failure."""
        ...


class LangchainChat:
    """A langchain chat model as a Chat (`response_format`, when given, is passed to the model)."""

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    async def answer(self, messages: Sequence[BaseMessage], response_format: dict[str, Any] | None) -> Answer:
        extra = {"response_format": response_format} if response_format else {}
        reply = await self.model.ainvoke(list(messages), **extra)
        usage = reply.usage_metadata or {}
        return Answer(str(reply.content), usage.get("input_tokens", 0), usage.get("output_tokens", 0))
