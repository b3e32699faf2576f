"""Memory's stable rendering (the cache layout's game so far): within its budget, and each rendering extends the
one before except where a block of old lines is dropped."""

from __future__ import annotations

from avalon_agents.llm.tokens import count_tokens
from avalon_agents.modules.memory import Entry, Memory


def entries(n: int) -> list[Entry]:
    return [Entry("Host", f"Line {i}: Player {i % 6 + 1} said something about the team of quest {i // 8 + 1}.",
                  i // 8 + 1, 1, True) for i in range(n)]


def test_the_stable_rendering_drops_old_lines_in_blocks_and_otherwise_only_grows():
    budget = 200
    shown = [Memory.render_stable(entries(n), budget) for n in range(1, 80)]
    assert all(count_tokens(text) <= budget + 1 for text in shown)  # lines joined by newlines
    extended = sum(b.startswith(a) for a, b in zip(shown, shown[1:]))
    drops = len(shown) - 1 - extended
    assert 3 <= drops <= 12 and extended > 60  # about every half budget of new lines, not at each line
    assert shown[-1].endswith(entries(79)[-1].text)
    assert Memory.render_stable(entries(5), 10_000) == Memory.render(entries(5))
