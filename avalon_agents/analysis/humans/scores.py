"""Scores of the belief probes on human games: against the truth, and against what the players themselves
stated they believed (the Avalon-NLU `belief` labels) at the same point of the game.

Each probe row (see `games.answers_to_rows`) is one seat at the end of one quest. Against the truth the
scores are the in-game probe's (`probes.probe_scores`), but each question counts only where it is open, i.e.
where the seat's night information does not give the answer away:

- Merlin (`merlin_accuracy`): every seat but Merlin;
- the evil players (`evil_accuracy`: the k most likely evil are exactly the evil players; `brier` of `p_evil`):
  good seats other than Merlin (Merlin and the evil players know them).

Against the players' stated beliefs, a seat's stated belief about another player is the last label it gave
that player up to the end of the quest (a later label replaces an earlier one; labels about oneself are left
out). Its stated Merlin is the player whose last label is "merlin" (the latest stated if several). A label's
side: merlin, percival, servant and good are good; morgana, assassin, minion and evil are evil; undecided has
none.

- `agree_merlin`: the model names the seat's stated Merlin (probes with a stated Merlin);
- `agree_side`: the model's `p_evil` is on the stated side of 0.5 (one trial per stated player; 0.5 agrees
  with neither);
- `human_merlin_accuracy`, `human_side_accuracy`: how often those stated beliefs are true: the players' own
  score at the same points, whatever the model answered.

Rates carry 95% intervals that resample whole games (`stats.rate`: the trials of one game share its table
talk, so they are not independent), widened to cover the Wilson interval of the pooled trials when fewer than
five games hold them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from avalon_agents.analysis.paper.probes import probe_scores
from avalon_agents.analysis.stats import rate
from avalon_agents.records.trace import Annotation

GOOD_LABELS = frozenset({"merlin", "percival", "servant", "good"})
EVIL_LABELS = frozenset({"morgana", "assassin", "minion", "evil"})
RATES = {
    # name: (successes column, trials column)
    "merlin_accuracy": ("merlin_hit", "merlin_asked"),
    "evil_accuracy": ("evil_hit", "evil_asked"),
    "agree_merlin": ("merlin_agrees", "merlin_compared"),
    "human_merlin_accuracy": ("human_merlin_hit", "merlin_stated"),
    "agree_side": ("side_agrees", "side_compared"),
    "human_side_accuracy": ("human_side_hit", "side_stated"),
}


def stated(beliefs: Iterable[Annotation], seat: int, upto: int) -> tuple[int | None, dict[int, str]]:
    """(stated Merlin, {player: "good" | "evil"}) from the `belief` labels `seat` gave up to event `upto`."""
    last: dict[int, tuple[int, int, str]] = {}
    for order, b in enumerate(beliefs):
        if b.kind == "belief" and b.seat == seat and b.seq <= upto and b.about_seat not in (None, seat):
            last[int(b.about_seat)] = (b.seq, order, b.label.strip().lower())
    merlins = [(seq, order, about) for about, (seq, order, label) in last.items() if label == "merlin"]
    merlin = max(merlins)[2] if merlins else None
    sides = {about: "good" if label in GOOD_LABELS else "evil"
             for about, (_, _, label) in last.items() if label in GOOD_LABELS | EVIL_LABELS}
    return merlin, dict(sorted(sides.items()))


def _side_of(p: float) -> str | None:
    return "evil" if p > 0.5 else "good" if p < 0.5 else None


def score_rows(rows: Sequence[Mapping[str, Any]], beliefs: Mapping[str, Sequence[Annotation]]) -> pd.DataFrame:
    """The probe rows with their scores: one row per probe.

    Args:
        rows: probe rows (game, seat, role, side, quest, end_seq, valid, merlin_guess, p_evil, merlin_seat,
            evil_seats, ...).
        beliefs: each game's `belief` annotations, in trace order.
    """
    out = []
    for row in rows:
        seat, valid = int(row["seat"]), bool(row["valid"])
        merlin_hit, evil_hit, brier = probe_scores(row) if valid else (np.nan, np.nan, np.nan)
        merlin_open = row["role"] != "Merlin"
        evil_open = row["side"] == "good" and row["role"] != "Merlin"
        stated_merlin, sides = stated(beliefs.get(row["game"], ()), seat, int(row["end_seq"]))
        evil = {int(s) for s in row["evil_seats"]}
        model_sides = {int(k): _side_of(v) for k, v in row["p_evil"].items()} if valid else {}
        out.append({
            **row,
            "merlin_asked": int(valid and merlin_open), "merlin_hit": int(valid and merlin_open and merlin_hit == 1),
            "evil_asked": int(valid and evil_open), "evil_hit": int(valid and evil_open and evil_hit == 1),
            "brier": brier if evil_open else np.nan,
            "stated_merlin": stated_merlin, "stated_sides": sides,
            "merlin_stated": int(stated_merlin is not None),
            "human_merlin_hit": int(stated_merlin is not None and stated_merlin == row["merlin_seat"]),
            "merlin_compared": int(valid and stated_merlin is not None),
            "merlin_agrees": int(valid and stated_merlin is not None and row["merlin_guess"] == stated_merlin),
            "side_stated": len(sides),
            "human_side_hit": sum((s in evil) == (side == "evil") for s, side in sides.items()),
            "side_compared": len(sides) if valid else 0,
            "side_agrees": sum(model_sides.get(s) == side for s, side in sides.items()) if valid else 0,
        })
    return pd.DataFrame(out)


def _rates(group: pd.DataFrame) -> dict[str, Any]:
    row: dict[str, Any] = {"probes": len(group), "valid_rate": group["valid"].mean() if len(group) else np.nan}
    for name, (hits, trials) in RATES.items():
        k, n = int(group[hits].sum()), int(group[trials].sum())
        low = high = np.nan
        if n:  # resampling whole games: the trials of one game share its talk (stats.rate)
            found = rate(group[group[trials] > 0], [], hits, trials).iloc[0]
            low, high = found["ci_low"], found["ci_high"]
        row.update({f"{name}_n": n, name: k / n if n else np.nan, f"{name}_low": low, f"{name}_high": high})
        if name == "evil_accuracy":
            row["brier"] = group["brier"].mean() if group["brier"].notna().any() else np.nan
    return row


def by_quest(scored: pd.DataFrame) -> pd.DataFrame:
    """Per quest (and "all"): probes, valid rate, each rate of `RATES` with its trials and game-resampled
    interval, and the mean Brier score."""
    rows = [{"quest": str(q), **_rates(g)} for q, g in scored.groupby("quest", sort=True)]
    rows.append({"quest": "all", **_rates(scored)})
    return pd.DataFrame(rows)


def by_role(scored: pd.DataFrame) -> pd.DataFrame:
    """Per role, every valid probe counted (open or not): does the model use the seat's night information?"""
    rows = []
    for role, g in scored.groupby("role", sort=True):
        valid = g[g["valid"].astype(bool)]
        scores = [probe_scores(r) for _, r in valid.iterrows()]
        merlin = sum(s[0] for s in scores)
        evil = sum(s[1] for s in scores)
        rows.append({"role": role, "probes": len(g), "valid": len(valid),
                     "merlin_accuracy": merlin / len(valid) if len(valid) else np.nan,
                     "evil_accuracy": evil / len(valid) if len(valid) else np.nan,
                     "brier": float(np.mean([s[2] for s in scores])) if scores else np.nan})
    return pd.DataFrame(rows)
