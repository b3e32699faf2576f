"""`avalon bench cost`: calls and tokens per game with the scripted model, split per module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.llm.tokens import count_tokens, newest_that_fit
from avalon_agents.records import Extraction, LLMCall, Purpose
from avalon_agents.records.run_dir import HEALTH

ROOT = Path(__file__).parents[2]


def cost(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["bench", "cost", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_tokens_are_cl100k_base():
    assert count_tokens("tiktoken is great!") == 6  # OpenAI's cookbook example for cl100k_base
    assert count_tokens("") == 0


def test_newest_lines_that_fit():
    lines = ["one two three", "four", "five six"]  # 3, 1 and 2 tokens
    assert newest_that_fit(lines, 3) == 1 and newest_that_fit(lines, 6) == 0
    assert newest_that_fit(lines, 1) == 3 and newest_that_fit([], 5) == 0


def test_labels_come_from_structured_fields():
    assert Purpose(stage="module", name="summary").label == "summary"
    assert Purpose(stage="module", name="action+response", request="propose").label == "action+response"
    assert Purpose(stage="agent", name="baseline", part="reflect").label == "baseline reflect"
    assert Purpose(stage="extract", name="extractor", request="vote").label == "extractor"


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_cognitive_cost_split_per_module_adds_up():
    figures = cost("--seats", "cognitive", "--games", "2")
    split = figures["per_module"]
    assert {"summary", "analysis", "plan", "action+response", "experience"} <= set(split)
    assert abs(sum(r["calls_per_game"] for r in split.values()) - figures["calls_per_game"]) < 0.2
    assert abs(sum(r["input_tokens_per_game"] for r in split.values()) - figures["input_tokens_per_game"]) < 10
    assert figures["input_tokens_per_game"] > 10 * figures["calls_per_game"]  # prompts are not empty
    assert figures["output_tokens_per_game"] > 0 and "cl100k_base" in figures["tokenizer"]


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_per_turn_pipeline_costs_more_than_per_round():
    per_round = cost("--seats", "cognitive", "--games", "1",
                     "--agent-config", str(ROOT / "experiments/agents/per_round.yaml"))
    per_turn = cost("--seats", "cognitive", "--games", "1",
                    "--agent-config", str(ROOT / "experiments/agents/per_turn.yaml"))
    analysis = [figures["per_module"]["analysis"]["calls_per_game"] for figures in (per_round, per_turn)]
    assert analysis[1] > 2 * analysis[0]
    assert "action+response" not in per_turn["per_module"] and "action" in per_turn["per_module"]
    assert per_turn["calls_per_game"] > per_round["calls_per_game"]


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_baseline_cost_names_its_steps():
    figures = cost("--seats", "baseline,rulebot,rulebot,rulebot,rulebot", "--games", "1", "--players", "5")
    assert {"baseline questions", "baseline reflect", "baseline respond"} <= set(figures["per_module"])


def test_bad_agent_config_is_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("analysis: {options: {cadence: sometimes}}\n")
    result = CliRunner().invoke(cli, ["bench", "cost", "--agent-config", str(bad)])
    assert result.exit_code != 0
    assert "analysis.options.cadence" in result.output and "Traceback" not in result.output


def test_critical_path_counts_the_busiest_seat_of_each_step():
    from avalon_agents.records import critical_path

    calls = [(1, 0), (1, 0), (1, 1), (2, 3), (2, 4), (3, 2), (3, 2), (3, 2)]
    def call(step, seat):
        return LLMCall(step=step, seat=seat, stage="agent", name="vanilla", prompt_id="p", prompt_hash="0")

    records = [call(s, seat) for s, seat in calls]
    records.append(Extraction(seat=1, kind="vote", quest=1, attempt=1, method="rule", valid=True))  # not a call
    records.append(call(None, 0))  # made outside a host step
    assert critical_path(records) == 2 + 1 + 3


def test_every_call_of_a_game_is_tagged_with_its_host_step(tmp_path):
    from avalon_agents.records import critical_path, read_trace

    result = CliRunner().invoke(
        cli, ["play", "--seats", "cognitive", "--model", "scripted", "--out", str(tmp_path), "--json"]
    )
    assert result.exit_code == 0, result.output
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert (tmp_path / "run.log").is_file()  # the diagnostic log beside the games
    health = json.loads((run / HEALTH).read_text())  # every game records its health
    assert health["failed_calls"] == 0 and health["llm_calls"] > 0 and health["fallbacks"] == 0
    records = list(read_trace(run))
    calls = [r for r in records if r.type == "llm_call"]
    assert calls and all(isinstance(r.step, int) for r in calls)
    steps = {r.step for r in calls}
    # six seats think side by side, so the chain is far shorter than the calls, and at least a call per step
    assert len(steps) <= critical_path(records) < len(calls) / 2


@pytest.mark.slow  # 20 scripted games
@pytest.mark.parametrize("seats,config,table", [
    ("cognitive", None, "per_round"),
    ("cognitive", "experiments/agents/per_turn.yaml", "per_turn"),
    ("baseline", None, "baseline"),
    ("llm", None, "llm"),
])
def test_the_plans_estimates_are_what_bench_cost_measures(seats, config, table):
    """`avalon run --check` prices runs from the calls and tokens per game each module and agent kind declares
    (`expected`): they must be what `avalon bench cost --games 5` measures today (re-measure them after changing
    an agent)."""
    from avalon_agents.agents.registry import expected_cost
    from avalon_agents.modules import MODULES, SLOT_ORDER
    from avalon_agents.prices import Cost

    measured = cost("--seats", seats, "--games", "5", *(("--agent-config", config) if config else ()))
    expected = expected_cost(table) if table in ("baseline", "llm") else sum(
        (getattr(MODULES[slot].expected, table) for slot in SLOT_ORDER), Cost())
    assert measured["calls_per_game"] == pytest.approx(expected.calls, rel=0.02)
    assert measured["input_tokens_per_game"] == pytest.approx(expected.input_tokens, rel=0.02)
    assert measured["output_tokens_per_game"] == pytest.approx(expected.output_tokens, rel=0.02)
    assert measured["cacheable_tokens_per_game"] == pytest.approx(expected.cached_tokens, rel=0.02, abs=50)
    assert measured["cacheable_share"] >= 0.75  # issue 40's target, met by each kind's cache layout
    if table == "baseline":  # the part a series' last game does not spend
        from avalon_agents.agents.baseline import BaselineAgent

        end = [measured["per_module"][f"baseline {part}"] for part in ("suggestions", "strategy")]
        assert sum(m["calls_per_game"] for m in end) == pytest.approx(BaselineAgent.learning.calls, rel=0.02)
        assert sum(m["input_tokens_per_game"] for m in end) == pytest.approx(BaselineAgent.learning.input_tokens,
                                                                             rel=0.02)
