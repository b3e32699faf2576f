"""The cacheable share of a seat's input by OpenAI's rule (llm/prefix_cache.py), as `avalon bench cost` reports it
per agent kind beside calls and tokens, with the dollars at list prices with and without the cached-input price, and
as `avalon run --check` prices a plan with a prompt cache."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.llm.prefix_cache import PrefixCache, cached_part
from avalon_agents.llm.tokens import tokens_of


def test_a_prefix_is_cached_from_1024_tokens_in_steps_of_128():
    assert [cached_part(n) for n in (0, 1023, 1024, 1151, 1152, 1300)] == [0, 0, 1024, 1024, 1152, 1280]


def words(n: int, start: int = 0) -> str:
    """A text of exactly n tokens (" w<i>" words are one or two tokens: count and trim)."""
    text = " ".join(f"w{i}" for i in range(start, start + n))
    return text if len(tokens_of(text)) >= n else words(n, start)


def message(text: str) -> SimpleNamespace:
    return SimpleNamespace(content=text)


def test_each_prompt_is_matched_against_the_same_seats_earlier_prompts():
    cache = PrefixCache()
    shared = words(1400)
    first, _ = cache.add(1, [message(shared), message("first ask")])
    assert cache.add(1, [message(shared), message("first ask")]) == (first, first // 128 * 128)
    total, cached = cache.add(1, [message(shared), message("another ask, longer")])
    assert len(tokens_of(shared)) // 128 * 128 == cached < total
    assert cache.add(2, [message(shared), message("first ask")])[1] == 0  # another seat's prompts are not its own
    assert cache.add(1, [message(words(900, start=5000)), message("short")])[1] == 0  # under 1,024 tokens in common


def bench(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["bench", "cost", "--games", "1", *args])
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.slow  # three scripted games
def test_bench_cost_reports_the_cacheable_share_per_agent_kind_and_both_dollar_figures():
    shown = bench("--seats", "llm").output
    assert "per agent kind" in shown and "cacheable" in shown
    row = next(line for line in shown.splitlines() if line.strip().startswith("llm "))
    share = int(row.split("%")[0].split()[-1])
    assert 30 < share <= 100
    assert "dollars per game at gpt-4o-mini's list prices: $" in shown and "cached-input price: $" in shown
    figures = json.loads(bench("--seats", "llm", "--json").output)
    kind = figures["per_kind"]["llm"]
    assert 0 < kind["cacheable_tokens_per_game"] < kind["input_tokens_per_game"]
    assert kind["cacheable_share"] == figures["cacheable_share"]
    usd = figures["list_price"]
    assert 0 < usd["usd_per_game_cached"] < usd["usd_per_game"]
    paper = json.loads(bench("--seats", "llm", "--json", "--layout", "paper", "--price-model", "nobody").output)
    assert paper["options"] == {"prompt_layout": "paper"} and paper["list_price"]["usd_per_game"] is None


def test_the_plan_prices_a_run_with_and_without_a_prompt_cache(tmp_path):
    config = tmp_path / "x.yaml"
    config.write_text("name: x\nmodel: openai:gpt-4o-mini\nagents:\n  a: {kind: cognitive}\n  b: {kind: baseline}\n"
                      "sides: {good: a, evil: b}\nseries: 1\ngames_per_series: 2\n")
    result = CliRunner().invoke(cli, ["run", str(config), "--check", "--out", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    total = next(line for line in result.output.splitlines() if line.startswith("total"))
    cached = next(line for line in result.output.splitlines() if line.startswith("with a prompt cache: $"))
    assert float(cached.split("$")[1].split()[0]) < float(total.split("$")[-1])
