"""Dollars before and after a run: the price table, `--check`'s estimate, the cost table, and the budget."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.experiments.spend import game_dollars
from avalon_agents.llm.loopback import openai_server
from avalon_agents.prices import NoPrice, Prices, load_prices
from avalon_agents.records.run_dir import COST, RESULT, series_dir

CONFIG = """\
name: spend
model: {{spec: "openai-compatible:m@{url}"}}
agents:
  ours: {{kind: llm}}
  bots: {{kind: rulebot}}
sides: {{good: ours, evil: bots}}
series: {series}
games_per_series: 1
concurrency: {{games: 1}}
{extra}"""

PRICE = "prices: {m: {input: 100.0, output: 400.0, date: '2026-11-26', source: a test}}\n"


def write(tmp_path, server, series: int = 1, extra: str = PRICE):
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG.format(url=server.base_url, series=series, extra=extra))
    return path


def test_the_shipped_prices_have_a_date_and_a_source_and_unknown_models_none():
    prices = Prices.shipped()
    mini = prices.price("openai:gpt-4o-mini")
    assert mini.input == 0.15 and mini.output == 0.60 and mini.date and mini.source.startswith("https://")
    assert prices.price("openai-compatible:gpt-4o-mini@http://h/v1") == mini  # the model part is the key
    assert prices.dollars("openai:gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert prices.dollars("openai:gpt-4o-mini", 1_000_000, 0, cached_tokens=1_000_000) == pytest.approx(0.075)
    assert prices.dollars("local:smollm2", 10**9, 10**9) == 0.0
    with pytest.raises(NoPrice, match="no price for mystery-7b"):
        prices.dollars("openai-compatible:mystery-7b@http://h/v1", 1, 1)


def test_prices_are_overridden_by_a_file_and_a_bad_field_is_named(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("gpt-4o-mini: {input: 1.0, output: 2.0}\n")
    assert load_prices(path).price("openai:gpt-4o-mini").input == 1.0
    assert load_prices(path, {"gpt-4o-mini": {"input": 3.0, "output": 4.0}}).price("openai:gpt-4o-mini").input == 3.0
    path.write_text("gpt-4o-mini: {input: -1, output: 2.0}\n")
    with pytest.raises(ValueError, match=r"prices.gpt-4o-mini.input"):
        load_prices(path)


def test_check_prints_tokens_dollars_and_the_least_time_the_limits_allow(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    result = CliRunner().invoke(cli, ["run", "--check", "experiments/paper/table2.yaml", "--model",
                                      "openai:gpt-4o-mini", "--tpm", "200000"])
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if line.startswith("variant"))
    assert "input tokens" in header and "output tokens" in header and "est. USD" in header
    total = next(line for line in result.output.splitlines() if line.startswith("total"))
    assert "$" in total
    assert "gpt-4o-mini: $0.15 input, $0.6 output per 1M tokens" in result.output
    assert "time: openai:gpt-4o-mini: at 200k TPM: at least " in result.output
    with openai_server() as server:
        unknown = CliRunner().invoke(cli, ["run", "--check", "experiments/quickstart.yaml", "--model",
                                           f"openai-compatible:mystery@{server.base_url}"])
    lines = unknown.output.splitlines()
    assert "  no price for mystery: give one with prices: in the config or --prices FILE" in lines
    assert next(line for line in lines if line.startswith("total")).split()[-1] == "price"  # "no price", no guess


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_run_reports_its_dollars_per_variant_in_the_table_json_and_cost_csv(tmp_path):
    with openai_server() as server:
        out = tmp_path / "out"
        result = CliRunner().invoke(cli, ["run", str(write(tmp_path, server)), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.splitlines()[-1])
    [cost] = report["cost"]
    assert cost["model"].startswith("openai-compatible:m@") and cost["price_source"] == "a test"
    assert cost["usd"] == pytest.approx((cost["input_tokens"] * 100 + cost["output_tokens"] * 400) / 1e6)
    assert report["results"][0]["usd"] == pytest.approx(cost["usd"])
    rows = list(csv.DictReader(open(out / COST)))
    assert float(rows[0]["usd"]) == pytest.approx(cost["usd"]) and rows[0]["variant"] == "main"


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_budget_stops_before_the_game_that_would_go_over_and_a_larger_one_resumes(tmp_path):
    with openai_server() as server:
        path, out = write(tmp_path, server, series=4), tmp_path / "out"
        first = CliRunner().invoke(cli, ["run", str(path), "--out", str(out), "--max-games", "1"])
        per_game = float(next(line for line in first.output.splitlines() if "per game)" in line)
                         .split("(")[1].split(" per game")[0].lstrip("$").replace(",", ""))
        budget = 2.5 * per_game  # the finished game and one more fit; a third would go over
        stopped = CliRunner().invoke(cli, ["run", str(path), "--out", str(out), "--budget-usd", f"{budget}"])
        assert stopped.exit_code == 4, stopped.output
        assert stopped.output.strip().splitlines()[-1].startswith(f"Error: budget: ${budget:,.2f} reached")
        finished = len(list(out.glob(f"main/series-*/game-*/{RESULT}")))
        assert 2 <= finished < 4 and len(list(out.glob("main/series-*/game-*"))) == finished  # none started over
        spent = sum(float(r["usd"]) for r in csv.DictReader(open(out / COST)))
        # The contract (docs/providers.md#budgets): one game at a time, each started only while the dollars spent
        # and its expected cost (the mean of the games before it) fit; the next one would not have.
        prices = load_prices(None, {"m": {"input": 100.0, "output": 400.0}})
        costs = [game_dollars(series_dir(out, "main", k) / "game-00001", prices) for k in range(1, finished + 1)]
        assert sum(costs) == pytest.approx(spent)
        for k in range(1, finished):
            assert sum(costs[:k]) + sum(costs[:k]) / k <= budget
        assert spent + spent / finished > budget
        resumed = CliRunner().invoke(cli, ["run", str(path), "--out", str(out), "--budget-usd", f"{10 * per_game}"])
    assert resumed.exit_code == 0, resumed.output
    assert len(list(out.glob("main/series-*/game-*/result.json"))) == 4


def test_games_in_flight_count_against_the_budget(tmp_path):
    from avalon_agents.experiments.spend import Budget

    budget = Budget(10.0, Prices.shipped(), {"v": 3.0})
    tickets = [budget.admit("v") for _ in range(4)]
    assert tickets[:3] == [1, 2, 3] and tickets[3] is None  # three in flight at $3 each; a fourth would make $12
    assert "next v game is expected to cost $3.00" in budget.stopped


def test_a_budget_needs_a_price(tmp_path):
    with openai_server() as server:
        result = CliRunner().invoke(cli, ["run", str(write(tmp_path, server, extra="")), "--out",
                                          str(tmp_path / "o"), "--budget-usd", "1"])
    assert result.exit_code == 2 and "budget-usd: no price for m" in result.output
