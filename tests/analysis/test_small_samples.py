"""Honest small-sample figures: the judged behaviors' intervals resample whole games (a game's speeches are not
independent trials), say when they rest on fewer than 5 games, and are seeded; a failure vote rate the rules fix
has no interval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from avalon_agents.analysis.load import load_run
from avalon_agents.analysis.paper import metrics
from avalon_agents.analysis.paper.behavior import camouflage_shares, self_recommendation, sharing_rates
from avalon_agents.analysis.stats import SMALL, game_interval, wilson
from tests.analysis.records import write_run


def judged(per_game: list[tuple[int, int]], role: str = "Loyal Servant") -> pd.DataFrame:
    """Judged self-recommendation rows: (speeches recommending the speaker, speeches) per game."""
    rows = [{"game": f"g{g}", "variant": "v", "agent": "a", "role": role, "quest": 1, "attempt": 1, "seat": 3,
             "valid": True, "recommends_self": i < hits} for g, (hits, n) in enumerate(per_game) for i in range(n)]
    return pd.DataFrame(rows)


NO_QUESTS = pd.DataFrame(columns=["game", "quest", "attempt", "team"])


def rate_row(frame: pd.DataFrame) -> pd.Series:
    table = self_recommendation(frame, NO_QUESTS)
    return table[table["metric"] == "rate"].iloc[0]


def test_two_games_of_judged_speeches_are_wider_than_the_per_speech_interval():
    """The defect: 8 of 14 Loyal Servant speeches from 2 games printed as 0.57 [0.39, 0.73] (Wilson over the 14
    speeches as if independent). The games differ (7 of 7 and 1 of 7): resampling games shows it, and the row
    says it rests on fewer than 5 games."""
    row = rate_row(judged([(7, 7), (1, 7)]))
    per_speech = wilson(8, 14)
    assert row["value"] == pytest.approx(8 / 14) and row["games"] == 2 and row["few_games"]
    assert row["ci_low"] < per_speech[0] - 0.1 and row["ci_high"] > per_speech[1] + 0.1


def test_one_game_is_never_narrower_than_its_pooled_counts_and_is_flagged():
    row = rate_row(judged([(3, 5)]))
    low, high = wilson(3, 5)
    assert row["few_games"] and row["ci_low"] <= low and row["ci_high"] >= high and row["ci_high"] > row["ci_low"]


def test_from_five_games_the_bootstrap_stands_unflagged_and_is_seeded():
    games = [(4, 4), (0, 4), (3, 4), (1, 4), (4, 4), (0, 4)]
    assert len(games) > SMALL
    first, again = rate_row(judged(games)), rate_row(judged(games))
    assert not first["few_games"] and first["ci_high"] > first["ci_low"]
    assert (first["ci_low"], first["ci_high"]) == (again["ci_low"], again["ci_high"])  # deterministic
    assert first["ci_high"] - first["ci_low"] > np.subtract(*wilson(12, 24)[::-1])  # games, not 24 trials


def test_label_shares_resample_games_too():
    rows = [{"game": f"g{g}", "variant": "v", "agent": "a", "role": "Merlin", "valid": True,
             "label": "camouflage" if g == 0 else "withholding"} for g in range(2) for _ in range(6)]
    out = camouflage_shares(pd.DataFrame(rows)).iloc[0]
    per_speech = wilson(6, 12)
    assert out["camouflage"] == 0.5 and out["games"] == 2 and out["few_games"] and out["n"] == 12
    assert out["camouflage_low"] < per_speech[0] and out["camouflage_high"] > per_speech[1]


def test_sharing_resamples_games_with_the_pooled_seats_as_its_floor():
    rows = [{"game": f"g{g}", "seat": 1, "variant": "v", "agent": "a", "role": "Merlin", "valid": True,
             "known": [2, 5], "shared": [2, 5] if g == 0 else [], "share_rate": 1.0 if g == 0 else 0.0}
            for g in range(2) for _ in range(3)]
    out = sharing_rates(pd.DataFrame(rows)).iloc[0]
    assert out["share_rate"] == 0.5 and out["few_games"] and out["games"] == 2
    assert out["ci_low"] <= wilson(6, 12)[0] and out["ci_high"] >= wilson(6, 12)[1]


def test_game_interval_uses_wilson_for_one_yes_no_per_game():
    assert game_interval([1, 0, 1], [1, 1, 1]) == wilson(2, 3)


def test_good_roles_failure_votes_are_not_applicable(tmp_path):
    fvr = metrics.failure_votes(load_run(write_run(tmp_path)))
    good = fvr[fvr["role"].isin(["Merlin", "Percival", "Loyal Servant"])]
    evil = fvr[fvr["role"].isin(["Morgana", "Assassin"])]
    assert len(good) and not good["applies"].any() and good[["ci_low", "ci_high"]].isna().all().all()
    assert (good["value"] == 0).all()  # the rules' 0 is kept, its interval is not drawn
    assert evil["applies"].all() and (evil["ci_high"] > evil["ci_low"]).all()
