"""Rates with 95% confidence intervals, and the difference between two win rates.

- A rate of one yes/no per game (a win rate, the assassination rate) is a binomial proportion over independent
  games: its interval is Wilson's score interval (scipy), never zero width.
- Any other rate's interval is the bootstrap resampling whole games (rows of one game are not independent: the same
  players, the same table talk), seeded so a table is reproducible. With fewer than `SMALL` games the
  bootstrap has too few distinct resamples to see the spread (one game: none; all alike: a zero-width
  interval such as [100%, 100%]), so there the interval is widened to cover the Wilson score interval of the
  pooled counts (scipy), which is never zero width.
- The difference between two proportions (an ablation's question: does variant B win more or less often than
  A?) has Newcombe's hybrid score interval, built from the two Wilson intervals, and Fisher's exact test
  (scipy). statsmodels, which has both, is not a dependency: these two are a few lines over scipy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

BOOTSTRAP = 2000
LEVEL = 0.95
SMALL = 5
"""Fewer games than this: a rate's interval also covers the Wilson interval of its pooled counts."""


def bootstrap_ci(values: np.ndarray, seed: int = 0, level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of independent values."""
    values = np.asarray(values, dtype=float)
    return ratio_ci(values, np.ones_like(values), seed, level)


def ratio_ci(num: np.ndarray, den: np.ndarray, seed: int = 0, level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap CI of sum(num) / sum(den), resampling the units (one per game) together."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if len(num) == 0 or den.sum() == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(num), size=(BOOTSTRAP, len(num)))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = num[picks].sum(axis=1) / den[picks].sum(axis=1)
    ratios = ratios[~np.isnan(ratios)]
    tail = (1 - level) / 2 * 100
    return float(np.percentile(ratios, tail)), float(np.percentile(ratios, 100 - tail))


def wilson(successes: int, trials: int, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval of a proportion (never zero width for trials > 0)."""
    from scipy.stats import binomtest

    if trials <= 0:
        return float("nan"), float("nan")
    ci = binomtest(successes, trials).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def newcombe(x1: int, n1: int, x2: int, n2: int, level: float = LEVEL) -> tuple[float, float]:
    """Newcombe's hybrid score interval for p1 - p2 (Newcombe 1998, method 10), where p1 = x1 / n1 and
    p2 = x2 / n2: from each proportion's Wilson interval (l, u),
    [d - sqrt((p1 - l1)^2 + (u2 - p2)^2), d + sqrt((u1 - p1)^2 + (p2 - l2)^2)]. Never zero width."""
    if n1 <= 0 or n2 <= 0:
        return float("nan"), float("nan")
    p1, p2 = x1 / n1, x2 / n2
    (l1, u1), (l2, u2) = wilson(x1, n1, level), wilson(x2, n2, level)
    return p1 - p2 - float(np.hypot(p1 - l1, u2 - p2)), p1 - p2 + float(np.hypot(u1 - p1, p2 - l2))


def fisher_p(x1: int, n1: int, x2: int, n2: int) -> float:
    """Two-sided p-value of Fisher's exact test that x1 of n1 and x2 of n2 come from one proportion
    (conservative at small n: it conditions on both margins)."""
    from scipy.stats import fisher_exact

    if n1 <= 0 or n2 <= 0:
        return float("nan")
    return float(fisher_exact([[x1, n1 - x1], [x2, n2 - x2]]).pvalue)


def _counts(num: float, den: float) -> bool:
    """Whole counts with 0 <= num <= den: a proportion Wilson's interval applies to."""
    return float(num).is_integer() and float(den).is_integer() and 0 <= num <= den


def rate(frame: pd.DataFrame, by: Sequence[str], num: str, den: str | None = None) -> pd.DataFrame:
    """Per group of `by`: value = sum(num) / sum(den) (den None: the row count), its 95% CI (one yes/no per
    game: Wilson's; otherwise resampling games, with fewer than `SMALL` games, or no spread, widened to cover
    the Wilson interval of the pooled counts; values that are not counts get no interval then), `n` (the
    denominator: rows, cards, rounds...) and `games`.

    Args:
        frame: rows with a `game` column and the `by`, `num` (and `den`) columns.
        by: the grouping columns (may be empty: one row for everything).
        num: a numeric or boolean column.
        den: a numeric column, or None to count rows.
    """
    by = list(by)
    columns = [*by, "value", "ci_low", "ci_high", "n", "games"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    work = frame.assign(_num=frame[num].astype(float), _den=frame[den].astype(float) if den else 1.0)
    per_game = work.groupby([*by, "game"], dropna=False)[["_num", "_den"]].sum().reset_index()
    rows = []
    for key, g in per_game.groupby(by, dropna=False, sort=True) if by else [((), per_game)]:
        key = key if isinstance(key, tuple) else (key,)
        total = g["_den"].sum()
        if (g["_den"] == 1).all() and g["_num"].isin((0.0, 1.0)).all():  # one yes/no per game: Wilson
            low, high = wilson(int(g["_num"].sum()), len(g))
            rows.append({**dict(zip(by, key)), "value": g["_num"].sum() / total, "ci_low": low, "ci_high": high,
                         "n": total, "games": g["game"].nunique()})
            continue
        low, high = ratio_ci(g["_num"].to_numpy(), g["_den"].to_numpy())
        if total and _counts(g["_num"].sum(), total) and (len(g) < SMALL or not high > low):
            w_low, w_high = wilson(int(round(g["_num"].sum())), int(round(total)))
            low, high = float(np.fmin(low, w_low)), float(np.fmax(high, w_high))
        elif not high > low:  # no counts to fall back on: no interval rather than a falsely exact one
            low, high = float("nan"), float("nan")
        rows.append({**dict(zip(by, key)), "value": g["_num"].sum() / total if total else float("nan"),
                     "ci_low": low, "ci_high": high, "n": total, "games": g["game"].nunique()})
    return pd.DataFrame(rows, columns=columns)
