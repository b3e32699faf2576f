"""Intervals and tests of analysis.stats against published values and a second computation by hand, and
the small-n rule: no interval a table prints is zero width."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from avalon_agents.analysis import stats
from avalon_agents.analysis.stats import SMALL, as_games, fisher_p, newcombe, rate, wilson

# Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10 (the hybrid score interval)
NEWCOMBE_TABLE_II = [
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0)),
    ((10, 10, 0, 10), (0.6075, 1.0)),
]


def wilson_by_hand(x: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval from its closed form (the roots of the score test's quadratic)."""
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize(("counts", "published"), NEWCOMBE_TABLE_II)
def test_newcombe_matches_the_published_intervals(counts, published):
    assert newcombe(*counts) == pytest.approx(published, abs=5e-5)


@pytest.mark.parametrize(("x", "n"), [(0, 1), (1, 1), (3, 10), (10, 10), (7, 20)])
def test_wilson_matches_its_closed_form(x, n):
    assert wilson(x, n) == pytest.approx(wilson_by_hand(x, n), abs=1e-9)


def test_newcombe_by_hand_from_the_two_wilson_intervals():
    (l1, u1), (l2, u2) = wilson_by_hand(7, 10), wilson_by_hand(2, 10)
    d = 0.7 - 0.2
    expected = (d - math.sqrt((0.7 - l1) ** 2 + (u2 - 0.2) ** 2), d + math.sqrt((u1 - 0.7) ** 2 + (0.2 - l2) ** 2))
    assert newcombe(7, 10, 2, 10) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("counts", [(0, 1, 0, 1), (1, 1, 0, 1), (1, 1, 1, 1), (10, 10, 10, 10), (0, 10, 10, 10),
                                    (3, 4, 1, 4)])
def test_a_difference_interval_is_never_zero_width_and_holds_the_difference(counts):
    x1, n1, x2, n2 = counts
    low, high = newcombe(*counts)
    assert -1 <= low <= x1 / n1 - x2 / n2 <= high <= 1 and high - low > 0.1


def test_fisher_exact_p_values():
    assert fisher_p(3, 4, 1, 4) == pytest.approx(34 / 70)  # the lady tasting tea: (1 + 16 + 16 + 1) / C(8, 4)
    assert fisher_p(10, 10, 0, 10) == pytest.approx(2 / math.comb(20, 10))  # the two most extreme tables
    assert fisher_p(5, 10, 5, 10) == pytest.approx(1.0)
    assert fisher_p(9, 10, 3, 10) == pytest.approx(fisher_p(3, 10, 9, 10))  # symmetric


def test_fisher_p_by_hand_from_the_hypergeometric_tables():
    """Two-sided: the probabilities of every table (same margins) no likelier than the one observed."""
    x1, n1, x2, n2 = 8, 10, 3, 10
    k, total = x1 + x2, n1 + n2

    def prob(a: int) -> float:
        return math.comb(n1, a) * math.comb(n2, k - a) / math.comb(total, k)

    expected = sum(prob(a) for a in range(max(0, k - n2), min(k, n1) + 1) if prob(a) <= prob(x1) * (1 + 1e-7))
    assert fisher_p(x1, n1, x2, n2) == pytest.approx(expected)


def frame(per_game: list[tuple[int, int]]) -> pd.DataFrame:
    """Rows of 0/1 outcomes: (hits, rows) per game."""
    return pd.DataFrame([{"game": g, "hit": i < hits} for g, (hits, rows) in enumerate(per_game) for i in range(rows)])


@pytest.mark.parametrize("per_game", [[(5, 5)], [(0, 4)], [(2, 4)], [(3, 3), (3, 3)], [(0, 3)] * 3,
                                      [(2, 4), (2, 4), (2, 4)], [(5, 10), (5, 10), (6, 10)]])
def test_small_n_rates_get_the_wilson_interval_of_their_pooled_counts(per_game):
    row = rate(frame(per_game), [], "hit").iloc[0]
    hits, rows = sum(h for h, _ in per_game), sum(r for _, r in per_game)
    low, high = wilson(hits, rows)
    assert row["ci_low"] <= low and row["ci_high"] >= high  # at least as wide as Wilson: never [v, v]
    assert row["ci_high"] - row["ci_low"] > 0.1
    assert row["ci_low"] <= row["value"] <= row["ci_high"]


