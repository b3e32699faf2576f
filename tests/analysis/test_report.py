"""`avalon analyze` and the notebooks, on a small scripted experiment (two variants, probes on)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from nbclient import NotebookClient

from avalon_agents.analysis.report import FIGURES
from avalon_agents.cli import cli

ROOT = Path(__file__).parent.parent.parent
CONFIG = """\
name: tiny
model: scripted
probes: true
agents:
  ours: {kind: cognitive}
  baseline: {kind: baseline}
sides: {good: ours, evil: baseline}
series: 1
games_per_series: 2
variants:
  full: {}
  wo_analysis: {agents: {ours: {modules: {analysis: {enabled: false}}}}}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("analyze")
    (folder / "tiny.yaml").write_text(CONFIG)
    result = CliRunner().invoke(cli, ["run", str(folder / "tiny.yaml"), "--out", str(folder / "run")])
    assert result.exit_code == 0, result.output
    return folder / "run"


def test_analyze_writes_every_file_it_promises(run, tmp_path):
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["analyze", str(run), "--judge-model", "scripted", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "win_rate" in result.output and "wo_analysis" in result.output  # the headline table
    figures = {p.stem for p in (out / "figures").glob("*.png")}
    assert figures == set(FIGURES)  # every figure, probes included
    metrics = json.loads((out / "metrics.json").read_text())
    for name in ("headline", "win_rate", "quest_engagement", "failure_votes", "leader_approval",
                 "self_recommendation", "valid_responses", "assassinations", "team_votes", "cost",
                 "camouflage_shares", "teamwork_matrix", "sharing_rates", "vacillation", "probe_scores"):
        assert metrics[name], name
        assert (out / "metrics" / f"{name}.csv").is_file()
    report = (out / "report.md").read_text()
    assert all(f"figures/{f}.png" in report for f in figures)
    assert "| variant | side |" in report
    calls = (out / "judgments" / "calls.jsonl").read_text().splitlines()
    assert calls and all(json.loads(line)["stage"] == "judge" for line in calls)


def test_a_second_analysis_reuses_every_judgment(run, tmp_path):
    out = tmp_path / "report"
    for _ in range(2):
        assert CliRunner().invoke(cli, ["analyze", str(run), "--judge-model", "scripted", "--out", str(out)]
                                  ).exit_code == 0
    calls = (out / "judgments" / "calls.jsonl").read_text().splitlines()
    judged = sum(1 for _ in (out / "judgments" / "judgments.jsonl").open())
    assert len(calls) == judged  # the second run made no call


def test_analyze_without_a_judge_skips_the_judged_metrics_and_says_so(run, tmp_path):
    result = CliRunner().invoke(cli, ["analyze", str(run), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "r" / "figures" / "teamwork.png").exists()
    assert "--judge-model" in (tmp_path / "r" / "report.md").read_text()


def test_analyze_a_folder_without_games_is_a_one_line_error(tmp_path):
    result = CliRunner().invoke(cli, ["analyze", str(tmp_path)])
    assert result.exit_code != 0 and "no finished game" in result.output


@pytest.mark.parametrize("name", ["social_behavior", "ablation_results"])
def test_notebooks_execute(name, run, tmp_path, monkeypatch):
    monkeypatch.setenv("AVALON_RUN", str(run))
    monkeypatch.setenv("AVALON_JUDGE_MODEL", "scripted")
    book = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    NotebookClient(book, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    outputs = [o for cell in book.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= (9 if name == "social_behavior" else 3)
    assert os.environ["AVALON_RUN"] == str(run)
