"""--check and --budget-usd beyond `avalon run`: `--check --json` prints the plan as one JSON object; `avalon analyze
--judge-model`, `avalon calibrate`, `avalon probe-humans` and a paid `avalon play` print their plan (calls, tokens,
dollars, time) without calling a model, and stop before the call or game that would take them over the budget
(exit 4), what was done kept. The model is the loopback server priced with --prices, so the dollars are real
arithmetic and the server counts every request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from avalon_agents.llm.loopback import openai_server
from avalon_agents.records import analysis_dir as folder
from avalon_agents.records.run_dir import RESULT, TRACE
from avalon_agents.records.trace import LLMCall, read_lines
from tests.helpers import avalon

NLU = Path(__file__).parents[1] / "importers" / "avalon_nlu"
PRICE, OUT_PRICE = 100.0, 400.0  # dollars per 1M tokens: a few judge calls make cents


@pytest.fixture
def priced(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text(f"m: {{input: {PRICE}, output: {OUT_PRICE}, date: '2026-11-27', source: a test}}\n")
    return path


@pytest.fixture(scope="module")
def bots_run(tmp_path_factory):
    """Two rule-bot games: their speeches are what the judges are asked about."""
    out = tmp_path_factory.mktemp("bots") / "run"
    assert avalon("play", "--games", "2", "--out", str(out)).returncode == 0
    return out


@pytest.fixture(scope="module")
def nlu_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("nlu") / "run"
    assert avalon("import", "avalon-nlu", str(NLU), "--out", str(out)).returncode == 0
    return out


def _dollars(calls: list[LLMCall]) -> float:
    return sum(c.input_tokens * PRICE + c.output_tokens * OUT_PRICE for c in calls) / 1e6


def test_run_check_json_prints_the_plan_as_one_object():
    done = avalon("run", "--check", "--json", "experiments/quickstart.yaml")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)  # the whole of stdout: one object
    assert plan["experiment"] == "quickstart" and plan["games"] == 1 and plan["calls"] > 100
    assert plan["input_tokens"] > plan["output_tokens"] > 0 and plan["usd"] == 0.0  # the embedded model is free
    [model] = plan["models"]
    assert model["model"] == "local:smollm2" and model["least_seconds"] > 60 and "min" in model["time"]
    assert [v["variant"] for v in plan["variants"]] == ["main"] and plan["variants"][0]["calls"] == plan["calls"]
    assert "experiment quickstart" in done.stderr  # the plan in words goes to stderr


@pytest.mark.parametrize("command, config, key", [("redteam", "experiments/redteam.yaml", "attacks"),
                                                  ("bias", "experiments/bias.yaml", "lists")])
def test_paired_studies_check_json_print_their_plan(command, config, key, tmp_path):
    done = avalon(command, config, "--check", "--json", "--model", "scripted", "--out", str(tmp_path / "o"))
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["games"] == plan["pairs"] * (1 + len(plan[key])) and plan[key]
    assert not (tmp_path / "o").exists()  # nothing played, nothing made


def test_analyze_check_plans_the_judges_calls_and_calls_nothing(bots_run, priced, tmp_path):
    with openai_server() as server:
        spec = f"openai-compatible:m@{server.base_url}"
        done = avalon("analyze", str(bots_run), "--judge-model", spec, "--check", "--json", "--prices", str(priced),
                      "--out", str(tmp_path / "a"))
        assert done.returncode == 0, done.stderr
        assert server.state.requests == [] and not (tmp_path / "a").exists()  # no call, nothing written
    plan = json.loads(done.stdout)
    assert plan["what"] == "judge calls" and plan["calls"] > 10 and plan["cached"] == 0
    expected = (plan["input_tokens"] * PRICE + plan["output_tokens"] * OUT_PRICE) / 1e6
    assert plan["usd"] == pytest.approx(expected, rel=1e-5)
    assert plan["models"][0]["price"]["source"] == "a test"
    no_model = avalon("analyze", str(bots_run), "--check")
    assert no_model.returncode == 2 and "check: " in no_model.stderr and "--judge-model" in no_model.stderr


@pytest.mark.slow  # judge calls over the loopback server (a few seconds)
def test_analyze_stops_before_the_call_that_would_go_over_and_a_larger_budget_goes_on(bots_run, priced, tmp_path):
    out = tmp_path / "a"
    with openai_server() as server:
        spec = f"openai-compatible:m@{server.base_url}"
        plan = json.loads(avalon("analyze", str(bots_run), "--judge-model", spec, "--check", "--json",
                                 "--prices", str(priced), "--out", str(out)).stdout)
        budget = plan["usd"] / 3
        stopped = avalon("analyze", str(bots_run), "--judge-model", spec, "--budget-usd", f"{budget}",
                         "--prices", str(priced), "--out", str(out))
        assert stopped.returncode == 4, stopped.stderr
        assert f"budget: ${budget:,.2f} reached" in stopped.stderr
        calls = [r for r in read_lines(folder.judge_calls(out)) if isinstance(r, LLMCall)]
        assert 0 < len(calls) < plan["calls"] and _dollars(calls) <= budget
        again = json.loads(avalon("analyze", str(bots_run), "--judge-model", spec, "--check", "--json",
                                  "--prices", str(priced), "--out", str(out)).stdout)
        assert again["cached"] > 0 and again["calls"] == plan["calls"] - again["cached"]  # the answers were kept
        finished = avalon("analyze", str(bots_run), "--judge-model", spec, "--budget-usd", f"{plan['usd'] * 3}",
                          "--prices", str(priced), "--out", str(out))
    assert finished.returncode == 0, finished.stderr
    assert folder.report_file(out).is_file()


def test_calibrate_and_probe_humans_check_plan_without_a_call(nlu_run, priced):
    with openai_server() as server:
        spec = f"openai-compatible:m@{server.base_url}"
        judged = avalon("calibrate", str(nlu_run), "--judge-model", spec, "--check", "--json", "--prices", str(priced))
        probed = avalon("probe-humans", str(nlu_run), "--model", spec, "--check", "--json", "--prices", str(priced))
        assert server.state.requests == []
    assert judged.returncode == 0 and probed.returncode == 0, judged.stderr + probed.stderr
    judges, probes = json.loads(judged.stdout), json.loads(probed.stdout)
    assert judges["what"] == "judge calls" and judges["calls"] > 0 and judges["usd"] > 0
    assert probes["what"] == "belief probes" and probes["calls"] > 0 and probes["usd"] > 0
    assert not (nlu_run / "calibration").exists() and not (nlu_run / "probes-humans").exists()


@pytest.mark.slow  # probes and judge calls over the loopback server
def test_calibrate_and_probe_humans_stop_at_their_budget(nlu_run, priced, tmp_path):
    with openai_server() as server:
        spec = f"openai-compatible:m@{server.base_url}"
        cal = tmp_path / "cal"
        plan = json.loads(avalon("calibrate", str(nlu_run), "--judge-model", spec, "--check", "--json",
                                 "--prices", str(priced), "--out", str(cal)).stdout)
        stopped = avalon("calibrate", str(nlu_run), "--judge-model", spec, "--budget-usd", f"{plan['usd'] / 3}",
                         "--prices", str(priced), "--out", str(cal))
        assert stopped.returncode == 4 and "reached" in stopped.stderr, stopped.stderr
        calls = [r for r in read_lines(cal / "judgments" / "calls.jsonl") if isinstance(r, LLMCall)]
        assert _dollars(calls) <= plan["usd"] / 3
        probes = json.loads(avalon("probe-humans", str(nlu_run), "--model", spec, "--check", "--json",
                                   "--prices", str(priced)).stdout)
        budget = probes["usd"] / probes["calls"] * 1.5  # the first probe fits, not many more
        probed = avalon("probe-humans", str(nlu_run), "--model", spec, "--budget-usd", f"{budget}",
                        "--prices", str(priced), "--concurrency", "1")
    assert probed.returncode == 4 and "the next model call is expected" in probed.stderr, probed.stderr
    made = [r for f in (nlu_run / "probes-humans" / "calls").glob("*.jsonl") for r in read_lines(f)
            if isinstance(r, LLMCall)]
    assert 0 < len(made) < probes["calls"] and _dollars(made) <= budget


def test_play_check_plans_the_llm_seats_calls(priced):
    with openai_server() as server:
        spec = f"openai-compatible:m@{server.base_url}"
        one = avalon("play", "--seats", "llm,rulebot,rulebot,rulebot,rulebot,rulebot", "--model", spec, "--check",
                     "--json", "--prices", str(priced))
        ten = avalon("play", "--seats", "llm,rulebot,rulebot,rulebot,rulebot,rulebot", "--model", spec, "--check",
                     "--json", "--prices", str(priced), "--games", "10")
        assert server.state.requests == []
    assert one.returncode == 0, one.stderr
    first, tenth = json.loads(one.stdout), json.loads(ten.stdout)
    assert first["calls"] > 0 and first["usd"] > 0 and first["games"] == 1
    assert tenth["usd"] == pytest.approx(10 * first["usd"], rel=1e-3)
    bots = json.loads(avalon("play", "--check", "--json").stdout)
    assert bots["calls"] == 0 and bots["usd"] == 0.0


@pytest.mark.slow  # LLM games over the loopback server
def test_a_paid_play_stops_before_the_game_that_would_go_over(priced, tmp_path):
    out = tmp_path / "play"
    with openai_server() as server:
        spec = f"openai-compatible:m@{server.base_url}"
        seats = "llm,rulebot,rulebot,rulebot,rulebot,rulebot"
        plan = json.loads(avalon("play", "--seats", seats, "--model", spec, "--check", "--json",
                                 "--prices", str(priced)).stdout)
        budget = plan["usd"] * 2.5
        stopped = avalon("play", "--seats", seats, "--model", spec, "--games", "6", "--out", str(out),
                         "--budget-usd", f"{budget}", "--prices", str(priced))
    assert stopped.returncode == 4, stopped.stderr
    assert "the next game is expected to cost" in stopped.stderr and "finished games are kept" in stopped.stderr
    games = sorted(out.glob("game-*"))
    finished = [game for game in games if (game / RESULT).is_file()]
    assert finished == games  # none started and left unfinished
    assert 1 <= len(games) < 6  # stopped before the sixth
    spent = [_dollars([r for r in read_lines(game / TRACE) if isinstance(r, LLMCall)]) for game in games]
    # each game was started only while the games before it plus its expected cost (their mean) fitted; a game
    # costs what its length makes it, so the last may take the total a little past the budget, as in avalon run
    assert sum(spent[:-1]) + sum(spent[:-1]) / max(1, len(spent) - 1) <= budget or len(spent) == 1


def test_a_budget_needs_a_price_and_a_limit_above_zero(bots_run):
    with openai_server() as server:
        spec = f"openai-compatible:m@{server.base_url}"
        unpriced = avalon("analyze", str(bots_run), "--judge-model", spec, "--budget-usd", "1")
        zero = avalon("play", "--seats", "llm", "--model", spec, "--budget-usd", "0")
        assert server.state.requests == []
    assert unpriced.returncode == 2 and "budget-usd: no price for m" in unpriced.stderr
    assert zero.returncode == 2 and "budget-usd: must be more than 0, got 0" in zero.stderr
