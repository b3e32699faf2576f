"""The token counter keeps no whole prompt: only short texts (the lines prompts count again and again) are cached,
so a long run's prompts do not pile up as cache keys (benchmarks/memory.py measures the whole run)."""

from __future__ import annotations

from avalon_agents.llm import tokens


def test_long_texts_are_counted_right_and_never_kept():
    line = "Player 3 proposed a team of 2, 3 and 5."
    prompt = "\n".join(f"{line} (round {i})" for i in range(200))  # a prompt's size: thousands of characters
    assert len(prompt) > tokens.CACHED_CHARS
    before = tokens._cached_count.cache_info()
    assert tokens.count_tokens(prompt) == len(tokens._encoding().encode(prompt)) > 2000
    assert tokens.count_tokens(prompt) == tokens.count_tokens(prompt)
    after = tokens._cached_count.cache_info()
    assert (after.hits, after.misses) == (before.hits, before.misses)  # the cache was not asked
    tokens.count_tokens(line)
    tokens.count_tokens(line)
    assert tokens._cached_count.cache_info().hits > after.hits  # a short line is
