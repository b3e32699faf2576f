"""Summaries of the LLM-judged behavior tables (see `analysis.judges.speeches`), as in the paper's Figures 4-6.

Pure pandas: each function takes one table of `Judgments` and returns one row per group, with the share of
each label (or the mean rate), its 95% interval (`<label>_low`, `<label>_high`; `ci_low`, `ci_high` for a
single rate), `n` (the judged rows behind it), `games` and `few_games`. The interval resamples whole games
(`stats.game_interval`: the speeches of one game are not independent trials, they share players and talk),
seeded; from fewer than 5 games (`few_games` True), or where the bootstrap sees no spread, it is widened to
cover the Wilson interval of the pooled counts, the rule of every resampled interval (`stats.small_sample`).
Groups are per variant by default (`variant` first in `by`): a run directory holding several variants is never
pooled. Rows the judge could not answer (`valid` False) are left out.

- `self_recommendation` (Fig. 3b, c): the share of discussion speeches in which the speaker recommends
  themself for the team (`metric` "rate"), and of those, the share whose speaker was on the team that went
  on that quest (`metric` "success"). The leader-based figure (leaders' proposals that include themselves)
  is `metrics.leader_self_inclusion`, not this.
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

from avalon_agents.analysis.judges.labels import ATTITUDES, CAMOUFLAGE_LABELS
from avalon_agents.analysis.stats import FEW, few, game_interval, rate
from avalon_agents.core.types import Role

By = str | Sequence[str]
GROUP = ("variant", "agent", "role")
"""The default grouping: per variant, agent and role (the paper's figures are per role)."""


def _keys(by: By, *more: str) -> list[str]:
    keys = [by] if isinstance(by, str) else list(by)
    return keys + [k for k in more if k not in keys]


def _valid(frame: pd.DataFrame, column: str, labels: Sequence[str]) -> pd.DataFrame:
    return frame[frame["valid"].astype(bool) & frame[column].isin(labels)]


def _share_columns(labels: Sequence[str]) -> list[str]:
    return [c for label in labels for c in (label, f"{label}_low", f"{label}_high")]


COUNT_COLUMNS = ["n", "games", FEW]
"""What every judged summary row ends with: the judged rows, the games they come from, fewer than 5 games."""


def _shares(frame: pd.DataFrame, keys: list[str], column: str, labels: Sequence[str]) -> pd.DataFrame:
    """Per group of `keys`: the share of each label in `column` with its interval resampling games, n, games
    and few_games."""
    if frame.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in keys}
                            | {c: pd.Series(dtype=float) for c in _share_columns(labels)}
                            | {"n": pd.Series(dtype=int), "games": pd.Series(dtype=int), FEW: pd.Series(dtype=bool)})
    out = None
    for label in labels:
        found = rate(frame.assign(_hit=frame[column] == label), keys, "_hit").rename(
            columns={"value": label, "ci_low": f"{label}_low", "ci_high": f"{label}_high"})
        out = found if out is None else out.merge(found[[*keys, label, f"{label}_low", f"{label}_high"]], on=keys,
                                                  how="left")
    out["n"] = out["n"].astype(int)
    return out[[*keys, *_share_columns(labels), *COUNT_COLUMNS]]


def camouflage_shares(camouflage: pd.DataFrame, by: By = GROUP) -> pd.DataFrame:
    """Share of each camouflage label per group.

    Args:
        camouflage: `Judgments.camouflage`.
        by: the columns to group by.

    Returns:
        Columns: *by, then for each of self_disclosure, camouflage, withholding its share (the shares sum to
        1) and interval (`<label>_low`, `<label>_high`), n (speeches), games, few_games.
    """
    keys = _keys(by)
    return _shares(_valid(camouflage, "label", CAMOUFLAGE_LABELS), keys, "label", CAMOUFLAGE_LABELS)


def teamwork_matrix(teamwork: pd.DataFrame, by: By = ("variant", "agent")) -> pd.DataFrame:
    """Teamwork (trust), confrontation (distrust) and ambivalence shares per speaker role and target role.

    Args:
        teamwork: `Judgments.teamwork`.
        by: the columns to group by besides the two roles.

    Returns:
        Long form, columns: *by, role, target_role, then for each of trust, distrust, ambivalent its share
        (the shares sum to 1) and interval, n (speaker-target judgments), games, few_games.
    """
    keys = _keys(by, "role", "target_role")
    return _shares(_valid(teamwork, "label", ATTITUDES), keys, "label", ATTITUDES)


