"""Human players as the reference: per-role figures measured over 1,089 human games with the paper's six roles
(the public avalongame.online logs, repository motlin/avalonlogs, 2019 to March 2026; in those games a Minion
carries the assassin token, here shown as the Assassin). Only the aggregate figures ship
(`avalon_agents/data/human_paper6_roles.csv`): the logs have no licence. Beside them, the same measures
computed from a run, per variant, agent and role, with 95% CIs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

import pandas as pd

from avalon_agents.analysis.load import RunData
from avalon_agents.analysis.paper import metrics
from avalon_agents.analysis.stats import rate

FILE = Path(__file__).resolve().parents[2] / "data" / "human_paper6_roles.csv"
SOURCE = ("1,089 human games with the paper's six roles, avalongame.online logs (github.com/motlin/avalonlogs, "
          "2019 to March 2026)")
PAPER_SIX = Counter({"Merlin": 1, "Percival": 1, "Loyal Servant": 2, "Morgana": 1, "Assassin": 1})
COLUMNS = ["measure", "variant", "agent", "role", "value", "ci_low", "ci_high", "n", "games", "humans", "source"]


def approve_rate(data: RunData, by: Sequence[str] = metrics.GROUP) -> pd.DataFrame:
    """Approvals over all the seat's team votes."""
    votes = data.votes.assign(approve=data.votes["vote"] == "approve")
    return rate(votes, by, "approve")


def _self_inclusion(data: RunData, by: Sequence[str]) -> pd.DataFrame:
    table = metrics.leader_self_inclusion(data, by)
    return table[table["metric"] == "rate"].drop(columns="metric")


MEASURES: dict[str, tuple[str, Callable[[RunData, Sequence[str]], pd.DataFrame]]] = {
    # the file's column: (what it measures, the same measure from a run)
    "quest_engagement": ("quest engagement: on the team of a played quest / quests played", metrics.quest_engagement),
    "approve_rate": ("approve rate over all the seat's team votes", approve_rate),
    "leader_includes_self": ("leader includes self: proposals including the leader / the leader's proposals",
                             _self_inclusion),
    "leader_approval": ("leader approval: approve votes on the leader's proposals / votes on them (six voters "
                        "each: the mean share)", metrics.leader_approval),
    "failure_vote_rate": ("failure vote rate: fail cards / quest cards played (evil)", metrics.failure_votes),
}


@cache
def human_figures() -> pd.DataFrame:
    """The shipped per-role human figures (one row per role, one column per measure)."""
    return pd.read_csv(FILE)


def paper_six(data: RunData) -> bool:
    """Whether every game of the run has the paper's six roles (the human figures' role set)."""
    if data.seats.empty:
        return False
    dealt = data.seats.groupby(["game", "role"]).size().unstack(fill_value=0)  # game x role: seats (vectorized)
    return set(dealt.columns) == set(PAPER_SIX) and all((dealt[role] == n).all() for role, n in PAPER_SIX.items())


def human_table(data: RunData, by: Sequence[str] = metrics.GROUP) -> pd.DataFrame:
    """Each measure of the file per group of `by` (which must include `role`), ours with its CI beside the
    human figure of that role."""
    humans = human_figures().set_index("role")
    rows = []
    for measure, (_, compute) in MEASURES.items():
        ours = compute(data, by)
        for row in ours.to_dict("records"):
            role = row.get("role")
            figure = humans[measure].get(role) if role in humans.index else None
            if figure is None or figure != figure:
                continue
            rows.append({"measure": measure, **{k: row.get(k) for k in ("variant", "agent", "role", "value",
                         "ci_low", "ci_high", "n", "games")}, "humans": float(figure), "source": SOURCE})
    return pd.DataFrame(rows, columns=COLUMNS)
