"""Where a prompt's stable part ends, for a provider that caches a prefix only where it is told to (Anthropic's
`cache_control` breakpoints; OpenAI, vLLM and llama.cpp find a repeated prefix themselves).

An agent marks its user message with `stable_message(text, stable)`: `stable` is the start of `text` that the
seat's next prompts begin with too (what it privately knows, the game so far, append-only); the rest is the step's
own material. The mark is a key in the message's `additional_kwargs`, which no provider sends and no record holds:
the text, the trace and the request hash are the same with it or without it. A system message is stable whole.

`Breakpoints` turns the messages into content blocks for a provider that declares `cache_breakpoints`
(llm.registry): a breakpoint at the end of the system message, one at the end of the stable part, and one where
the same seat's previous stable part ended (its cache entry, which this call then reads), at most three of the
four Anthropic allows. llm.chat's LangchainChat applies it before the model sees the messages.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # langchain is imported where a message is made: the CLI's checks and --help stay light
    from langchain_core.messages import BaseMessage, HumanMessage

STABLE = "avalon_stable_chars"
"""The key of a message's `additional_kwargs` holding how many of its content's characters are stable."""
BREAKPOINT = {"type": "ephemeral"}
"""Anthropic's cache_control for a breakpoint (the default five-minute cache)."""
REMEMBERED = 256
"""Stable parts remembered (the most recent), to find the one a new prompt extends."""


def stable_message(text: str, stable: str) -> HumanMessage:
    """The user message `text`, its first `len(stable)` characters marked stable (`stable` must begin `text`;
    if it does not, nothing is marked)."""
    from langchain_core.messages import HumanMessage

    return HumanMessage(text, additional_kwargs={STABLE: len(stable)} if stable and text.startswith(stable) else {})


def stable_chars(message: BaseMessage) -> int:
    """How many characters at the start of the message's content are stable: all of a system message's, the
    marked part of another's (0 unmarked)."""
    if message.type == "system":
        return len(str(message.content))
    return int(message.additional_kwargs.get(STABLE, 0))


def _block(text: str, breakpoint: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if breakpoint:
        block["cache_control"] = dict(BREAKPOINT)
    return block


class Breakpoints:
    """Content blocks with cache breakpoints, remembering the stable parts sent so far (one per call), so that a
    prompt extending an earlier one is split where that one ended."""

    def __init__(self) -> None:
        self._sent: OrderedDict[tuple[str, str], None] = OrderedDict()

    def _earlier(self, system: str, stable: str) -> int:
        """The length of the longest stable part sent after the same system message that `stable` extends."""
        best = 0
        for before, text in self._sent:
            if before == system and best < len(text) < len(stable) and stable.startswith(text):
                best = len(text)
        return best

    def _remember(self, system: str, stable: str) -> None:
        self._sent[(system, stable)] = None
        self._sent.move_to_end((system, stable))
        while len(self._sent) > REMEMBERED:
            self._sent.popitem(last=False)

    def apply(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The messages with string contents as text blocks: the system message and each marked message's stable
        part end at a breakpoint, the stable part split (and a breakpoint set) where the same seat's previous one
        ended. A block never holds only whitespace (the provider refuses one)."""
        system = next((str(m.content) for m in messages if m.type == "system"), "")
        out = []
        for message in messages:
            text, cut = message.content, stable_chars(message)
            if not isinstance(text, str) or not cut or not text.strip():
                out.append(message)
                continue
            stable = text[:cut]
            cuts = [0, cut, len(text)]
            if message.type != "system":
                cuts.insert(1, self._earlier(system, stable))
                self._remember(system, stable)
            blocks: list[dict[str, Any]] = []
            start = 0
            for end in cuts[1:]:
                if end > start and text[start:end].strip():  # a piece of whitespace alone joins the next one
                    blocks.append(_block(text[start:end], breakpoint=end in cuts[1:-1] or end == cut))
                    start = end
            if start < len(text):  # whitespace at the end
                blocks[-1]["text"] += text[start:]
            out.append(message.model_copy(update={"content": blocks}))
        return out
