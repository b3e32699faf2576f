"""Belief-probe scores: how well seats know who is Merlin and who is evil, per role and quest.

The probes (trace records of type "probe", see `avalon_agents.host.probe`) are scored against the truth:

- `merlin_accuracy`: the share of valid probes that named the real Merlin;
- `evil_accuracy`: the share of valid probes whose k most likely evil players are exactly the evil players
  (other than the seat itself), k being their number; a tie across that boundary counts as wrong;
- `brier`: the mean over valid probes of the mean squared error (p_evil - is_evil)^2 over the other seats
  (0 is perfect, 0.25 is a flat 0.5 everywhere);
- `valid_rate`: the share of probes whose answer could be read.

This module needs only pandas and numpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from avalon_agents.records.trace import Probe, Record

SCORE_COLUMNS = ["probes", "valid_rate", "merlin_accuracy", "evil_accuracy", "brier"]


def probe_table(records: Iterable[Record], *, game: str, roles: Mapping[int, str], merlin_seat: int,
                evil_seats: Iterable[int]) -> pd.DataFrame:
    """The probe records of one game's trace as the rows `score_probes` takes, with the truth attached.

    Args:
        records: the game's trace records (records of other types are skipped).
        game: the game's id.
        roles: each seat's true role name (seat numbers as int or str).
        merlin_seat: Merlin's seat.
        evil_seats: the evil seats.
    """
    roles = {int(seat): role for seat, role in roles.items()}
    evil = sorted(int(s) for s in evil_seats)
    rows = [{"game": game, "seat": r.seat, "role": roles[r.seat], "quest": r.quest, "valid": r.valid,
             "merlin_guess": r.merlin_guess, "p_evil": dict(r.p_evil), "merlin_seat": int(merlin_seat),
             "evil_seats": evil}
            for r in records if isinstance(r, Probe)]
    return pd.DataFrame(rows, columns=["game", "seat", "role", "quest", "valid", "merlin_guess", "p_evil",
                                       "merlin_seat", "evil_seats"])


def probe_scores(row: Mapping[str, Any]) -> tuple[float, float, float]:
    """(merlin_correct, evil_correct, brier) of one valid probe row, each a float (1.0/0.0 for the first two)."""
    seat = int(row["seat"])
    truth = {int(s) for s in row["evil_seats"]} - {seat}
    p = {int(k): float(v) for k, v in row["p_evil"].items() if int(k) != seat}
    merlin = float(row["merlin_guess"] is not None and int(row["merlin_guess"]) == int(row["merlin_seat"]))
    evil_p = [p[s] for s in p if s in truth]
    good_p = [p[s] for s in p if s not in truth]
    evil_correct = float(truth <= set(p) and (not evil_p or not good_p or min(evil_p) > max(good_p)))
    brier = float(np.mean([(q - (s in truth)) ** 2 for s, q in p.items()])) if p else np.nan
    return merlin, evil_correct, brier


def score_probes(probes: pd.DataFrame, by: Sequence[str] = ("role", "quest")) -> pd.DataFrame:
    """Probe scores per group (default: per role and quest).

    Args:
        probes: one row per probe, with columns `game`, `seat`, `role` (the seat's true role), `quest`,
            `valid`, `merlin_guess`, `p_evil` (dict: str(seat) -> probability), `merlin_seat` and
            `evil_seats` (the truth), plus any column named in `by`.
        by: the grouping columns.

    Returns:
        One row per group: the `by` columns, `probes`, `valid_rate`, `merlin_accuracy`, `evil_accuracy`
        and `brier` (the last three over valid probes only; NaN where a group has none).
    """
    by = list(by)
    if probes.empty:
        return pd.DataFrame(columns=by + SCORE_COLUMNS)
    frame = probes.copy()
    frame["valid"] = frame["valid"].astype(bool)
    scored = [probe_scores(row) if row["valid"] else (np.nan, np.nan, np.nan) for _, row in frame.iterrows()]
    frame[["merlin_correct", "evil_correct", "brier"]] = pd.DataFrame(scored, index=frame.index, dtype=float)
    grouped = frame.groupby(by, sort=True)
    out = pd.DataFrame({
        "probes": grouped.size(),
        "valid_rate": grouped["valid"].mean(),
        "merlin_accuracy": grouped["merlin_correct"].mean(),
        "evil_accuracy": grouped["evil_correct"].mean(),
        "brier": grouped["brier"].mean(),
    })
    return out.reset_index()
