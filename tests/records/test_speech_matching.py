"""The speech guard's matcher (speeches._Read.longest: a match grown from each place a speech's word stands in the
prompt) gives what difflib's SequenceMatcher gave before it, on real speeches and prompts: the recorded replay game's
calls, each reply against its own prompt and against other calls' prompts (which quote it), and stretches cut from
the prompts."""

from __future__ import annotations

import random
from difflib import SequenceMatcher
from pathlib import Path

import pytest

from avalon_agents import speeches
from avalon_agents.records.reader import open_run
from avalon_agents.records.trace import LLMCall

REPLAY_RUN = Path(__file__).parents[1] / "data" / "replay" / "run"


def _reference_longest(said: list[str], marked) -> tuple[int, int, int]:
    """speeches._longest as it was: SequenceMatcher over the marked words, a break for each word not marked."""
    given = [m[0] if m else f"\0{i}" for i, m in enumerate(marked)]
    if not said or not given:
        return 0, 0, 0
    match = SequenceMatcher(None, given, said, autojunk=False).find_longest_match(0, len(given), 0, len(said))
    return match.b, match.size, sum(1 for m in marked[match.a:match.a + match.size] if m and m[1])


def _reference_own_words(answer: str, prompt: str) -> tuple[int, int]:
    """speeches.own_words as it was."""
    marked = speeches._copyable(prompt).marked
    given = [m[0] if m else f"\0{i}" for i, m in enumerate(marked)]
    left, copied = [speeches.words(answer)], 0
    total = len(left[0])
    while left:
        part = max(left, key=len)
        match = SequenceMatcher(None, given, part, autojunk=False).find_longest_match(0, len(given), 0, len(part))
        if sum(1 for m in marked[match.a:match.a + match.size] if m and m[1]) < speeches.WORDING_RUN:
            break
        copied += match.size
        left.remove(part)
        left += [rest for rest in (part[:match.b], part[match.b + match.size:]) if rest]
    return copied, total - copied


@pytest.fixture(scope="module")
def corpus() -> list[tuple[str, str]]:
    calls = [r for game in open_run(REPLAY_RUN).finished() for r in game.trace() if isinstance(r, LLMCall)]
    prompts = ["\n\n".join(m.content for m in call.messages) for call in calls]
    replies = [call.reply or "" for call in calls]
    rng = random.Random(7)
    pairs = list(zip(replies, prompts))
    pairs += [(reply, prompts[(k * 7 + 3) % len(prompts)]) for k, reply in enumerate(replies)]
    for prompt in prompts * 2:  # a stretch of the prompt with a word of one's own inside: long matches, ties
        said = prompt.split()
        at, size = rng.randrange(max(1, len(said) - 40)), rng.randrange(5, 40)
        cut = said[at:at + size]
        cut.insert(rng.randrange(len(cut) + 1), "honestly")
        pairs.append((" ".join(cut), prompt))
    return pairs


def test_the_corpus_holds_copies_and_speeches_of_their_own(corpus):
    assert len(corpus) > 100
    copied = [speeches.own_words(a, p)[0] for a, p in corpus]
    assert sum(c >= speeches.WORDING_RUN for c in copied) > 20 and sum(c == 0 for c in copied) > 5
    assert sum(speeches.copied_run(a, p) >= speeches.ECHO_WORDS for a, p in corpus) > 10


def test_the_matcher_finds_what_sequence_matcher_found(corpus):
    for answer, prompt in corpus:
        said = speeches.words(answer)
        marked = speeches.instructions(prompt)
        assert speeches._longest(said, speeches._instructions(prompt)) == _reference_longest(said, marked)
        assert speeches.own_words(answer, prompt) == _reference_own_words(answer, prompt)
        for part in (said[: len(said) // 2], said[len(said) // 3:]):  # the parts own_words and trim_copies match
            assert speeches._longest(part, speeches._instructions(prompt)) == _reference_longest(part, marked)


def test_ties_go_to_the_earliest_in_the_prompt_then_in_the_speech():
    read = speeches._Read([("a", True), ("b", True), None, ("a", True), ("b", True), ("c", False)])
    assert read.longest(["x", "a", "b", "a", "b"]) == (0, 1, 2)  # as SequenceMatcher: a=0, b=1, size 2
    assert read.longest(["a", "b", "c"]) == (3, 0, 3)
    assert read.longest(["a", "b", "c"], least=4) == (0, 0, 0)  # nothing of 4 words: as no match at all

