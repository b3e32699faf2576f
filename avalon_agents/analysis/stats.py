"""Rates with 95% confidence intervals, and the difference between two rates.

- A rate of one yes/no per game (a win rate, the assassination rate) is a binomial proportion over independent
  games: its interval is Wilson's score interval (scipy), never zero width.
- Any other rate's interval is the bootstrap resampling whole games (`game_interval`: rows of one game are not
  independent: the same players, the same table talk; a judged speech is such a row), seeded so a table is
  reproducible. From LARGE games whose values are whole numbers, a resample weighs each game by a Poisson(1) count
  (`poisson_ratios`: one stream of weights per seed for every interval, summed in integers), not by picking games.
- The difference of a rate between the two games of paired games (the order-bias study) resamples whole pairs
  (`paired_interval`, scipy's paired bootstrap); its p-value swaps the two games of each pair
  (`paired_p`, scipy's permutation test: exact up to 13 pairs).
- The small-sample rule, in one place (`small_sample`): from fewer than `SMALL` games (or pairs) the bootstrap
  has too few distinct resamples to see the spread (one game: none; all alike: a zero-width interval such as
  [100%, 100%]), so there, and wherever the bootstrap sees no spread, the interval is widened to cover the
  score interval of the pooled counts taken as one trial a game (`as_games`; Wilson's for a rate, Newcombe's for
  a difference), which is never zero width, and the row is flagged (`few(games)`, the `few_games` column): read
  it as "too few games", not a measurement of the spread between games.
- The floor of a rate over games (`game_interval`): from SMALL to fewer than `FLOOR` games a bootstrap is still
  often narrower than the truth (5 games gave 33% [27%, 43%] where Wilson's interval of the pooled counts, the
  rows taken as independent trials, is [16%, 56%]); the rows of a game are not more independent than that, so
  there the interval is never narrower than Wilson's of the pooled counts. Each interval says which method it
  used (`ci_method`, METHODS).
- The difference between two proportions (an ablation's question: does variant B win more or less often than
  A?) has Newcombe's hybrid score interval, built from the two Wilson intervals, and Fisher's exact test
  (scipy). statsmodels, which has both, is not a dependency: these two are a few lines over scipy."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import sys
import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

BOOTSTRAP = 2000
LARGE = 1000
"""From this many games (units) an interval's resamples weigh each game by a Poisson(1) count (`poisson_ratios`),
where the games' values are whole numbers; below it, and for other values, the games are picked with replacement."""
LEVEL = 0.95
SMALL = 5
"""Fewer games (or pairs) than this: an interval also covers the score interval of the pooled counts as one trial a
game, flagged (`few_games`)."""
FLOOR = 20
"""Fewer games than this: a rate's bootstrap interval also covers Wilson's interval of the pooled counts."""
METHOD = "ci_method"
"""The column saying which method gave a row's interval (one of METHODS)."""
WILSON, BOOTSTRAPPED, POOLED, PER_GAME = ("wilson", "bootstrap", "pooled wilson (floor)",
                                          "pooled wilson, one trial a game (floor)")
METHODS = {
    WILSON: "one yes/no per game: Wilson's score interval over games",
    BOOTSTRAPPED: f"resampling whole games ({BOOTSTRAP:,} seeded resamples; from {LARGE:,} games each game "
                  "weighed by a Poisson(1) count), which covered its floor",
    POOLED: f"from {SMALL} to {FLOOR - 1} games: widened to Wilson's interval of the pooled counts",
    PER_GAME: f"fewer than {SMALL} games, or no spread between games: widened to Wilson's interval of the pooled "
              "counts taken as one trial a game",
}
"""What each `ci_method` means (report.md's Intervals section lists them)."""
FEW = "few_games"
"""The column flagging a row whose interval rests on fewer than SMALL games (`few`)."""
PERMUTATIONS = 9999
"""Resamples of a paired permutation test (exact below: 2**pairs of them up to 13 pairs)."""


