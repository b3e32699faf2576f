"""Agreement of a judge with human labels: Cohen's kappa and accuracy with 95% CIs, the confusion matrix,
and per-class precision and recall.

scikit-learn is not a dependency and these are a few lines over a pandas crosstab: the confusion matrix is the
crosstab of (human, judge) labels; kappa is (p_o - p_e) / (1 - p_e), p_o the share on the diagonal and p_e the
agreement expected from the two sets of marginals alone. The intervals resample whole games, as
`stats.ratio_ci` does (the labels of one game are not independent: the same players, the same talk): one
confusion matrix per game, BOOTSTRAP seeded resamples of the games, the percentile interval of the statistic
over the resamples' summed matrices. From fewer than 5 games the accuracy's interval is widened to cover the
Wilson interval of the pooled counts (`stats.small_sample`, the rule of every resampled interval).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from avalon_agents.analysis.stats import BOOTSTRAP, LEVEL, as_games, small_sample, wilson


def confusion(truth: Sequence[str], guess: Sequence[str], labels: Sequence[str]) -> pd.DataFrame:
    """Counts of (human label: rows, judge label: columns), every label in `labels` order, zeros kept."""
    table = pd.crosstab(pd.Series(list(truth), name="human", dtype=object),
                        pd.Series(list(guess), name="judge", dtype=object))
    return table.reindex(index=list(labels), columns=list(labels), fill_value=0).astype(int)


def kappa(matrix: np.ndarray) -> np.ndarray:
    """Cohen's kappa of one K x K confusion matrix, or of each of a stack (..., K, K); nan when undefined."""
    m = np.asarray(matrix, dtype=float)
    n = m.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(m, axis1=-2, axis2=-1) / n
        expected = (m.sum(axis=-1) * m.sum(axis=-2)).sum(axis=-1) / n**2
        return np.where(expected < 1, (observed - expected) / (1 - expected), np.nan)


def accuracy(matrix: np.ndarray) -> np.ndarray:
    """The share of labels the judge got right (the diagonal over the total)."""
    m = np.asarray(matrix, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.trace(m, axis1=-2, axis2=-1) / m.sum(axis=(-2, -1))


def per_class(matrix: pd.DataFrame) -> pd.DataFrame:
    """Per label: precision (right / the judge's uses of it), recall (right / the humans' uses), support (the
    humans' uses) and predicted (the judge's uses); a share with nothing to divide by is nan."""
    m = matrix.to_numpy(dtype=float)
    right = np.diag(m)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision, recall = right / m.sum(axis=0), right / m.sum(axis=1)
    return pd.DataFrame({"label": list(matrix.index), "precision": precision, "recall": recall,
                         "support": m.sum(axis=1).astype(int), "predicted": m.sum(axis=0).astype(int)})


@dataclass
class Agreement:
    """How far a judge is from the human labels over a set of items."""

    n: int
    games: int
    kappa: float
    kappa_ci: tuple[float, float]
    accuracy: float
    accuracy_ci: tuple[float, float]
    confusion: pd.DataFrame
    per_class: pd.DataFrame


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return float("nan"), float("nan")
    tail = (1 - level) / 2 * 100
    return float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))


def agreement(frame: pd.DataFrame, labels: Sequence[str], seed: int = 0, level: float = LEVEL) -> Agreement:
    """Agreement of `frame["guess"]` (the judge) with `frame["truth"]` (the humans), per item.

    Args:
        frame: one row per judged item with `game`, `truth` and `guess` (labels from `labels`).
        labels: every label, in the order of the confusion matrix.
        seed: seeds the bootstrap over games.
        level: the intervals' confidence level.
    """
    matrix = confusion(frame["truth"], frame["guess"], labels)
    games = sorted(frame["game"].unique()) if len(frame) else []
    stack = np.stack([confusion(g["truth"], g["guess"], labels).to_numpy() for _, g in frame.groupby("game")]) \
        if games else np.zeros((0, len(labels), len(labels)))
    if len(games):
        picks = np.random.default_rng(seed).integers(0, len(games), size=(BOOTSTRAP, len(games)))
        resampled = stack[picks].sum(axis=1)
        kappa_ci, accuracy_ci = _interval(kappa(resampled), level), _interval(accuracy(resampled), level)
    else:
        kappa_ci = accuracy_ci = (float("nan"), float("nan"))
    n, right = int(matrix.to_numpy().sum()), int(np.trace(matrix.to_numpy()))
    if n:  # few games, or a bootstrap that sees no spread: at least the Wilson interval of the games' counts
        floor = as_games(right, n, len(games))
        accuracy_ci = small_sample(*accuracy_ci, len(games), lambda: wilson(*floor, level))
    if not kappa_ci[1] > kappa_ci[0]:
        kappa_ci = (float("nan"), float("nan"))  # e.g. a judge that always gives one answer: no interval, not [0, 0]
    return Agreement(n=int(matrix.to_numpy().sum()), games=len(games), kappa=float(kappa(matrix.to_numpy())),
                     kappa_ci=kappa_ci, accuracy=float(accuracy(matrix.to_numpy())), accuracy_ci=accuracy_ci,
                     confusion=matrix, per_class=per_class(matrix))
