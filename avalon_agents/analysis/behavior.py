"""Summaries of the LLM-judged behavior tables (see `analysis.judges`), as in the paper's Figures 4-6.

Pure pandas: each function takes one table of `Judgments` and returns one row per group, with the share of
each label (or the mean rate) and `n`, the number of judged rows behind it. Rows the judge could not answer
(`valid` False) are left out.

- `camouflage_shares` (Fig. 4): self-disclosure / camouflage / withholding shares of first-round speeches.
- `teamwork_matrix` (Fig. 5, Appendix D): trust / distrust / ambivalent shares per speaker role and target
  role, long form for role-by-role heatmaps.
- `sharing_rates` (Fig. 6a): the share of their night information Merlin and Percival give away.
- `vacillation` (Fig. 6b, c): teamwork shares per quest, Loyal Servants towards good and evil players,
  Percival towards Merlin and Morgana.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pandas as pd

from avalon_agents.analysis.judges import ATTITUDES, CAMOUFLAGE_LABELS
from avalon_agents.core.types import Role

By = str | Sequence[str]


def _keys(by: By, *more: str) -> list[str]:
    keys = [by] if isinstance(by, str) else list(by)
    return keys + [k for k in more if k not in keys]


def _valid(frame: pd.DataFrame, column: str, labels: Sequence[str]) -> pd.DataFrame:
    return frame[frame["valid"].astype(bool) & frame[column].isin(labels)]


def _shares(frame: pd.DataFrame, keys: list[str], column: str, labels: Sequence[str]) -> pd.DataFrame:
    """Per group of `keys`: the share of each label in `column`, and n."""
    if frame.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c in keys else float) for c in [*keys, *labels]}
                            | {"n": pd.Series(dtype=int)})
    counts = (frame.groupby(keys, dropna=False)[column].value_counts().unstack(fill_value=0)
              .reindex(columns=list(labels), fill_value=0))
    n = counts.sum(axis=1)
    out = counts.div(n, axis=0)
    out["n"] = n
    out.columns.name = None
    return out.reset_index()


def camouflage_shares(camouflage: pd.DataFrame, by: By = ("agent", "role")) -> pd.DataFrame:
    """Share of each camouflage label per group.

    Args:
        camouflage: `Judgments.camouflage`.
        by: the columns to group by.

    Returns:
        Columns: *by, self_disclosure, camouflage, withholding (shares summing to 1), n (speeches).
    """
    keys = _keys(by)
    return _shares(_valid(camouflage, "label", CAMOUFLAGE_LABELS), keys, "label", CAMOUFLAGE_LABELS)


def teamwork_matrix(teamwork: pd.DataFrame, by: By = "agent") -> pd.DataFrame:
    """Teamwork (trust), confrontation (distrust) and ambivalence shares per speaker role and target role.

    Args:
        teamwork: `Judgments.teamwork`.
        by: the columns to group by besides the two roles.

    Returns:
        Long form, columns: *by, role, target_role, trust, distrust, ambivalent (shares summing to 1), n
        (speaker-target judgments).
    """
    keys = _keys(by, "role", "target_role")
    return _shares(_valid(teamwork, "label", ATTITUDES), keys, "label", ATTITUDES)


def sharing_rates(sharing: pd.DataFrame, by: By = ("agent", "role"),
                  unit: Literal["speech", "game"] = "speech") -> pd.DataFrame:
    """Mean share of known information given away.

    Args:
        sharing: `Judgments.sharing`.
        by: the columns to group by.
        unit: "speech" averages the share rate of each first-round speech; "game" first joins the seats each
            player shared over all their first-round speeches of a game, then averages per player and game.

    Returns:
        Columns: *by, share_rate (mean), n (speeches, or player-games).
    """
    keys = _keys(by)
    frame = sharing[sharing["valid"].astype(bool) & sharing["known"].map(lambda k: len(k) > 0)]
    if unit == "game" and not frame.empty:
        per_game = frame.groupby([*_keys(keys, "game", "seat")], dropna=False).agg(
            known=("known", lambda ks: set().union(*map(set, ks))),
            shared=("shared", lambda ss: set().union(*map(set, ss))))
        frame = per_game.reset_index()
        frame["share_rate"] = [len(s & k) / len(k) for s, k in zip(frame["shared"], frame["known"])]
    elif unit not in ("speech", "game"):
        raise ValueError(f"unit: 'speech' or 'game', got {unit!r}")
    if frame.empty:
        return pd.DataFrame({**{k: pd.Series(dtype=object) for k in keys},
                             "share_rate": pd.Series(dtype=float), "n": pd.Series(dtype=int)})
    out = frame.groupby(keys, dropna=False)["share_rate"].agg(share_rate="mean", n="size")
    return out.reset_index()


def _target_group(role: str, target_role: str, target_side: str) -> str | None:
    if role == Role.LOYAL_SERVANT.value:
        return target_side
    if role == Role.PERCIVAL.value and target_role in (Role.MERLIN.value, Role.MORGANA.value):
        return target_role
    return None


def vacillation(teamwork: pd.DataFrame, by: By = "agent") -> pd.DataFrame:
    """How teamwork changes over the quests (paper Fig. 6b, c).

    Loyal Servants' attitudes are grouped by the target's side ("good", "evil"); Percival's by the target
    being "Merlin" or "Morgana" (other targets are left out). Other speaker roles are left out.

    Args:
        teamwork: `Judgments.teamwork`.
        by: the columns to group by besides the speaker role, the quest and the target group.

    Returns:
        Columns: *by, role, quest, target_group, trust, distrust, ambivalent (shares summing to 1), n.
    """
    frame = _valid(teamwork, "label", ATTITUDES)
    groups = [_target_group(r, tr, ts) for r, tr, ts in zip(frame["role"], frame["target_role"],
                                                              frame["target_side"])]
    frame = frame.assign(target_group=groups)
    frame = frame[frame["target_group"].notna()]
    return _shares(frame, _keys(by, "role", "quest", "target_group"), "label", ATTITUDES)
