"""Rates with 95% confidence intervals: the bootstrap resampling whole games (rows of one game are not
independent: the same players, the same table talk), seeded so a table is reproducible; and, where the
bootstrap cannot see any spread (few games, all alike: it would print a zero-width interval), the Wilson score
interval of the pooled counts (scipy), which is never zero width."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

BOOTSTRAP = 2000
LEVEL = 0.95


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


def _counts(num: float, den: float) -> bool:
    """Whole counts with 0 <= num <= den: a proportion Wilson's interval applies to."""
    return float(num).is_integer() and float(den).is_integer() and 0 <= num <= den


def rate(frame: pd.DataFrame, by: Sequence[str], num: str, den: str | None = None) -> pd.DataFrame:
    """Per group of `by`: value = sum(num) / sum(den) (den None: the row count), its 95% CI resampling
    games, `n` (the denominator: rows, cards, rounds...) and `games`.

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
        low, high = ratio_ci(g["_num"].to_numpy(), g["_den"].to_numpy())
        if total and not high > low and _counts(g["_num"].sum(), total):
            low, high = wilson(int(round(g["_num"].sum())), int(round(total)))
        rows.append({**dict(zip(by, key)), "value": g["_num"].sum() / total if total else float("nan"),
                     "ci_low": low, "ci_high": high, "n": total, "games": g["game"].nunique()})
    return pd.DataFrame(rows, columns=columns)
