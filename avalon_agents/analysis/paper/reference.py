"""The paper's Figures 2-6 (Sections 5.3 and 6) beside ours: what the paper's text states about each figure
(`avalon_agents/data/paper_figures.yaml`: the figures are plots without printed numbers) and, where it gives a
number, the same measure computed from a run, per variant, with its 95% CI (`stats.rate`)."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field

from avalon_agents.analysis.load import RunData
from avalon_agents.analysis.paper import metrics
from avalon_agents.analysis.stats import rate

if TYPE_CHECKING:
    from avalon_agents.analysis.judges.run import Judgments

FILE = Path(__file__).resolve().parents[2] / "data" / "paper_figures.yaml"
METRICS = {"quest_engagement": metrics.quest_engagement, "failure_votes": metrics.failure_votes,
           "leader_approval": metrics.leader_approval}
COLUMNS = ["figure", "label", "kind", "paper", "paper_shown", "variant", "value", "ci_low", "ci_high", "n", "games",
           "few_games"]


class Figure(BaseModel):
    """One statement of the paper's text about a figure (see the data file's header)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    figure: str
    report: str
    label: str
    text: str
    metric: Literal["quest_engagement", "failure_votes", "leader_approval", "camouflage"] | None = None
    kind: str | None = None
    side: Literal["good", "evil"] | None = None
    roles: tuple[str, ...] = ()
    value: float | None = Field(None, ge=0, le=1)
    bound: Literal["above"] | None = None

    @property
    def shown(self) -> str:
        """The paper's value as the text gives it: '40.3%', '> 80.0%', or '' (no number)."""
        return "" if self.value is None else ("> " if self.bound == "above" else "") + f"{self.value:.1%}"


@cache
def paper_figures() -> tuple[Figure, ...]:
    """Every entry of the data file, validated."""
    return tuple(Figure.model_validate(f) for f in yaml.safe_load(FILE.read_text())["figures"])


def _who(frame: pd.DataFrame, fig: Figure) -> pd.DataFrame:
    """The rows of the figure's agent kind, side and roles."""
    keep = pd.Series(True, index=frame.index)
    if fig.kind:
        keep &= frame["kind"] == fig.kind
    if fig.side:
        keep &= frame["side"] == fig.side
    if fig.roles:
        keep &= frame["role"].isin(fig.roles)
    return frame[keep]


def ours(fig: Figure, data: RunData, judgments: Judgments | None = None) -> pd.DataFrame:
    """The figure's measure from a run, per variant (`metrics.rate`'s columns); empty without the data."""
    if fig.metric == "camouflage":
        if judgments is None or judgments.camouflage.empty:
            return pd.DataFrame(columns=["variant", "value", "ci_low", "ci_high", "n", "games", "few_games"])
        speeches = judgments.camouflage[judgments.camouflage["valid"].astype(bool)]
        speeches = _who(speeches, fig)
        return rate(speeches.assign(hit=speeches["label"] == "camouflage"), ["variant"], "hit")
    mine = replace(data, seats=_who(data.seats, fig), cards=_who(data.cards, fig),
                   proposals=_who(data.proposals, fig))
    return METRICS[fig.metric](mine, by=("variant",))


def figure_table(data: RunData, judgments: Judgments | None = None,
                 variants: list[str] | None = None) -> pd.DataFrame:
    """Every numbered statement of the paper beside ours: one row per statement and variant (`variants`:
    only those), or one row with no variant where the run has nothing to compare."""
    rows = []
    for fig in paper_figures():
        if fig.value is None or fig.metric is None:
            continue
        paper = {"figure": fig.figure, "label": fig.label, "kind": fig.kind, "paper": fig.value,
                 "paper_shown": fig.shown}
        found = ours(fig, data, judgments)
        if variants is not None:
            found = found[found["variant"].isin(variants)]
        rows += [{**paper, **r} for r in found.to_dict("records")] or [paper]
    return pd.DataFrame(rows, columns=COLUMNS)


def statements(report: str) -> list[Figure]:
    """The paper's statements about the figure of one report section (analysis.paper.report.FIGURES)."""
    return [f for f in paper_figures() if f.report == report]
