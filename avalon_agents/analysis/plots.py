"""Figures (matplotlib): the paper's Figures 2-6 in spirit, plus win rate per variant, drawn to be printed.

Each function takes the metric table it draws (so a notebook can filter it first) and returns a Figure; `save`
writes a PNG. The conventions every figure follows:

- one panel per variant (a table without a `variant` column gets one panel), never one hue per variant;
- one colour per side, `SIDE_COLOURS`, wherever a bar, line or tick label belongs to the good or the evil side;
- the 95% CI as error bars, and y-limits that hold every interval whole (rates: 0-1 with a margin);
- a label on every axis, the legend outside the panels;
- `caption=`: what produced the numbers (`analysis.paper.report.provenance`, `experiments.results.provenance`),
  printed under the panels; `judge=` "scripted" stamps the figure as not a real judgment. `caption(fig, ...)`
  does the same to a figure already drawn.

Figures are built without pyplot, so a notebook shows a returned figure once (not again at the end of the
cell) and nothing accumulates in pyplot's figure list.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from avalon_agents.core import Role

ROLE_ORDER = [r.value for r in Role]  # Merlin, Percival, Loyal Servant, Morgana, Assassin, Mordred, ...
ORDER = ["good", "evil", *ROLE_ORDER]  # how sides and roles are laid out along an axis

# The one palette: a side keeps its colour in every figure (Okabe-Ito blue and vermillion, colour-blind safe).
SIDE_COLOURS = {"good": "#0072B2", "evil": "#D55E00"}
NO_SIDE = "#7F7F7F"
# Judged labels are not sides: their own colours, none of them a side's.
LABEL_COLOURS = ["#009E73", "#E69F00", "#CC79A7", "#999999", "#F0E442", "#56B4E9"]
SCRIPTED_JUDGE = "judge: scripted (canned labels, not a real judgment)"
PANELS_PER_ROW = 4
RATE_LIMITS = (0.0, 1.0)
MARGIN = 0.05  # of the y-range, above and below, so no cap or marker sits on the frame


class PaperFigure(Figure):
    """A Figure a notebook shows as PNG when a cell returns it, once: it needs no pyplot (IPython reads
    `_repr_png_`; with matplotlib's inline backend active, its Figure printer draws it the same way), and it is
    not in pyplot's figure list, which the inline backend shows again at the end of the cell."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=110)
        return buffer.getvalue()


HUMANS = "human players"
"""The legend's name for reference markers (analysis.humans.players: 1,089 human games)."""
HUMAN_MARKER = "D"


def side_of(name: object) -> str | None:
    """The side a role, a side or a target group (Merlin, Morgana, good, evil) belongs to."""
    text = str(name)
    if text in SIDE_COLOURS:
        return text
    try:
        return Role(text).side.value
    except ValueError:
        return None


def side_colour(name: object) -> str:
    return SIDE_COLOURS.get(side_of(name) or "", NO_SIDE)


def _order(values) -> list:
    present = list(dict.fromkeys(values))
    return [r for r in ORDER if r in present] + sorted((v for v in present if v not in ORDER), key=str)


def _facets(frames: Sequence[pd.DataFrame], facet: str | None) -> list:
    if facet is None or not any(facet in f and not f.empty for f in frames):
        return [None]
    return list(dict.fromkeys(v for f in frames if facet in f for v in f[facet]))


def _part(frame: pd.DataFrame, facet: str | None, value) -> pd.DataFrame:
    return frame if value is None or facet not in frame else frame[frame[facet] == value]


def _figure(rows: int, panels: int, panel_size: tuple[float, float]) -> tuple[Figure, list[list[Axes]]]:
    """A figure of `rows` blocks of `panels` panels each (wrapped at PANELS_PER_ROW); unused cells removed."""
    cols = min(panels, PANELS_PER_ROW)
    lines = math.ceil(panels / cols)
    fig = PaperFigure(figsize=(panel_size[0] * cols + 1.8, panel_size[1] * rows * lines + 1.0), layout="constrained")
    grid = fig.subplots(rows * lines, cols, squeeze=False)
    blocks = []
    for r in range(rows):
        cells = [grid[r * lines + i // cols][i % cols] for i in range(cols * lines)]
        for ax in cells[panels:]:
            ax.remove()
        blocks.append(cells[:panels])
    return fig, blocks


def _limits(ax: Axes, lows: Sequence[float], highs: Sequence[float], bounds: tuple[float, float] | None) -> None:
    """y-limits holding every value and interval end, with a margin (rates: at least 0-1)."""
    values = [float(v) for v in [*lows, *highs] if v is not None and v == v]
    low, high = bounds if bounds else ((min(values), max(values)) if values else (0.0, 1.0))
    low, high = min([low, *values]), max([high, *values])
    if high <= low:
        high = low + 1.0
    span = high - low
    ax.set_ylim(low - MARGIN * span, high + MARGIN * span)


def _colour_ticks(ax: Axes, labels: Sequence[str]) -> None:
    for tick, label in zip(ax.get_xticklabels(), labels):
        tick.set_color(side_colour(str(label).split("\n")[0]))


def _no_data(ax: Axes) -> None:
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)


def _keys(part: pd.DataFrame, x: str) -> pd.Series:
    """The bar labels of a panel: `x`, with the columns that tell apart rows sharing an `x` (e.g. the agent)."""
    extra = [c for c in ("agent", "side", "team", "metric", "target_group")
             if c in part and c != x and part[c].nunique() > 1 and part.duplicated([x]).any()]
    return part[[x, *extra]].astype(str).agg("\n".join, axis=1)


def _bar_panel(ax: Axes, part: pd.DataFrame, x: str, value: str, xlabel: str, ylabel: str,
               bounds: tuple[float, float] | None) -> set[str]:
    """Bars of `value` by `x`, each in its side's colour, the CI as error bars. Returns the sides drawn."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if part.empty:
        _no_data(ax)
        _limits(ax, [], [], bounds)
        return set()
    part = part.assign(_key=_keys(part, x).to_numpy())
    order = {v: i for i, v in enumerate(_order(part[x]))}
    part = part.sort_values(by=[x, "_key"], key=lambda c: c.map(order) if c.name == x else c)
    keys = list(dict.fromkeys(part["_key"]))
    part = part.drop_duplicates("_key").set_index("_key").reindex(keys)
    heights = part[value].astype(float).to_numpy()
    sides = [side_of(s) for s in (part["side"] if "side" in part else part[x])]
    colours = [SIDE_COLOURS.get(s or "", NO_SIDE) for s in sides]
    lows, highs = heights, heights
    err = None
    if "ci_low" in part and "ci_high" in part:
        lows, highs = part["ci_low"].astype(float).to_numpy(), part["ci_high"].astype(float).to_numpy()
        err = np.nan_to_num(np.vstack([(heights - lows).clip(min=0), (highs - heights).clip(min=0)]))
    ax.bar(range(len(keys)), np.nan_to_num(heights), 0.7, color=colours, yerr=err, capsize=4,
           error_kw={"ecolor": "#222222", "elinewidth": 1})
    drawn = set()
    if "humans" in part and part["humans"].notna().any():  # a reference per bar (analysis.humans.players)
        people = part["humans"].astype(float).to_numpy()
        known = ~np.isnan(people)
        ax.scatter(np.arange(len(keys))[known], people[known], marker=HUMAN_MARKER, color="black", s=22, zorder=3)
        lows, highs = [*lows, *people[known]], [*highs, *people[known]]
        drawn.add(HUMANS)
    slanted = len(keys) > 2
    ax.set_xticks(range(len(keys)), keys, rotation=30 if slanted else 0, ha="right" if slanted else "center",
                  fontsize=8)
    _colour_ticks(ax, [str(part[x].iloc[i]) if "side" not in part else str(part["side"].iloc[i])
                       for i in range(len(keys))])
    _limits(ax, [*lows, *heights], [*highs, *heights], bounds)
    return {s for s in sides if s} | drawn


def _side_legend(fig: Figure, sides: set[str]) -> None:
    handles = [Patch(color=SIDE_COLOURS[s], label=s) for s in SIDE_COLOURS if s in sides]
    if HUMANS in sides:
        handles.append(Line2D([], [], marker=HUMAN_MARKER, color="black", linestyle="", label=HUMANS))
    if handles:
        fig.legend(handles=handles, title="side", loc="outside right center", fontsize=8)


def caption_text(caption: str | None = None, judge: str | None = None) -> str:
    """The text printed under a figure: what produced it, and a scripted judge named as not a real judgment."""
    lines = []
    if judge == "scripted" and "not a real judg" not in (caption or ""):
        lines.append(SCRIPTED_JUDGE)
    elif judge and f"judge {judge}" not in (caption or "") and f"judge: {judge}" not in (caption or ""):
        lines.append(f"judge: {judge}")
    if caption:
        lines.append(caption)
    return " | ".join(lines)


def caption(fig: Figure, text: str | None = None, judge: str | None = None) -> Figure:
    """Print what produced the figure under its panels (`caption_text`), wrapped to the figure's width; red
    when the judge is the scripted stand-in. Returns the figure (any figure, e.g. `report.figures`')."""
    text = caption_text(text, judge)
    if text:
        width = max(40, int(fig.get_figwidth() * 15))  # about the characters of 7-point text across the figure
        scripted = judge == "scripted" or "scripted: canned labels" in text or SCRIPTED_JUDGE in text
        fig.supxlabel(textwrap.fill(text, width), x=0.01, ha="left", fontsize=7,
                      color="#B00020" if scripted else "#444444")
    return fig


def _finish(fig: Figure, title: str, text: str | None, judge: str | None) -> Figure:
    fig.suptitle(title)
    return caption(fig, text, judge)


def facet_bars(blocks: Sequence[tuple[pd.DataFrame, str]], x: str, value: str = "value", *, title: str,
               xlabel: str, facet: str | None = "variant", bounds: tuple[float, float] | None = RATE_LIMITS,
               caption: str | None = None, judge: str | None = None) -> Figure:
    """One row of panels per (table, y label) in `blocks`, one panel per value of `facet` (the variant): bars of
    `value` by `x` in the side's colour, with their CIs."""
    facets = _facets([f for f, _ in blocks], facet)
    fig, grid = _figure(len(blocks), len(facets), (2.6, 2.8))
    sides: set[str] = set()
    for (frame, ylabel), axes in zip(blocks, grid):
        for ax, value_of_facet in zip(axes, facets):
            part = _part(frame, facet, value_of_facet)
            sides |= _bar_panel(ax, part, x, value, xlabel, ylabel, bounds)
            # the measure is the y label; the title names the panel's variant only, so titles never overlap
            ax.set_title("" if value_of_facet is None else f"{facet}: {value_of_facet}", fontsize=9)
    _side_legend(fig, sides)
    return _finish(fig, title, caption, judge)


def bars_figure(frame: pd.DataFrame, x: str, hue: str | None = None, value: str = "value", title: str = "", *,
                ylabel: str = "rate", caption: str | None = None, judge: str | None = None) -> Figure:
    """Bars of `value` by `x` per variant (`hue` is only used to tell rows sharing an `x` apart)."""
    return facet_bars([(frame, ylabel)], x, value, title=title, xlabel=x.replace("_", " "), caption=caption,
                      judge=judge)


def win_rate_plot(wr: pd.DataFrame, *, caption: str | None = None) -> Figure:
    return facet_bars([(wr, "win rate")], "side", title="Winning rate per side and variant (95% CI)",
                      xlabel="side", caption=caption)


def qer_fvr_plot(qer: pd.DataFrame, fvr: pd.DataFrame, *, caption: str | None = None) -> Figure:
    return facet_bars([(qer, "quest engagement rate"), (fvr, "failure vote rate")], "role",
                      title="Quest engagement and failure vote rates by role (95% CI)", xlabel="role",
                      caption=caption)


def leader_approval_plot(lar: pd.DataFrame, *, caption: str | None = None) -> Figure:
    return facet_bars([(lar, "approval rate")], "role", title="Leader approval rate by the leader's role (95% CI)",
                      xlabel="leader's role", caption=caption)


def self_recommendation_plot(sr: pd.DataFrame, *, caption: str | None = None, judged: bool = False) -> Figure:
    """Rate and success per role: of leaders' own proposals (`metrics.leader_self_inclusion`), or, `judged`,
    of speakers recommending themselves in discussion (`behavior.self_recommendation`)."""
    what, who = (("Self-recommendation in discussion", "speaker") if judged
                 else ("Leaders' self-inclusion", "leader"))
    return facet_bars([(sr[sr["metric"] == "rate"], "rate"),
                       (sr[sr["metric"] == "success"], "success rate")], "role",
                      title=f"{what} and its success by the {who}'s role (95% CI)",
                      xlabel=f"{who}'s role", caption=caption)


def shares_plot(shares: pd.DataFrame, labels: list[str], title: str, *, facet: str | None = "variant",
                caption: str | None = None, judge: str | None = None) -> Figure:
    """Stacked shares of judged labels per role (camouflage), one panel per variant."""
    facets = _facets([shares], facet)
    fig, (axes,) = _figure(1, len(facets), (3.4, 3.0))
    for ax, value_of_facet in zip(axes, facets):
        part = _part(shares, facet, value_of_facet)
        ax.set_title("" if value_of_facet is None else f"{facet}: {value_of_facet}", fontsize=9)
        ax.set_xlabel("speaker's role")
        ax.set_ylabel("share of speeches")
        _limits(ax, [], [], RATE_LIMITS)
        if part.empty:
            _no_data(ax)
            continue
        part = part.assign(_key=_keys(part, "role").to_numpy())
        order = {v: i for i, v in enumerate(_order(part["role"]))}
        part = part.sort_values(by=["role", "_key"], key=lambda c: c.map(order) if c.name == "role" else c)
        keys = list(dict.fromkeys(part["_key"]))
        table = part.drop_duplicates("_key").set_index("_key").reindex(keys)
        bottom = np.zeros(len(keys))
        for label, colour in zip(labels, LABEL_COLOURS):
            heights = table[label].fillna(0).to_numpy(dtype=float) if label in table else np.zeros(len(keys))
            ax.bar(range(len(keys)), heights, 0.7, bottom=bottom, color=colour, label=label)
            bottom += heights
        ax.set_xticks(range(len(keys)), keys, rotation=30, ha="right", fontsize=8)
        _colour_ticks(ax, table["role"].astype(str).tolist())
    fig.legend(handles=[Patch(color=c, label=label) for label, c in zip(labels, LABEL_COLOURS)], title="label",
               loc="outside right center", fontsize=8)
    return _finish(fig, title, caption, judge)


def heatmaps(matrix: pd.DataFrame, labels: tuple[str, ...] = ("trust", "distrust"), *, caption: str | None = None,
             judge: str | None = None) -> Figure:
    """Role -> role heatmaps of judged attitudes (teamwork = trust, confrontation = distrust), one row per variant
    and agent. The colour maps (green, purple) are not the sides' colours; role names are."""
    group = [c for c in ("variant", "agent") if c in matrix]
    rows = list(dict.fromkeys(matrix[group].astype(str).agg(" · ".join, axis=1))) if group and not matrix.empty \
        else ["-"]
    fig = PaperFigure(figsize=(4.6 * len(labels) + 0.5, 3.8 * len(rows) + 1.0), layout="constrained")
    axes = fig.subplots(len(rows), len(labels), squeeze=False)
    keys = matrix[group].astype(str).agg(" · ".join, axis=1) if group and not matrix.empty else None
    for row, name in enumerate(rows):
        part = matrix[keys == name] if keys is not None else matrix
        for col, label in enumerate(labels):
            ax = axes[row][col]
            ax.set_title(f"{name}: {'teamwork' if label == 'trust' else 'confrontation'} ({label})", fontsize=9)
            ax.set_xlabel("towards (the other player's role)")
            ax.set_ylabel("speaker's role")
            if part.empty:
                _no_data(ax)
                continue
            grid = part.pivot_table(index="role", columns="target_role", values=label, aggfunc="mean")
            grid = grid.reindex(index=_order(grid.index), columns=_order(grid.columns))
            image = ax.imshow(grid.to_numpy(dtype=float), vmin=0, vmax=1,
                              cmap="Greens" if label == "trust" else "Purples")
            ax.set_xticks(range(len(grid.columns)), grid.columns, rotation=30, ha="right", fontsize=8)
            ax.set_yticks(range(len(grid.index)), grid.index, fontsize=8)
            _colour_ticks(ax, list(grid.columns))
            for tick, role in zip(ax.get_yticklabels(), grid.index):
                tick.set_color(side_colour(role))
            for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
                if v == v:
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if v > 0.6 else "black")
            fig.colorbar(image, ax=ax, shrink=0.8, label=f"share of mentions: {label}")
    return _finish(fig, "Teamwork and confrontation, role to role", caption, judge)


def curves(frame: pd.DataFrame, x: str, y: str, line: list[str], title: str, ylabel: str, *,
           facet: str | None = "variant", bounds: tuple[float, float] | None = RATE_LIMITS,
           caption: str | None = None, judge: str | None = None) -> Figure:
    """`y` over `x`, one line per combination of the `line` columns, one panel per variant (vacillation, probes
    over quests). A line's colour is the side of its target group (where it has one) or of its role; its
    marker and dash tell the rest apart."""
    facets = _facets([frame], facet)
    fig, (axes,) = _figure(1, len(facets), (3.6, 3.0))
    line = [c for c in line if c in frame and c != facet]
    colour_key = "target_group" if "target_group" in line else ("role" if "role" in line else
                                                                 ("side" if "side" in line else None))
    styles = {}
    handles = {}
    for ax, value_of_facet in zip(axes, facets):
        part = _part(frame, facet, value_of_facet)
        ax.set_title("" if value_of_facet is None else f"{facet}: {value_of_facet}", fontsize=9)
        ax.set_xlabel(x)
        ax.set_ylabel(ylabel)
        if part.empty:
            _no_data(ax)
            _limits(ax, [], [], bounds)
            continue
        for key, rows in part.groupby(line, sort=True):
            key = key if isinstance(key, tuple) else (key,)
            named = dict(zip(line, key))
            colour = side_colour(named[colour_key]) if colour_key else NO_SIDE
            rest = tuple(v for c, v in named.items() if c != colour_key)
            if rest not in styles:
                styles[rest] = (["o", "s", "^", "D", "v", "P"][len(styles) % 6],
                                ["-", "--", ":", "-."][(len(styles) // 6) % 4])
            marker, dash = styles[rest]
            label = " / ".join(map(str, key)) if colour_key != "target_group" else \
                " / ".join(str(v) for c, v in named.items() if c != colour_key) + f" → {named[colour_key]}"
            rows = rows.sort_values(x)
            ax.plot(rows[x], rows[y].astype(float), marker=marker, linestyle=dash, color=colour, label=label)
            handles.setdefault(label, Line2D([], [], marker=marker, linestyle=dash, color=colour, label=label))
        ax.set_xticks(sorted(part[x].unique()))
        _limits(ax, part[y].astype(float).tolist(), part[y].astype(float).tolist(), bounds)
    if handles:
        fig.legend(handles=list(handles.values()), loc="outside right center", fontsize=7)
    return _finish(fig, title, caption, judge)


def ratings_plot(ratings: pd.DataFrame, order: Sequence[str] | None = None, *, caption: str | None = None
                 ) -> Figure:
    """A tournament's ratings (analysis.ratings): one panel per scope (overall, good, evil), one row per
    agent, mu with its 95% interval; agents in `order` (the leaderboard's, best at the top)."""
    scopes = [s for s in ("overall", "good", "evil") if s in set(ratings["scope"])]
    order = list(order or sorted(ratings["agent"].unique()))
    fig = PaperFigure(figsize=(3.4 * len(scopes) + 1.6, 0.45 * len(order) + 1.6), layout="constrained")
    axes = fig.subplots(1, len(scopes), sharey=True, squeeze=False)[0]
    colours = {"overall": NO_SIDE, **SIDE_COLOURS}
    for ax, scope in zip(axes, scopes):
        part = ratings[ratings["scope"] == scope].set_index("agent").reindex(order)
        y = np.arange(len(order))[::-1]
        ax.errorbar(part["mu"], y, xerr=[part["mu"] - part["low"], part["high"] - part["mu"]], fmt="o",
                    color=colours[scope], capsize=3)
        ax.set_yticks(y, order)
        ax.set_title(f"{scope} rating", fontsize=9)
        ax.set_xlabel("mu (95% interval)")
        ax.grid(axis="x", alpha=0.3)
    return _finish(fig, "tournament ratings (openskill Plackett-Luce)", caption, None)


def save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path
