"""Outcome metrics against values counted by hand from the records in tests/analysis/records.py."""

from __future__ import annotations

import pandas as pd
import pytest

from avalon_agents.analysis.load import load_run
from avalon_agents.analysis.paper import metrics
from tests.analysis.records import write_run


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return load_run(write_run(tmp_path_factory.mktemp("run")))


def value(frame, **where):
    rows = frame
    for column, wanted in where.items():
        rows = rows[rows[column] == wanted]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_loading_puts_every_row_in_its_game_and_seat(data):
    assert list(data.games["game_index"]) == [1, 2]  # game 3 has no result.json
    assert set(data.games["reason"]) == {"merlin_assassinated", "five_rejections"}
    assert len(data.proposals) == 5 + 5 and len(data.votes) == 10 * 6 and len(data.cards) == 2 + 3 + 4 + 3
    for table in ("speeches", "proposals", "votes", "cards", "extractions", "calls"):
        frame = data.tables()[table]
        assert frame[["game", "variant", "series", "seat", "role", "side", "agent"]].notna().all().all(), table
        assert not frame.columns.duplicated().any(), table
    assert set(data.extractions["request"]) <= {"propose", "vote", "quest", "assassinate", "speak"}
    assert data.extractions["request"].notna().all() and data.extractions["kind"].notna().all()  # agent kind
    vote = value(data.votes, game_index=1, quest=2, attempt=1, seat=5)
    assert (vote["vote"], vote["leader"], vote["leader_role"], vote["clean"], vote["approved"]) == (
        "approve", 2, "Percival", False, False)


def test_win_rate(data):
    wr = metrics.win_rate(data)
    assert value(wr, side="evil")["value"] == 1.0 and value(wr, side="good")["value"] == 0.0
    assert value(wr, side="evil")["games"] == 2


def test_quest_engagement_counts_quests_on_the_team_over_quests_played(data):
    qer = metrics.quest_engagement(data)
    assert value(qer, role="Merlin")["value"] == 1.0
    assert value(qer, role="Percival")["value"] == 0.5
    servants = value(qer, role="Loyal Servant")
    assert (servants["value"], servants["n"]) == (0.5, 8)  # (3 + 1) / (4 + 4); game B sent no quest
    assert value(qer, role="Morgana", agent="theirs")["value"] == 0.25


def test_failure_vote_rate(data):
    fvr = metrics.failure_votes(data)
    assert value(fvr, role="Morgana")["value"] == 1.0 and value(fvr, role="Assassin")["value"] == 1.0
    assert (value(fvr, role="Merlin")["value"], value(fvr, role="Merlin")["n"]) == (0.0, 4)


def test_leader_approval(data):
    lar = metrics.leader_approval(data)
    assert value(lar, role="Merlin")["value"] == pytest.approx(6 / 12)
    assert value(lar, role="Percival")["value"] == pytest.approx(5 / 12)
    assert value(lar, role="Loyal Servant")["value"] == pytest.approx(14 / 24)
    assert "Assassin" not in set(lar["role"])  # never led


def test_leader_self_inclusion_and_its_success(data):
    sr = metrics.leader_self_inclusion(data)
    rate, success = sr[sr["metric"] == "rate"], sr[sr["metric"] == "success"]
    assert value(rate, role="Merlin")["value"] == 1.0 and value(success, role="Merlin")["value"] == 0.5
    assert value(success, role="Percival")["value"] == 0.0
    assert value(success, role="Loyal Servant")["value"] == 0.5
    assert value(rate, role="Morgana")["value"] == 0.5 and value(success, role="Morgana")["n"] == 1


def test_votes_against_clean_and_dirty_teams(data):
    votes = metrics.team_votes(data)
    assert value(votes, role="Merlin", team="clean")["value"] == pytest.approx(2 / 6)
    assert value(votes, role="Merlin", team="dirty")["value"] == 1.0
    morgana = value(votes, role="Morgana", team="dirty")  # every dirty team had Morgana on it
    assert (morgana["value"], morgana["n"]) == (0.0, 4)


def test_assassination_valid_responses_and_cost(data):
    assert value(metrics.assassinations(data), agent="theirs")["value"] == 1.0
    vrr = value(metrics.valid_responses(data), role="Merlin")
    assert (vrr["value"], vrr["n"]) == (pytest.approx(2 / 3), 3)
    cost = metrics.cost(data)
    summary = value(cost, module="summary")
    assert (summary["calls_per_game"], summary["input_tokens_per_game"], summary["games"]) == (1.0, 150.0, 2)
    assert value(cost, module="action+response")["output_tokens_per_game"] == 2.5