def test_from_small_n_on_the_bootstrap_stands_unless_it_sees_no_spread():
    varied = [(1, 2), (2, 2), (0, 2), (1, 2), (2, 2), (1, 2)]
    assert len(varied) >= SMALL
    row = rate(frame(varied), [], "hit").iloc[0]
    assert row["ci_high"] > row["ci_low"]
    alike = rate(frame([(1, 2)] * SMALL), [], "hit").iloc[0]  # five games, all 1 of 2: no spread to resample
    assert (alike["ci_low"], alike["ci_high"]) == pytest.approx(wilson(*as_games(SMALL, 2 * SMALL, SMALL)))


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (3, 7), (12, 20), (50, 50), (0, 400)])
def test_wilson_is_scipys_for_whole_counts_and_takes_a_games_fractions(k, n):
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(method="wilson")
    assert wilson(k, n) == pytest.approx((ci.low, ci.high))
    assert as_games(8, 14, 2) == pytest.approx((8 / 7, 2))  # 8 of 14 rows from 2 games: 1.14 of 2 trials
    low, high = wilson(*as_games(8, 14, 2))
    assert low < wilson(8, 14)[0] and high > wilson(8, 14)[1]  # wider than counting the rows


def test_values_that_are_not_counts_get_no_interval_rather_than_a_zero_width_one():
    rows = pd.DataFrame({"game": [0, 1], "x": [0.3, 0.3], "d": [1.0, 1.0]})  # 0.6 of 2: not counts
    row = rate(rows, [], "x", "d").iloc[0]
    assert row["value"] == pytest.approx(0.3) and np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])


@pytest.mark.parametrize(("wins", "games"), [(10, 10), (0, 10), (7, 10), (33, 40), (1, 1)])
def test_a_yes_no_per_game_rate_has_wilsons_interval(wins, games):
    frame = pd.DataFrame({"game": range(games), "side": "evil", "won": [i < wins for i in range(games)]})
    [row] = rate(frame, ["side"], "won").to_dict("records")
    low, high = wilson(wins, games)
    assert row["value"] == wins / games and (row["ci_low"], row["ci_high"]) == (low, high)
    assert row["ci_high"] - row["ci_low"] > 0.05  # 10 of 10 is not [100%, 100%]


def test_resampling_in_blocks_draws_what_all_at_once_draws(monkeypatch):
    from avalon_agents.analysis import stats

    num, den = np.arange(37) % 3, np.arange(37) % 4 + 1
    picks = np.random.default_rng(7).integers(0, 37, size=(stats.BOOTSTRAP, 37))  # the whole array at once
    monkeypatch.setattr(stats, "BLOCK", 37 * 3)  # three rows a block: 667 blocks
    blocks = stats.resampled_ratios(num.astype(float), den.astype(float), np.random.default_rng(7))
    assert np.array_equal(blocks, num[picks].sum(axis=1) / den[picks].sum(axis=1))


def test_an_interval_of_the_same_games_is_resampled_once(monkeypatch):
    from avalon_agents.analysis import stats

    num, den = np.array([1.0, 2, 0, 3, 1, 2]), np.array([3.0, 3, 2, 4, 3, 3])
    first = stats.ratio_ci(num, den, seed=11)
    monkeypatch.setattr(stats, "resampled_ratios", lambda *a: pytest.fail("resampled again"))
    assert stats.ratio_ci(num.copy(), den.copy(), seed=11) == first
    with pytest.raises(pytest.fail.Exception):
        stats.ratio_ci(num, den, seed=12)  # another seed: its own draws


def test_sums_only_gives_rates_rows_without_their_intervals():
    """stats.sums_only (view.compare's per-game values): the same groups, values, n, games and few_games as `rate`,
    in its order and columns, no interval (NaN, no method); outside it, intervals again."""
    rng = np.random.default_rng(3)
    sides = np.tile(["good", "evil", None, "good", "evil"], 40)
    frame = pd.DataFrame({"game": np.repeat(np.arange(40), 5), "side": sides,
                          "hit": rng.random(200) > 0.4, "den": rng.integers(0, 3, 200).astype(float)})
    for by, den in ((["side"], None), ([], "den"), (["side"], "den")):
        full = stats.rate(frame, by, "hit", den)
        with stats.sums_only():
            sums = stats.rate(frame, by, "hit", den)
        assert list(sums.columns) == list(full.columns)
        same = [*by, "value", "n", "games", stats.FEW]
        pd.testing.assert_frame_equal(sums[same], full[same], check_dtype=False)
        assert sums["ci_low"].isna().all() and sums["ci_high"].isna().all() and sums[stats.METHOD].isna().all()
        assert full["ci_low"].notna().any()
    with stats.sums_only():
        assert stats.rate(frame.iloc[:0], ["side"], "hit").empty
    assert stats.rate(frame, [], "hit")["ci_low"].notna().all()  # the option ends with its block


