"""Human figures beside a run's: the shipped file, the same measures computed from records, and when the
report shows them."""

from __future__ import annotations

import pytest

from avalon_agents.analysis.humans import players
from avalon_agents.analysis.load import load_run
from avalon_agents.analysis.paper import metrics
from avalon_agents.analysis.paper.report import analyze
from avalon_agents.records.analysis_dir import report_file
from tests.analysis.records import write_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("run"))


def test_the_shipped_figures_are_the_measured_ones():
    table = players.human_figures().set_index("role")
    assert list(table.index) == ["Merlin", "Percival", "Loyal Servant", "Morgana", "Assassin"]
    assert table.loc["Merlin", "quest_engagement"] == 0.547 and table.loc["Assassin", "failure_vote_rate"] == 0.591
    assert table.loc["Morgana", "failure_vote_cards"] == 1502 and table["failure_vote_rate"].isna().sum() == 3
    assert set(players.MEASURES) <= set(table.columns)


def test_ours_beside_the_humans_for_every_measure_and_role(run):
    data = load_run(run)
    assert players.paper_six(data)
    table = players.human_table(data)
    assert set(table["measure"]) == set(players.MEASURES)
    figures = players.human_figures().set_index("role")
    for row in table.itertuples():
        assert row.humans == figures.loc[row.role, row.measure]
        assert row.ci_low <= row.value <= row.ci_high
    # ours is the metric the report shows elsewhere, not a second computation
    qer = metrics.quest_engagement(data).set_index(["variant", "agent", "role"])["value"]
    for row in table[table["measure"] == "quest_engagement"].itertuples():
        assert row.value == qer[(row.variant, row.agent, row.role)]
    # failure votes only for the evil roles: the humans have no good figure to show
    assert set(table[table["measure"] == "failure_vote_rate"]["role"]) <= {"Morgana", "Assassin"}
    votes = data.votes[data.votes["role"] == "Merlin"]
    merlin = table[(table["measure"] == "approve_rate") & (table["role"] == "Merlin")]
    assert merlin["value"].iloc[0] == pytest.approx((votes["vote"] == "approve").mean())


@pytest.mark.slow  # seconds: the fast suite stays under its 2 minutes
def test_the_report_shows_them_for_the_papers_six_roles_unless_told_not(run, tmp_path):
    shown = analyze(run, tmp_path / "auto")
    assert "human_reference" in shown.tables
    assert "## Beside human players" in report_file(tmp_path / "auto").read_text()
    hidden = analyze(run, tmp_path / "none", reference="none")
    assert "human_reference" not in hidden.tables
    assert "Beside human players" not in report_file(tmp_path / "none").read_text()


def test_a_run_with_another_role_set_is_not_the_paper_six(run):
    data = load_run(run)
    seven = data.seats.copy()
    seven.loc[seven.index[0], "role"] = "Mordred"
    assert not players.paper_six(type(data)(**{**data.__dict__, "seats": seven}))


@pytest.mark.slow  # seconds: the fast suite stays under its 2 minutes
def test_the_figures_mark_the_human_figure_of_each_role(run, tmp_path):
    from matplotlib.collections import PathCollection

    from avalon_agents.analysis import plots
    from avalon_agents.analysis.paper.report import figures

    def markers(fig) -> list:
        return [c for ax in fig.axes for c in ax.collections if isinstance(c, PathCollection)]

    result = analyze(run, tmp_path / "a")
    figure = figures(result.tables)["qer_fvr"]
    people = result.tables["human_reference"]
    expected = set(people[people["measure"].isin(["quest_engagement", "failure_vote_rate"])]["humans"].round(3))
    marked = {round(float(y), 3) for c in markers(figure) for _, y in c.get_offsets()}
    assert expected and expected <= marked
    legend = [t.get_text() for lg in figure.legends for t in lg.get_texts()]
    assert plots.HUMANS in legend
    without = figures(analyze(run, tmp_path / "b", reference="none").tables)["qer_fvr"]
    assert not markers(without)