def sharing_rates(sharing: pd.DataFrame, by: By = GROUP,
                  unit: Literal["speech", "game"] = "speech") -> pd.DataFrame:
    """Mean share of known information given away.

    Args:
        sharing: `Judgments.sharing`.
        by: the columns to group by.
        unit: "speech" averages the share rate of each first-round speech; "game" first joins the seats each
            player shared over all their first-round speeches of a game, then averages per player and game.

    Returns:
        Columns: *by, share_rate (mean), ci_low, ci_high (resampling games; the small-sample floor is the
        Wilson interval of the pooled counts, seats shared / seats known), n (speeches, or player-games), games,
        few_games.
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
    columns = [*keys, "share_rate", "ci_low", "ci_high", *COUNT_COLUMNS]
    if frame.empty:
        return pd.DataFrame({**{k: pd.Series(dtype=object) for k in keys},
                             **{c: pd.Series(dtype=float) for c in ("share_rate", "ci_low", "ci_high")},
                             "n": pd.Series(dtype=int), "games": pd.Series(dtype=int), FEW: pd.Series(dtype=bool)})
    frame = frame.assign(_shared=[len(set(s) & set(k)) for s, k in zip(frame["shared"], frame["known"])],
                         _known=frame["known"].map(len), _rows=1, share_rate=frame["share_rate"].astype(float))
    rows = []
    for key, part in frame.groupby(keys, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        per_game = part.groupby("game")[["share_rate", "_rows"]].sum()
        low, high = game_interval(per_game["share_rate"], per_game["_rows"],
                                  counts=(part["_shared"].sum(), part["_known"].sum()))
        rows.append({**dict(zip(keys, key)), "share_rate": part["share_rate"].mean(), "ci_low": low, "ci_high": high,
                     "n": len(part), "games": len(per_game), FEW: few(len(per_game))})
    return pd.DataFrame(rows, columns=columns)


def _target_group(role: str, target_role: str, target_side: str) -> str | None:
    if role == Role.LOYAL_SERVANT.value:
        return target_side
    if role == Role.PERCIVAL.value and target_role in (Role.MERLIN.value, Role.MORGANA.value):
        return target_role
    return None


def vacillation(teamwork: pd.DataFrame, by: By = ("variant", "agent")) -> pd.DataFrame:
    """How teamwork changes over the quests (paper Fig. 6b, c).

    Loyal Servants' attitudes are grouped by the target's side ("good", "evil"); Percival's by the target
    being "Merlin" or "Morgana" (other targets are left out). Other speaker roles are left out.

    Args:
        teamwork: `Judgments.teamwork`.
        by: the columns to group by besides the speaker role, the quest and the target group.

    Returns:
        Columns: *by, role, quest, target_group, then for each of trust, distrust, ambivalent its share (the
        shares sum to 1) and interval, n, games, few_games.
    """
    frame = _valid(teamwork, "label", ATTITUDES)
    groups = [_target_group(r, tr, ts) for r, tr, ts in zip(frame["role"], frame["target_role"],
                                                              frame["target_side"])]
    frame = frame.assign(target_group=groups)
    frame = frame[frame["target_group"].notna()]
    return _shares(frame, _keys(by, "role", "quest", "target_group"), "label", ATTITUDES)


RATE_COLUMNS = ["metric", "value", "ci_low", "ci_high", *COUNT_COLUMNS]


def _rate_rows(frame: pd.DataFrame, keys: list[str], column: str, metric: str) -> list[dict]:
    return rate(frame.assign(_hit=frame[column].astype(bool)), keys, "_hit").assign(metric=metric).to_dict("records")


def went_on_quest(judged: pd.DataFrame, quests: pd.DataFrame,
                  when: Literal["quest", "attempt"] = "quest") -> pd.Series:
    """Whether each speech's speaker was on the team that went (`RunData.quests`, from the game events).

    Args:
        judged: rows with game, quest, attempt and seat (e.g. `Judgments.self_recommendation`).
        quests: `RunData.quests` (one row per quest that went out, with the attempt it went at).
        when: "quest": on the team that went on the speech's quest, whichever proposal went; "attempt": only
            if the team of the speech's own proposal round went.

    Returns:
        A boolean Series aligned with `judged` (False where no team went: a quest the game never reached).
    """
    if when not in ("quest", "attempt"):
        raise ValueError(f"when: 'quest' or 'attempt', got {when!r}")
    went = {(g, int(q)): (int(a), set(t)) for g, q, a, t in quests[["game", "quest", "attempt", "team"]]
            .itertuples(index=False)}
    out = []
    for g, q, a, seat in judged[["game", "quest", "attempt", "seat"]].itertuples(index=False):
        attempt, team = went.get((g, int(q)), (None, set()))
        out.append(int(seat) in team and (when == "quest" or attempt == int(a)))
    return pd.Series(out, index=judged.index, dtype=bool)


def self_recommendation(judged: pd.DataFrame, quests: pd.DataFrame, by: By = GROUP,
                        when: Literal["quest", "attempt"] = "quest") -> pd.DataFrame:
    """Self-recommendation in discussion speeches and its success, as the paper measured it (6.2, Fig. 3b, c).

    Args:
        judged: `Judgments.self_recommendation` (one judged row per speech).
        quests: `RunData.quests`: the teams that went.
        by: the columns to group by (the paper: per role; per side with ("variant", "agent", "side")).
        when: which team counts as the one that went (see `went_on_quest`).

    Returns:
        Long form, columns: *by, metric ("rate": speeches recommending the speaker / judged speeches;
        "success": of those, speeches whose speaker was on the team that went), value, ci_low, ci_high
        (resampling games), n (speeches behind the value), games, few_games.
    """
    keys = _keys(by)
    frame = judged[judged["valid"].astype(bool) & judged["recommends_self"].notna()]
    frame = frame.assign(recommends_self=frame["recommends_self"].astype(bool))
    if frame.empty:
        return pd.DataFrame(columns=[*keys, *RATE_COLUMNS])
    mine = frame[frame["recommends_self"]]
    mine = mine.assign(on_team=went_on_quest(mine, quests, when))
    rows = _rate_rows(frame, keys, "recommends_self", "rate")
    rows += _rate_rows(mine, keys, "on_team", "success") if not mine.empty else []
    return pd.DataFrame(rows, columns=[*keys, *RATE_COLUMNS])
