"""The floor of a rate's interval over games (analysis.stats.game_ci): below FLOOR games a bootstrap is never
narrower than Wilson's interval of the pooled counts (5 games once gave 33% [27%, 43%] where that interval is
[16%, 56%]), and every interval says which method gave it (`ci_method`)."""

from __future__ import annotations

import pandas as pd
import pytest

from avalon_agents.analysis.stats import (
    BOOTSTRAPPED,
    FLOOR,
    METHOD,
    METHODS,
    PER_GAME,
    POOLED,
    SMALL,
    WILSON,
    as_games,
    rate,
    wilson,
)


def steady(games: int) -> pd.Series:
    """Games alike (2 or 3 hits of 6 rows each): the bootstrap sees little spread, narrower than the pooled
    counts' Wilson interval."""
    rows = [{"game": f"g{g}", "hit": row < 2 + g % 2} for g in range(games) for row in range(6)]
    return rate(pd.DataFrame(rows), [], "hit").iloc[0]


@pytest.mark.parametrize("games", [5, 19])
def test_below_the_floor_the_interval_covers_the_pooled_wilson_interval(games):
    row = steady(games)
    low, high = wilson(row["value"] * row["n"], row["n"])
    assert row[METHOD] == POOLED and not row["few_games"]
    assert row["ci_low"] <= low + 1e-12 and row["ci_high"] >= high - 1e-12
    assert row["n"] == 6 * games and float(row["n"]).is_integer() and "." not in str(row["n"])  # 30, not 30.0


@pytest.mark.parametrize("games", [FLOOR, 40])
def test_from_the_floor_on_the_bootstrap_stands(games):
    row = steady(games)
    low, high = wilson(row["value"] * row["n"], row["n"])
    assert row[METHOD] == BOOTSTRAPPED and row["ci_low"] > low and row["ci_high"] < high  # narrower: measured
    assert steady(games)["ci_low"] == row["ci_low"]  # seeded


def test_few_games_take_one_trial_a_game_and_one_yes_no_per_game_is_wilson():
    row = steady(SMALL - 1)
    k, n = as_games(row["value"] * row["n"], row["n"], SMALL - 1)
    assert row[METHOD] == PER_GAME and row["few_games"]
    assert row["ci_low"] <= wilson(k, n)[0] and row["ci_high"] >= wilson(k, n)[1]
    wins = rate(pd.DataFrame({"game": ["a", "b", "c"], "won": [True, False, True]}), [], "won").iloc[0]
    assert wins[METHOD] == WILSON and (wins["ci_low"], wins["ci_high"]) == wilson(2, 3)
    assert set(METHODS) == {WILSON, BOOTSTRAPPED, POOLED, PER_GAME}


def test_a_spread_wider_than_its_floor_is_the_bootstraps():
    rows = [{"game": f"g{g}", "hit": g % 2 == 0} for g in range(8) for _ in range(10)]  # all or nothing per game
    row = rate(pd.DataFrame(rows), [], "hit").iloc[0]
    assert row[METHOD] == BOOTSTRAPPED and row["ci_low"] < wilson(40, 80)[0]