def test_paper_table_has_wr_and_the_evil_roles_qer_and_fvr(data):
    table = metrics.paper_table(data)
    evil = value(table, side="evil")
    assert (evil["agents"], evil["win_rate"], evil["qer_Morgana"], evil["fvr_Assassin"]) == ("theirs", 1.0, 0.25, 1.0)


def test_confidence_intervals_resample_games():
    import numpy as np

    from avalon_agents.analysis.stats import ratio_ci

    low, high = ratio_ci(np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 1]), np.ones(10))
    assert 0.3 <= low < 0.7 < high <= 1.0
    assert ratio_ci(np.array([2, 2]), np.array([4, 4])) == (0.5, 0.5)


def test_health_counts_failed_calls_reasks_and_fallbacks(data):
    row = metrics.health(data).set_index("variant").loc["full"]
    assert (row["games"], row["llm_calls"], row["failed_calls"]) == (2, 3, 0)
    assert (row["decisions"], row["fallbacks"]) == (3, 1) and row["fallback_share"] == pytest.approx(1 / 3)


def test_no_interval_is_zero_width(data):
    from avalon_agents.analysis.stats import wilson

    low, high = wilson(1, 1)
    assert 0.2 < low < 1 and high == 1.0  # one win of one game: wide, never [100%, 100%]
    table = metrics.win_rate(data)
    assert (table["ci_high"] > table["ci_low"]).all(), table


def won_games(cells: dict[tuple[str, str, str], tuple[int, int]]):
    """A RunData of games only: per (variant, good agent, evil agent), (good wins, games)."""
    from avalon_agents.analysis.load import COLUMNS, RunData

    games, seats = [], []
    for (variant, good, evil), (wins, n) in cells.items():
        for i in range(n):
            game = f"{variant}/series-1/game-{i:05d}"
            games.append({"game": game, "variant": variant, "winner": "good" if i < wins else "evil",
                          "good_agents": good, "evil_agents": evil, "quests_played": 0})
            seats += [{"game": game, "variant": variant, "side": side, "seat": s, "role": role}
                      for s, side, role in ((1, "good", "Merlin"), (2, "evil", "Morgana"))]
    tables = {name: pd.DataFrame(columns=columns) for name, columns in COLUMNS.items()}
    return RunData(**{**tables, "games": pd.DataFrame(games), "seats": pd.DataFrame(seats)})


def test_each_variant_is_compared_with_the_first_of_its_sides():
    from avalon_agents.analysis.stats import fisher_p, newcombe

    data = won_games({("full", "ours", "bots"): (9, 10), ("wo_plan", "ours", "bots"): (3, 10),
                      ("evil_full", "bots", "ours"): (2, 10), ("evil_wo_plan", "bots", "ours"): (2, 10)})
    order = ["full", "wo_plan", "evil_full", "evil_wo_plan"]
    assert metrics.references(data, order) == {"full": "full", "wo_plan": "full", "evil_full": "evil_full",
                                               "evil_wo_plan": "evil_full"}
    table = metrics.paper_table(data, order)
    assert list(table["variant"].drop_duplicates()) == order  # the config's order, not the alphabet
    good = value(table, variant="wo_plan", side="good")
    assert good["vs_variant"] == "full" and good["diff"] == pytest.approx(0.3 - 0.9)
    # B - A is minus (A - B): Newcombe's published 9/10 vs 3/10 interval, mirrored (test_stats.py)
    assert (good["diff_ci_low"], good["diff_ci_high"]) == pytest.approx((-0.8090, -0.1705), abs=5e-5)
    assert (good["diff_ci_low"], good["diff_ci_high"]) == pytest.approx(tuple(-x for x in newcombe(9, 10, 3, 10)[::-1]))
    assert good["diff_p_value"] == pytest.approx(fisher_p(3, 10, 9, 10)) and good["diff_p_value"] < 0.05
    evil = value(table, variant="wo_plan", side="evil")
    assert evil["diff"] == pytest.approx(0.6) and evil["diff_ci_low"] > 0
    same = value(table, variant="evil_wo_plan", side="good")
    assert same["vs_variant"] == "evil_full" and same["diff"] == 0 and same["diff_p_value"] == pytest.approx(1.0)
    assert same["diff_ci_high"] - same["diff_ci_low"] > 0.5  # equal rates: a wide interval, never [0, 0]
    ref = value(table, variant="full", side="good")
    assert ref["vs_variant"] == "full" and pd.isna(ref["diff"]) and pd.isna(ref["diff_p_value"])
