"""`avalon analyze` on a small scripted experiment (two variants, probes on: the session's `analysis_run`,
tests/conftest.py); the notebooks over the same run are in test_notebooks.py (slow)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from avalon_agents.analysis.judges.cache import CACHE_FILE
from avalon_agents.analysis.paper.report import FIGURES
from avalon_agents.cli import cli
from avalon_agents.records import analysis_dir as folder


@pytest.fixture(scope="module")
def judged(analysis_run, tmp_path_factory) -> tuple[Path, str]:
    """`avalon analyze` of the session's run with the scripted judge, once for the tests that read its first
    report: (the report's folder, what it printed). Treat it as read-only."""
    out = tmp_path_factory.mktemp("judged") / "report"
    result = CliRunner().invoke(cli, ["analyze", str(analysis_run), "--judge-model", "scripted", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, result.output


@pytest.mark.slow  # seconds; the slow suite (CI) runs it
def test_analyze_writes_every_file_it_promises(judged):
    out, output = judged
    assert "win_rate" in output and "wo_analysis" in output  # the headline table
    figures = {p.stem for p in (out / folder.FIGURES).glob("*.png")}
    assert figures == set(FIGURES)  # every figure, probes included
    metrics = folder.read_metrics(out)
    for name in ("headline", "win_rate", "quest_engagement", "failure_votes", "leader_approval",
                 "leader_self_inclusion", "self_recommendation", "valid_responses", "assassinations", "team_votes",
                 "cost", "camouflage_shares", "teamwork_matrix", "sharing_rates", "vacillation", "probe_scores"):
        assert metrics[name], name
        assert folder.metrics_file(out, name).is_file()
    report = folder.report_file(out).read_text()
    assert all(f"{folder.FIGURES}/{f}.png" in report for f in figures)
    assert "| variant | side |" in report
    # each variant against the first (Newcombe's interval, Fisher's p), in the report and the printed headline
    assert "| vs_variant | diff | diff_p_value |" in report  # the diff's cell holds its interval (formats.py)
    assert "diff_p_value" in output
    (other,) = [r for r in metrics["headline"] if r["variant"] == "wo_analysis" and r["side"] == "good"]
    assert other["vs_variant"] == "full" and 0 <= other["diff_p_value"] <= 1
    assert other["diff_ci_low"] <= other["diff"] <= other["diff_ci_high"]
    assert other["diff_ci_high"] > other["diff_ci_low"]
    # the paper's figures beside ours, in the sections of the matching figures
    assert metrics["paper_figures"] and report.count("**Paper**") == len({"qer_fvr", "leader_approval",
                                                                         "self_recommendation", "camouflage",
                                                                         "teamwork", "sharing", "vacillation"})
    fig2 = report.split("(paper Fig. 2)")[1].split("\n## ")[0]
    assert "| 2 | QER of Morgana and the Assassin | baseline | 33.1% | full |" in fig2 and "40.3%" in fig2
    assert "> 80.0%" in report.split("(paper Fig. 3a)")[1].split("\n## ")[0]
    assert "Rates remain consistent across roles" in report  # Fig. 5b: the text, no number
    calls = folder.judge_calls(out).read_text().splitlines()
    assert calls and all(json.loads(line)["stage"] == "judge" for line in calls)


@pytest.mark.slow
def test_a_second_analysis_reuses_every_judgment(analysis_run, judged, tmp_path):
    out = tmp_path / "report"
    shutil.copytree(judged[0], out)  # the first analysis's report, its judgments with it
    made = folder.judge_calls(out).read_text().splitlines()
    assert made
    result = CliRunner().invoke(cli, ["analyze", str(analysis_run), "--judge-model", "scripted", "--out", str(out)])
    assert result.exit_code == 0, result.output
    calls = folder.judge_calls(out).read_text().splitlines()
    assert calls == made
    judgments = sum(1 for _ in (folder.judgments_dir(out) / CACHE_FILE).open())
    assert len(calls) == judgments  # the second run made no call


@pytest.mark.slow  # seconds: the fast suite stays under its 2 minutes
def test_analyze_without_a_judge_skips_the_judged_metrics_and_says_so(analysis_run, tmp_path):
    result = CliRunner().invoke(cli, ["analyze", str(analysis_run), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert not folder.figure_file(tmp_path / "r", "teamwork").exists()
    assert "--judge-model" in folder.report_file(tmp_path / "r").read_text()


def test_analyze_a_folder_without_games_is_a_one_line_error(tmp_path):
    result = CliRunner().invoke(cli, ["analyze", str(tmp_path)])
    assert result.exit_code != 0 and "no finished game" in result.output


LIGHT_RUN = """\
name: light
model: scripted
agents:
  ours: {kind: llm}
  bots: {kind: rulebot}
sides: {good: ours, evil: bots}
series: 1
games_per_series: 1
variants:
  full: {}
  wo_analysis: {agents: {ours: {cards: improved}}}
"""


def test_health_is_beside_the_results(tmp_path):
    """On a light run (vanilla LLM seats against rule bots, two variants): the fast suite's `avalon analyze`."""
    (tmp_path / "light.yaml").write_text(LIGHT_RUN)
    run = tmp_path / "run"
    made = CliRunner().invoke(cli, ["run", str(tmp_path / "light.yaml"), "--out", str(run)])
    assert made.exit_code == 0, made.output
    result = CliRunner().invoke(cli, ["analyze", str(run), "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if ": health: " in line]
    assert {line.split(":")[0] for line in lines} == {"full", "wo_analysis"}
    assert all("calls failed (0%)" in line for line in lines)
    report = folder.report_file(tmp_path / "a").read_text()
    assert "## Health" in report and folder.metrics_file(tmp_path / "a", "health").is_file()
    import pandas as pd

    health = pd.read_csv(folder.metrics_file(tmp_path / "a", "health"))  # every LLM seat's speeches read: echo rate
    assert (health["speeches"] > 0).all() and health["echo_rate"].between(0, 1).all()
    assert all("copy their instructions" in line and "placeholders or empty" in line for line in lines)
    assert "Produced by: models scripted; judge none" in report and "fingerprint" in report
    assert result.output.startswith("Produced by: models scripted")
