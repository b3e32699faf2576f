"""report.compute counts the metrics over the games as codes (report.coded): every table is the one the metrics give
over the run as loaded, and the analysis keeps the data as loaded."""

from __future__ import annotations

import pandas as pd

from avalon_agents.analysis.load import load_run
from avalon_agents.analysis.paper import metrics
from avalon_agents.analysis.paper.report import coded, compute


def test_metrics_over_coded_games_are_those_over_the_games_as_loaded(analysis_run):
    data = load_run(analysis_run)
    result = compute(data, analysis_run, None)
    assert result.data is data
    same = coded(data)
    assert all(isinstance(t["game"].dtype, pd.CategoricalDtype) for t in same.tables().values()
               if "game" in t and len(t))
    assert [list(t["game"].astype(str)) for t in same.tables().values() if "game" in t] == [
        list(t["game"]) for t in data.tables().values() if "game" in t]
    for name, metric in metrics.OUTCOMES.items():
        pd.testing.assert_frame_equal(result.tables[name].reset_index(drop=True),
                                      metrics.every_role(metric(data), data).reset_index(drop=True))
    pd.testing.assert_frame_equal(result.headline, metrics.paper_table(data, metrics.references(data)))


def test_a_table_naming_a_game_the_games_table_lacks_is_kept_as_loaded(analysis_run):
    data = load_run(analysis_run)
    seats = data.seats.copy()
    seats.loc[seats.index[0], "game"] = "elsewhere"
    odd = type(data)(**{**data.tables(), "seats": seats})
    assert coded(odd) is odd