def test_kept_picks_give_the_draws_and_leave_the_generator_as_drawing_them_would():
    """stats._picks keeps a generator state's picks: the ratios and the generator's next draws are those of drawing
    them afresh (difference_ci's second side starts where its first left the generator)."""
    def drawn(num, den, rng):  # resampled_ratios as it was before picks were kept
        ratios, rows = np.empty(stats.BOOTSTRAP), max(1, stats.BLOCK // len(num))
        for start in range(0, stats.BOOTSTRAP, rows):
            picks = rng.integers(0, len(num), size=(min(rows, stats.BOOTSTRAP - start), len(num)))
            with np.errstate(invalid="ignore", divide="ignore"):
                ratios[start:start + len(picks)] = num[picks].sum(axis=1) / den[picks].sum(axis=1)
        return ratios

    data = np.random.default_rng(5)
    stats._PICKS.clear()
    for units in (3, 1000, 1000):
        num, den = data.random(units), data.integers(0, 4, units).astype(float)
        kept, fresh = np.random.default_rng(0), np.random.default_rng(0)
        for values in (num, num[::-1].copy()):
            assert np.array_equal(stats.resampled_ratios(values, den, kept), drawn(values, den, fresh), equal_nan=True)
        assert (kept.integers(0, 100, 5) == fresh.integers(0, 100, 5)).all()
    assert len(stats._PICKS) == 4  # 3 and 1,000 units, from seed 0 and from where each left it


def test_poisson_counts_are_poisson_1_in_integer_arithmetic_the_same_on_every_machine():
    """stats.poisson_counts: the thresholds are floor(2**32 P(X <= k)) of Poisson(1), computed in fractions; a
    stream's block is fixed by its seed (these sums are what any CPU draws: a change here changes every interval
    from LARGE games)."""
    thresholds, _, _ = stats._poisson_table()
    assert thresholds[:3].tolist() == [math.floor(2**32 * sum(math.exp(-1) / math.factorial(i) for i in range(k + 1)))
                                       for k in range(3)]
    drawn = np.random.default_rng(np.random.SeedSequence(123, spawn_key=(0,))).integers(
        0, 2**32, size=(stats.BOOTSTRAP, stats.POISSON_COLUMNS), dtype=np.uint32)
    counts = stats.poisson_counts(drawn)
    assert (counts == np.searchsorted(thresholds, drawn, side="right")).all()  # the table's shortcut is exact
    assert int(counts.sum()) == 8187940 and np.bincount(counts.ravel())[:4].tolist() == [3016486, 3011965, 1506510,
                                                                                            500991]
    assert counts.mean() == pytest.approx(1, abs=0.002) and counts.var() == pytest.approx(1, abs=0.005)


def test_from_large_games_the_resamples_weigh_each_game_by_a_poisson_count_exactly():
    """From stats.LARGE games of whole numbers, a resample's sums are each game's Poisson weight times its values,
    summed as integers (the games in order of their values): checked against the weights drawn by hand; a longer
    run's weights extend a shorter one's; the interval is close to picking the games with replacement."""
    rng = np.random.default_rng(4)
    games = 5000
    num = rng.integers(0, 4, games).astype(float)
    den = num + rng.integers(0, 3, games)
    stats._POISSON.clear()
    ratios = stats.resampled_ratios(num, den, np.random.default_rng(0))
    stream = int(np.random.default_rng(0).integers(0, 2**63, dtype=np.int64))
    blocks = [stats.poisson_counts(np.random.default_rng(np.random.SeedSequence(stream, spawn_key=(b,))).integers(
        0, 2**32, size=(stats.BOOTSTRAP, stats.POISSON_COLUMNS), dtype=np.uint32)) for b in range(2)]
    weights = np.concatenate(blocks, axis=1)[:, :games].astype(np.int64)
    order = np.lexsort((den, num))
    by_hand = (weights @ num[order].astype(np.int64)) / (weights @ den[order].astype(np.int64))
    assert np.array_equal(ratios, by_hand)
    shorter = stats._POISSON[stream][:, :games + 1].copy()
    stats._POISSON.clear()
    stats._poisson_weights(stream, 3 * stats.POISSON_COLUMNS)  # drawn at once, longer
    assert np.array_equal(stats._POISSON[stream][:, :games + 1], shorter)
    picks = np.random.default_rng(1).integers(0, games, size=(stats.BOOTSTRAP, games))
    picked = num[picks].sum(axis=1) / den[picks].sum(axis=1)
    width = np.percentile(picked, 97.5) - np.percentile(picked, 2.5)
    assert np.percentile(ratios, [2.5, 97.5]) == pytest.approx(np.percentile(picked, [2.5, 97.5]), abs=0.15 * width)
    smaller = stats.resampled_ratios(num[:999], den[:999], np.random.default_rng(0))  # below LARGE: picked
    first = np.random.default_rng(0).integers(0, 999, size=(max(1, stats.BLOCK // 999), 999))
    assert np.array_equal(smaller[:len(first)], num[:999][first].sum(axis=1) / den[:999][first].sum(axis=1))
    halves = num + 0.5  # not whole numbers: picked, as below LARGE
    assert stats.poisson_ratios(halves, den, np.random.default_rng(0)) is None