def bootstrap_ci(values: np.ndarray, seed: int = 0, level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of independent values."""
    values = np.asarray(values, dtype=float)
    return ratio_ci(values, np.ones_like(values), seed, level)


def ratio_ci(num: np.ndarray, den: np.ndarray, seed: int = 0, level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap CI of sum(num) / sum(den), resampling the units (one per game) together."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if len(num) == 0 or den.sum() == 0:
        return float("nan"), float("nan")
    key = hashlib.sha1(num.tobytes() + b"/" + den.tobytes() + repr((seed, level, BOOTSTRAP)).encode()).digest()
    if key not in _RATIO_CIS:
        ratios = resampled_ratios(num, den, np.random.default_rng(seed))
        ratios = ratios[~np.isnan(ratios)]
        tail = (1 - level) / 2 * 100
        while len(_RATIO_CIS) >= KEPT:
            del _RATIO_CIS[next(iter(_RATIO_CIS))]
        _RATIO_CIS[key] = float(np.percentile(ratios, tail)), float(np.percentile(ratios, 100 - tail))
    return _RATIO_CIS[key]


KEPT = 4096
"""How many `ratio_ci` intervals are kept by their data (the oldest go first): the same games' interval asked again
(by another table, or by `avalon view` after a game finished in another variant) is not resampled again."""
_RATIO_CIS: dict[bytes, tuple[float, float]] = {}
BLOCK = 2**20
"""Picks drawn at a time by `resampled_ratios` (8 MB)."""


def resampled_ratios(num: np.ndarray, den: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """sum(num) / sum(den) of BOOTSTRAP resamples of the units (NaN where a resample's den is 0). From LARGE units
    whose values are whole numbers, each unit's weight in a resample is a Poisson(1) count (`poisson_ratios`);
    otherwise the units are picked with replacement: the picks are drawn a block of rows at a time (BLOCK picks),
    the same draws as all at once, so 10,000 games do not make a 2,000 x 10,000 array of picks and two of values
    (480 MB) per interval. The picks of a generator's state and a number of units are kept (`_picks`): every
    interval of a run's games draws the same ones (each starts from `seed`), so they are drawn once, and the
    generator is left where drawing them would leave it."""
    if len(num) >= LARGE:
        found = poisson_ratios(num, den, rng)
        if found is not None:
            return found
    ratios = np.empty(BOOTSTRAP)
    rows = max(1, BLOCK // max(1, len(num)))
    for start, picks in zip(range(0, BOOTSTRAP, rows), _picks(rng, len(num), rows)):
        with np.errstate(invalid="ignore", divide="ignore"):
            ratios[start:start + len(picks)] = num[picks].sum(axis=1) / den[picks].sum(axis=1)
    return ratios


PICKS_KEPT = 2**26
"""Picks `_picks` keeps at most (as int32: 256 MB; the oldest go first): a comparison of two 10,000-game runs draws
two sets of 20 million (its second side's from where the first left the generator)."""
_PICKS: dict[tuple, tuple[list[np.ndarray], dict]] = {}
_PICKS_LOCK = threading.Lock()  # `avalon view` counts two runs in threads at once


def _picks(rng: np.random.Generator, units: int, rows: int) -> list[np.ndarray]:
    """The blocks of picks `resampled_ratios` draws from `rng` (`rows` resamples of `units` a block): drawn, or as
    drawn before from the same state (the generator then set to the state after them)."""
    state = rng.bit_generator.state
    key = (repr(state), units, rows)
    with _PICKS_LOCK:
        kept = _PICKS.pop(key, None)
    if kept is None:
        blocks = [rng.integers(0, units, size=(min(rows, BOOTSTRAP - start), units))
                  for start in range(0, BOOTSTRAP, rows)]
        kept = ([b.astype(np.int32) if units < 2**31 else b for b in blocks], rng.bit_generator.state)
        if BOOTSTRAP * units > PICKS_KEPT:
            return kept[0]
    else:
        rng.bit_generator.state = kept[1]
    with _PICKS_LOCK:
        _PICKS[key] = kept
        while sum(BOOTSTRAP * k[1] for k in _PICKS) > PICKS_KEPT:
            del _PICKS[next(iter(_PICKS))]
    return kept[0]


POISSON_COLUMNS = 4096
"""Games drawn a block at a time by `_poisson_weights` (each block from its own seed: a longer run extends the
weights without changing those drawn)."""
POISSON_KEPT = 2**30
"""Bytes of weights `_poisson_weights` keeps at most (the oldest stream goes first; the newest is always kept): a
comparison's two streams take 100 MB for 10,000 games, 820 MB for 100,000 (each used by every interval in turn)."""
_POISSON: dict[int, np.ndarray] = {}
_POISSON_LOCK = threading.Lock()


def _poisson_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Poisson(1) distribution on 32-bit uniform integers, in exact integer arithmetic (Python's fractions, so
    the same on every machine): `thresholds` (the count of a draw u is the number of thresholds <= u: floor(2**32
    P(X <= k)) for k = 0, 1, ... while below 2**32; the mass past the last, under 2**-32 a draw, is its count), and
    a table over u's top 16 bits (`by_top`: the count of every u with those bits, `straddles`: where a threshold
    falls inside, those few read against the thresholds)."""
    import math
    from fractions import Fraction

    e_inv = sum(Fraction((-1) ** i, math.factorial(i)) for i in range(40))  # within 10**-47 of 1/e
    found: list[int] = []
    cumulative = Fraction(0)
    for k in range(64):
        cumulative += e_inv / math.factorial(k)
        threshold = math.floor(cumulative * 2**32)
        if threshold >= 2**32 or (found and threshold == found[-1]):
            break
        found.append(threshold)
    thresholds = np.array(found, dtype=np.uint32)
    starts = np.arange(2**16, dtype=np.uint32) << np.uint32(16)
    by_top = np.searchsorted(thresholds, starts, side="right").astype(np.uint8)
    straddles = np.searchsorted(thresholds, starts | np.uint32(0xFFFF), side="right") != by_top
    return thresholds, by_top, straddles


_TABLE: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
_LITTLE = sys.byteorder == "little"  # a uint32's top 16 bits are its second uint16


def poisson_counts(uniform: np.ndarray) -> np.ndarray:
    """Poisson(1) counts (uint8) of 32-bit uniform integers (`_poisson_table`): integer comparisons only."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _poisson_table()
    thresholds, by_top, straddles = _TABLE
    top = (uniform.view(np.uint16)[..., 1::2] if _LITTLE and uniform.flags.c_contiguous
           else (uniform >> np.uint32(16)).astype(np.uint16))
    counts = by_top[top]
    near = straddles[top]
    if near.any():
        counts[near] = np.searchsorted(thresholds, uniform[near], side="right")
    return counts


def _poisson_weights(stream: int, units: int) -> np.ndarray:
    """The cumulative Poisson(1) weights of `stream`'s resamples: row r, column j is the sum of the counts of units
    0..j-1 in resample r, less j (int16 while it fits, else int32); at least `units` + 1 columns. Drawn POISSON_COLUMNS
    units at a time, block b from SeedSequence(stream, spawn_key=(b,)) as 32-bit integers, and kept (POISSON_KEPT)."""
    with _POISSON_LOCK:
        kept = _POISSON.pop(stream, None)
        if kept is None or kept.shape[1] <= units:
            kept = _extend(stream, kept, -(-units // POISSON_COLUMNS))
        _POISSON[stream] = kept  # the newest
        while len(_POISSON) > 1 and sum(w.nbytes for w in _POISSON.values()) > POISSON_KEPT:
            del _POISSON[next(iter(_POISSON))]
        return kept


def _extend(stream: int, kept: np.ndarray | None, blocks: int) -> np.ndarray:
    """`stream`'s cumulative weights (`_poisson_weights`) of `blocks` blocks, those of `kept` as they are."""
    have = 0 if kept is None else (kept.shape[1] - 1) // POISSON_COLUMNS
    found = np.zeros((BOOTSTRAP, blocks * POISSON_COLUMNS + 1), dtype=np.int16 if kept is None else kept.dtype)
    if kept is not None:
        found[:, :kept.shape[1]] = kept
    less = np.arange(1, POISSON_COLUMNS + 1, dtype=np.int32)
    for block in range(have, blocks):
        seeded = np.random.default_rng(np.random.SeedSequence(stream, spawn_key=(block,)))
        drawn = seeded.integers(0, 2**32, size=(BOOTSTRAP, POISSON_COLUMNS), dtype=np.uint32)
        weights = np.cumsum(poisson_counts(drawn), axis=1, dtype=np.int32)
        first = block * POISSON_COLUMNS
        weights -= less
        weights += found[:, first:first + 1]
        if found.dtype == np.int16 and not (-2**15 <= weights.min() and weights.max() < 2**15):
            found = found.astype(np.int32)
        found[:, first + 1:first + POISSON_COLUMNS + 1] = weights
    return found


def _whole(values: np.ndarray) -> np.ndarray | None:
    """`values` as int64 when every one is a whole number of magnitude under 2**30; else None."""
    if not len(values) or not np.isfinite(values).all() or np.abs(values).max() >= 2**30:
        return None
    whole = values.astype(np.int64)
    return whole if (whole == values).all() else None


def poisson_ratios(num: np.ndarray, den: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """sum(w num) / sum(w den) of BOOTSTRAP resamples, w each unit's Poisson(1) weight in the resample (the Poisson
    bootstrap, for LARGE units: a resample of whole games, each game in it as many times as a Poisson(1) draw, which
    for thousands of games resamples as picking n of n with replacement does), in integer arithmetic: the units are
    put in order of their (num, den), so each distinct pair's total weight is the difference of two columns of the
    stream's cumulative weights (`_poisson_weights`), and a resample's sums are whole numbers, exact on every CPU.
    The stream is one 64-bit draw of `rng` (so the same seed gives the same stream: every interval of a run's games
    draws from one, a comparison's second side from the next). None where num or den are not whole numbers (the
    caller picks units instead; `rng` untouched)."""
    whole_num, whole_den = _whole(np.asarray(num)), _whole(np.asarray(den))
    if whole_num is None or whole_den is None:
        return None
    low, span = whole_den.min(), int(whole_den.max() - whole_den.min()) + 1
    keys, sizes = np.unique(whole_num * span + (whole_den - low), return_counts=True)  # each distinct (num, den)
    pairs = np.stack([keys // span, keys % span + low], axis=1)
    edges = np.concatenate([[0], np.cumsum(sizes)])
    stream = int(rng.integers(0, 2**63, dtype=np.int64))
    weights = _poisson_weights(stream, len(num))
    at = weights[:, edges].astype(np.int64) + edges  # the cumulative counts at each pair's edges
    counts = np.diff(at, axis=1)  # resample x distinct pair: how many times its games are in the resample
    sums = counts @ pairs  # integer matrix product (no BLAS): exact
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[:, 0] / sums[:, 1]


def wilson(successes: float, trials: float, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval of a proportion (never zero width for trials > 0). The closed form, which for
    whole counts is scipy's `binomtest(...).proportion_ci(method="wilson")` (the tests hold it to that), and
    which also takes the fractional counts of `as_games`."""
    from scipy.stats import norm

    if trials <= 0:
        return float("nan"), float("nan")
    z = float(norm.ppf(1 - (1 - level) / 2))
    p, z2 = successes / trials, z * z / trials
    center = (p + z2 / 2) / (1 + z2)
    half = z / (1 + z2) * np.sqrt(p * (1 - p) / trials + z2 / (4 * trials))
    return float(max(0.0, center - half)), float(min(1.0, center + half))


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


def few(units: int) -> bool:
    """Whether an interval resampling `units` games (or pairs) is flagged: fewer than SMALL of them."""
    return units < SMALL


def as_games(hits: float, trials: float, games: int) -> tuple[float, float]:
    """Counts as if each game were one trial at the pooled rate: (hits, trials) scaled down to `games` trials
    where a game holds more than one (rows of one game are not independent); the floor of the small-sample
    rule, so that a flagged interval is as wide as the games, not the rows, allow (`wilson` takes the
    fractions)."""
    if trials <= games:
        return float(hits), float(trials)
    return hits / trials * games, float(games)


def small_sample(low: float, high: float, units: int,
                 fallback: Callable[[], tuple[float, float]] | None) -> tuple[float, float]:
    """The small-sample rule for a bootstrap interval (low, high) over `units` games or pairs: from fewer than
    SMALL units, or where the bootstrap saw no spread, widened to cover `fallback()` (the score interval of the
    pooled counts as if each game were one trial, `as_games`: never zero width); with no fallback (values that
    are not counts) an interval without spread is NaN rather than a falsely exact one."""
    if fallback is not None and (few(units) or not high > low):
        f_low, f_high = fallback()
        return float(np.fmin(low, f_low)), float(np.fmax(high, f_high))
    if not high > low:
        return float("nan"), float("nan")
    return low, high


def game_ci(num: Sequence[float], den: Sequence[float], counts: tuple[float, float] | None = None,
            seed: int = 0, level: float = LEVEL) -> tuple[float, float, str]:
    """The interval of sum(num) / sum(den) over games (one value of each per game) and its method (METHODS): one
    yes/no per game (every den 1, every num 0 or 1) is a binomial proportion over independent games, Wilson's
    interval; otherwise the bootstrap resampling games (`ratio_ci`), never narrower than its floor: Wilson's
    interval of `counts` (hits, trials; default the pooled num and den where those are counts) below FLOOR games,
    of those counts taken as one trial a game below SMALL games or where the games show no spread."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if len(num) and (den == 1).all() and np.isin(num, (0.0, 1.0)).all():
        return (*wilson(int(num.sum()), len(num), level), WILSON)
    low, high = ratio_ci(num, den, seed, level)
    if counts is None and _counts(num.sum(), den.sum()):
        counts = (num.sum(), den.sum())
    if counts is None or not counts[1]:
        return (*small_sample(low, high, len(num), None), BOOTSTRAPPED)
    if few(len(num)) or not high > low:
        (f_low, f_high), method = wilson(*as_games(*counts, len(num)), level), PER_GAME
    elif len(num) < FLOOR:
        (f_low, f_high), method = wilson(*counts, level), POOLED
    else:
        return low, high, BOOTSTRAPPED
    if f_low >= low and f_high <= high:  # the bootstrap already covers its floor
        return low, high, BOOTSTRAPPED
    return float(np.fmin(low, f_low)), float(np.fmax(high, f_high)), method


def game_interval(num: Sequence[float], den: Sequence[float], counts: tuple[float, float] | None = None,
                  seed: int = 0, level: float = LEVEL) -> tuple[float, float]:
    """`game_ci` without its method."""
    low, high, _ = game_ci(num, den, counts, seed, level)
    return low, high


def _pooled_difference(fk, fn, tk, tn, axis: int = -1):
    """sum(tk) / sum(tn) - sum(fk) / sum(fn) along `axis`."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(tk, axis=axis) / np.sum(tn, axis=axis) - np.sum(fk, axis=axis) / np.sum(fn, axis=axis)


def paired_interval(fixed_k: Sequence[int], fixed_n: Sequence[int], treated_k: Sequence[int],
                    treated_n: Sequence[int], seed: int = 0, level: float = LEVEL) -> tuple[float, float, bool]:
    """The interval of the pooled difference treated - fixed (sum(treated_k) / sum(treated_n) - the same of
    fixed) over paired games, one (k, n) per game of each pair: the percentile bootstrap resampling whole pairs
    (scipy's `bootstrap`, paired, seeded), under the small-sample rule with Newcombe's interval of the pooled
    counts as if each game were one trial; cut to [-1, 1]. Returns (low, high, widened: the rule applied)."""
    from scipy.stats import bootstrap

    arrays = [np.asarray(a, dtype=float) for a in (fixed_k, fixed_n, treated_k, treated_n)]
    pairs = len(arrays[0])
    if not pairs or not arrays[1].sum() or not arrays[3].sum():
        return float("nan"), float("nan"), False
    low = high = float(_pooled_difference(*arrays))
    if pairs >= 2:
        found = bootstrap(arrays, _pooled_difference, paired=True, vectorized=True, n_resamples=BOOTSTRAP,
                          method="percentile", confidence_level=level, rng=np.random.default_rng(seed))
        low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    if low != low or high != high:  # a resample without a trial on one side: no spread measured
        low = high = float(_pooled_difference(*arrays))
    (fk, fn), (tk, tn) = as_games(arrays[0].sum(), arrays[1].sum(), pairs), as_games(arrays[2].sum(),
                                                                                     arrays[3].sum(), pairs)
    widened = few(pairs) or not high > low
    low, high = small_sample(low, high, pairs, lambda: newcombe(tk, tn, fk, fn, level))
    return max(-1.0, low), min(1.0, high), widened


def paired_p(fixed_k: Sequence[int], fixed_n: Sequence[int], treated_k: Sequence[int], treated_n: Sequence[int],
             seed: int = 0) -> float:
    """Two-sided p-value of the pooled difference treated - fixed over paired games: the permutation test that
    swaps the two games of each pair (scipy's `permutation_test`, paired; exact up to 13 pairs, else PERMUTATIONS
    seeded resamples). One pair, or no difference within any pair: 1.0."""
    from scipy.stats import permutation_test

    k = np.concatenate([np.asarray(fixed_k, dtype=float), np.asarray(treated_k, dtype=float)])
    n = np.concatenate([np.asarray(fixed_n, dtype=float), np.asarray(treated_n, dtype=float)])
    pairs = len(fixed_k)
    if not pairs or not n[:pairs].sum() or not n[pairs:].sum():
        return float("nan")
    if pairs == 1:  # its two orders give the difference and its opposite: both as far from 0
        return 1.0

    def statistic(fixed: np.ndarray, treated: np.ndarray, axis: int = -1) -> np.ndarray:
        f, t = fixed.astype(int), treated.astype(int)
        return np.nan_to_num(_pooled_difference(k[f], n[f], k[t], n[t], axis=axis))

    found = permutation_test((np.arange(pairs), np.arange(pairs, 2 * pairs)), statistic, vectorized=True,
                             permutation_type="samples", n_resamples=PERMUTATIONS, rng=np.random.default_rng(seed))
    return float(min(1.0, found.pvalue))


_SUMS_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("sums_only", default=False)


@contextlib.contextmanager
def sums_only() -> Iterator[None]:
    """Within it (this thread or task), `rate` gives each group's value, `n` and `games` without an interval
    (ci_low and ci_high NaN, ci_method None, `few_games` as ever), summed for all groups at once: for a caller that
    uses the sums alone over many groups (view.compare's per-game values: a rate per game of 10,000, each interval a
    bootstrap it throws away)."""
    token = _SUMS_ONLY.set(True)
    try:
        yield
    finally:
        _SUMS_ONLY.reset(token)


def rate(frame: pd.DataFrame, by: Sequence[str], num: str, den: str | None = None) -> pd.DataFrame:
    """Per group of `by`: value = sum(num) / sum(den) (den None: the row count), its 95% CI (one yes/no per
    game: Wilson's; otherwise resampling games under its floor, `game_ci`) and which method gave it (`ci_method`),
    `n` (the denominator: rows, cards, rounds...), `games` and `few_games` (fewer than SMALL games).

    Args:
        frame: rows with a `game` column and the `by`, `num` (and `den`) columns.
        by: the grouping columns (may be empty: one row for everything).
        num: a numeric or boolean column.
        den: a numeric column, or None to count rows.
    """
    by = list(by)
    columns = [*by, "value", "ci_low", "ci_high", METHOD, "n", "games", FEW]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    work = frame.assign(_num=frame[num].astype(float), _den=frame[den].astype(float) if den else 1.0)
    per_game = work.groupby([*by, "game"], dropna=False)[["_num", "_den"]].sum().reset_index()
    if _SUMS_ONLY.get():
        return _sums(per_game, by, columns)
    rows = []
    for key, g in per_game.groupby(by, dropna=False, sort=True) if by else [((), per_game)]:
        key = key if isinstance(key, tuple) else (key,)
        total = g["_den"].sum()
        low, high, method = game_ci(g["_num"].to_numpy(), g["_den"].to_numpy())
        games = g["game"].nunique()
        rows.append({**dict(zip(by, key)), "value": g["_num"].sum() / total if total else float("nan"),
                     "ci_low": low, "ci_high": high, METHOD: method if low == low else None,
                     "n": int(total) if float(total).is_integer() else total, "games": games, FEW: few(games)})
    return pd.DataFrame(rows, columns=columns)


def _sums(per_game: pd.DataFrame, by: list[str], columns: list[str]) -> pd.DataFrame:
    """`rate`'s rows without intervals (`sums_only`): each group's sums over its games, in `rate`'s order."""
    if by:
        groups = per_game.groupby(by, dropna=False, sort=True)
        table = groups[["_num", "_den"]].sum().join(groups["game"].nunique().rename("games")).reset_index()
    else:
        table = pd.DataFrame({"_num": [per_game["_num"].sum()], "_den": [per_game["_den"].sum()],
                              "games": [per_game["game"].nunique()]})
    total = table["_den"]
    table["value"] = (table["_num"] / total.where(total != 0)).astype(float)
    table["ci_low"] = table["ci_high"] = float("nan")
    table[METHOD] = None
    table["n"] = total.astype(int) if (total % 1 == 0).all() else total
    table[FEW] = table["games"] < SMALL
    return table[columns]


def difference_ci(num_a: Sequence[float], den_a: Sequence[float], num_b: Sequence[float], den_b: Sequence[float],
                  seed: int = 0, level: float = LEVEL) -> tuple[float, float, str | None]:
    """The interval of the difference a - b of two rates over independent games (sum(num) / sum(den) of each
    side, one value of each per game: two runs, or two variants of one run) and its method: the percentile
    bootstrap resampling the games of each side independently (`ratio_ci`'s: BOOTSTRAP seeded resamples of
    each), under `game_ci`'s floors with Newcombe's interval of the pooled counts in Wilson's place: below
    FLOOR games on a side never narrower than Newcombe's interval of the pooled counts ("pooled newcombe
    (floor)"); below SMALL games, or where the resamples show no spread, than that of the counts taken as one
    trial a game ("pooled newcombe, one trial a game (floor)"). Values that are not counts have no floor (no
    spread: NaN). A side without games or trials: NaN, method None."""
    sides = [(np.asarray(n, dtype=float), np.asarray(d, dtype=float)) for n, d in ((num_a, den_a), (num_b, den_b))]
    if any(len(num) == 0 or den.sum() == 0 for num, den in sides):
        return float("nan"), float("nan"), None
    rng = np.random.default_rng(seed)
    resampled = [resampled_ratios(num, den, rng) for num, den in sides]
    diffs = resampled[0] - resampled[1]
    diffs = diffs[~np.isnan(diffs)]
    (ka, na), (kb, nb) = [(num.sum(), den.sum()) for num, den in sides]
    tail = (1 - level) / 2 * 100
    low, high = ((float(np.percentile(diffs, tail)), float(np.percentile(diffs, 100 - tail))) if len(diffs)
                 else (ka / na - kb / nb,) * 2)
    games = min(len(sides[0][0]), len(sides[1][0]))
    if not (_counts(ka, na) and _counts(kb, nb)):
        return (*small_sample(low, high, games, None), BOOTSTRAPPED)
    if few(games) or not high > low:
        (f_low, f_high) = newcombe(*as_games(ka, na, len(sides[0][0])), *as_games(kb, nb, len(sides[1][0])), level)
        method = "pooled newcombe, one trial a game (floor)"
    elif games < FLOOR:
        (f_low, f_high), method = newcombe(ka, na, kb, nb, level), "pooled newcombe (floor)"
    else:
        return low, high, BOOTSTRAPPED
    if f_low >= low and f_high <= high:  # the bootstrap already covers its floor
        return low, high, BOOTSTRAPPED
    return float(np.fmin(low, f_low)), float(np.fmax(high, f_high)), method
