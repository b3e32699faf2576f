"""The paper's Figures 2-6 as its text states them (avalon_agents/data/paper_figures.yaml), and ours beside
them, computed from the hand-counted records of tests/analysis/records.py."""

from __future__ import annotations

import pytest

from avalon_agents.analysis.load import load_run
from avalon_agents.analysis.paper import metrics
from avalon_agents.analysis.paper.reference import figure_table, paper_figures, statements
from avalon_agents.analysis.paper.report import FIGURES
from tests.analysis.records import write_run


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return load_run(write_run(tmp_path_factory.mktemp("run")))


def test_the_file_holds_the_numbers_of_the_papers_text():
    numbers = {(f.figure, f.label, f.kind): f.value for f in paper_figures() if f.value is not None}
    assert numbers == {
        ("2", "QER of Morgana and the Assassin", "cognitive"): 0.403,  # 5.3: "40.3% ... and 84.0%"
        ("2", "FVR of Morgana and the Assassin", "cognitive"): 0.840,
        ("2", "QER of Morgana and the Assassin", "baseline"): 0.331,  # "33.1% and 36.5% respectively"
        ("2", "FVR of Morgana and the Assassin", "baseline"): 0.365,
        ("3a", "Leader Approval Rate of good leaders", "cognitive"): 0.80,  # 6.1: "exceeding 80%"
        ("4", "camouflage share of Morgana's first-round speeches", "cognitive"): 0.10,  # 6.3: "10% and 15%"
        ("4", "camouflage share of the Assassin's first-round speeches", "cognitive"): 0.15,
    }
    assert [f.shown for f in paper_figures() if f.figure == "3a" and f.value] == ["> 80.0%"]
    assert {f.figure for f in paper_figures()} >= {"2", "3a", "3b", "3c", "4", "5a", "5b", "6a", "6b", "6c"}
    assert all(f.text for f in paper_figures())  # a figure without a number still says what the text states
    assert all(statements(f.report) and f.report in FIGURES for f in paper_figures())


def test_ours_is_the_same_measure_pooled_over_the_figures_roles(data):
    table = figure_table(data)
    ours = table[table["kind"] == "cognitive"].set_index("label")
    assert ours.loc["FVR of Morgana and the Assassin", "value"] == 1.0  # both fail every card they play
    qer = metrics.quest_engagement(data, ("role",)).set_index("role")
    pooled = (qer.loc[["Morgana", "Assassin"], "value"] * qer.loc[["Morgana", "Assassin"], "n"]).sum() / \
        qer.loc[["Morgana", "Assassin"], "n"].sum()
    assert ours.loc["QER of Morgana and the Assassin", "value"] == pytest.approx(pooled)
    lar = ours.loc["Leader Approval Rate of good leaders"]
    assert lar["value"] == pytest.approx((6 + 5 + 14) / (12 + 12 + 24))  # Merlin, Percival, Servants (test_metrics)
    assert lar["paper"] == 0.80 and lar["paper_shown"] == "> 80.0%" and lar["ci_high"] > lar["ci_low"]
    baseline = table[table["kind"] == "baseline"]  # no baseline in this run: the paper's value, no ours
    assert len(baseline) == 2 and baseline["variant"].isna().all() and set(baseline["paper"]) == {0.331, 0.365}
    camouflage = table[table["figure"] == "4"]  # judged: nothing without a judge
    assert set(camouflage["paper"]) == {0.10, 0.15} and camouflage["value"].isna().all()
