"""The token counter keeps no whole prompt: short texts (the lines prompts count again and again) are cached by
their text, long ones (a system prompt counted on every call) by a digest, at most LONG_KEPT of them, so a long run's
prompts do not pile up as cache keys (benchmarks/memory.py measures the whole run)."""

from __future__ import annotations

from avalon_agents.llm import tokens


def test_long_texts_are_counted_right_and_kept_only_as_a_digest(monkeypatch):
    line = "Player 3 proposed a team of 2, 3 and 5."
    prompt = "\n".join(f"{line} (round {i})" for i in range(200))  # a prompt's size: thousands of characters
    assert len(prompt) > tokens.CACHED_CHARS
    before = tokens._cached_count.cache_info()
    assert tokens.count_tokens(prompt) == len(tokens._encoding().encode(prompt)) > 2000
    after = tokens._cached_count.cache_info()
    assert (after.hits, after.misses) == (before.hits, before.misses)  # the text's own cache was not asked
    assert all(isinstance(k, bytes) and len(k) == 16 for k in tokens._long)  # no prompt kept, a digest
    counted = []
    monkeypatch.setattr(tokens, "_count", lambda text: counted.append(text) or 7)
    assert tokens.count_tokens(prompt) == len(tokens._encoding().encode(prompt))  # counted again: not at all
    assert counted == []
    assert tokens.count_tokens(prompt + " ") == 7 and len(counted) == 1  # another text is counted
    tokens.count_tokens(line)
    tokens.count_tokens(line)
    assert tokens._cached_count.cache_info().hits > after.hits  # a short line is cached by its text


def test_the_long_texts_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(tokens, "LONG_KEPT", 3)
    monkeypatch.setattr(tokens, "_long", type(tokens._long)())
    texts = [f"{i} " + "word " * 300 for i in range(5)]
    counts = [tokens.count_tokens(t) for t in texts]
    assert len(tokens._long) == 3
    assert counts == [len(tokens._encoding().encode(t)) for t in texts]
    counted = []
    monkeypatch.setattr(tokens, "_count", lambda text: counted.append(text) or 0)
    tokens.count_tokens(texts[4])
    tokens.count_tokens(texts[0])  # the least recently counted was dropped: counted afresh
    assert counted == [texts[0]]
