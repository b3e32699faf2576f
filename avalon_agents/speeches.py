"""Reading a speech against its prompt: how many consecutive words it copied, the copied words trimmed away, a cap
in words that ends at a sentence end, and whether it stops mid-sentence. Pure functions on text; the extractor's
speech guard and the health figures use them (avalon_agents.profiles says when).

Words are compared case-blind and without punctuation, so "The host has asked me" copies "the host has asked
me," word for word.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from avalon_agents.profiles import ECHO_WORDS

TOKEN = re.compile(r"\S+")
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
SENTENCE_END = re.compile(r"[.!?…](?:[\"'”’)\]]*)(?=\s|$)")
ENDS_SENTENCE = re.compile(r"[.!?…][\"'”’)\]*]*\s*$")


def _norm(token: str) -> str:
    return "".join(WORD.findall(token.lower()))


def words(text: str) -> list[str]:
    """The text's words, lower case, without punctuation."""
    return [w for w in (_norm(t) for t in TOKEN.findall(text)) if w]


def copied_run(answer: str, prompt: str) -> int:
    """The most consecutive words of `answer` that stand in the same order, consecutively, in `prompt`."""
    said, given = words(answer), words(prompt)
    if not said or not given:
        return 0
    match = SequenceMatcher(None, given, said, autojunk=False).find_longest_match(0, len(given), 0, len(said))
    return match.size


def echoes(answer: str, prompt: str) -> bool:
    """The answer copies ECHO_WORDS or more consecutive words of its prompt."""
    return copied_run(answer, prompt) >= ECHO_WORDS


def sentences(text: str) -> list[str]:
    """The text's sentences (a sentence ends at . ! ? or … followed by a space or the end, or at a line end)."""
    parts = re.split(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n+", text.strip())
    return [p.strip() for p in parts if p and p.strip()]


def trim_copies(answer: str, prompt: str, run: int = ECHO_WORDS) -> str:
    """`answer` without every sentence that holds a stretch of `run` or more consecutive words standing in
    `prompt`: what is left is the speaker's own sentences, whole (a trimmed fragment would read as nonsense)."""
    given = words(prompt)
    grams = {tuple(given[i:i + run]) for i in range(len(given) - run + 1)}
    parts = sentences(answer)
    flat = [(k, w) for k, part in enumerate(parts) for w in words(part)]  # a copy may cross sentences
    copied: set[int] = set()
    for i in range(len(flat) - run + 1):
        if tuple(w for _, w in flat[i:i + run]) in grams:
            copied.update(k for k, _ in flat[i:i + run])
    return " ".join(part for k, part in enumerate(parts) if k not in copied)


LABEL = re.compile(r"^\s*(?:(?:host|you|me|player\s*\d+)\s*|[A-Z][a-z]{0,11}):\s+", re.IGNORECASE)


def unlabelled(text: str) -> str:
    """The text without the labels a small model starts with ("Host:", "Player 3:", "You:", "A:",
    "Preliminary:")."""
    while (match := LABEL.match(text)) is not None:
        text = text[match.end():]
    return text


def mid_sentence(text: str) -> bool:
    """The text stops before its sentence ends (a model cut off at its token cap)."""
    stripped = text.strip()
    return bool(stripped) and not ENDS_SENTENCE.search(stripped)


def cut_speech(text: str, max_words: int) -> tuple[str, bool]:
    """(the speech in at most `max_words` words, ending at its last sentence end; whether anything was cut).
    Without a sentence end inside the cap, the words up to the cap end with a full stop."""
    text = text.strip()
    tokens = list(TOKEN.finditer(text))
    over = len(tokens) > max_words > 0
    head = text[: tokens[max_words - 1].end()] if over else text
    if not mid_sentence(head):
        return head, over
    ends = [m.end() for m in SENTENCE_END.finditer(head)]
    if ends:
        return head[: ends[-1]].strip(), True
    if not head:
        return head, over
    return head.rstrip(" ,;:-") + ".", True
