"""A long `avalon play` batch keeps no trace records in memory: with a directory, a lean batch reads each game's
records back for its usage figures (before, each game's lean records stayed: about 0.9 MB a game of a cognitive
table; benchmarks/memory.py --command play measures the whole batch)."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.core import make_rules
from avalon_agents.host.batch import batch, batch_summary, play_batch
from tests.helpers import scripted_setup

COUNTED = ("llm_calls", "input_tokens", "output_tokens", "decisions", "valid_response_rate", "methods", "reasks")


@pytest.mark.slow  # seconds of end-to-end play
def test_a_lean_batch_with_a_directory_keeps_no_records_and_counts_the_same(tmp_path):
    jobs = batch(make_rules("official", 5), ["llm"] * 5, seed=3, games=2, setup=scripted_setup())
    in_memory = asyncio.run(play_batch(jobs, None, lean=True))
    on_disk = asyncio.run(play_batch(jobs, tmp_path, lean=True))
    assert all(p.records for p in in_memory)  # no directory: the lean records are all there is
    assert [p.records for p in on_disk] == [[], []] and all(p.trace for p in on_disk)
    kept = asyncio.run(play_batch(jobs, tmp_path, lean=True))  # finished games read back: no records either
    assert [(p.kept, p.records) for p in kept] == [(True, []), (True, [])]
    expected = batch_summary(jobs, in_memory)["usage"]
    for played in (on_disk, kept):
        got = batch_summary(jobs, played)["usage"]
        assert got["llm_calls"] > 0 and {k: got[k] for k in COUNTED} == {k: expected[k] for k in COUNTED}
