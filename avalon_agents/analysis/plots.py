"""Figures (matplotlib): the paper's Figures 2-6 in spirit, plus win rate per variant, drawn to be printed.

Each function takes the metric table it draws (so a notebook can filter it first) and returns a Figure; `save`
writes a PNG. The conventions every figure follows:

- one panel per variant (a table without a `variant` column gets one panel), never one hue per variant;
- one colour per side, `SIDE_COLOURS`, wherever a bar, line or tick label belongs to the good or the evil side;
- the 95% CI as error bars, and y-limits that hold every interval whole (rates: 0-1 with a margin);
- every bar, cell or point carries its n (`n=12 · 2 games`), and `*` where it rests on fewer than 5 games
  (`few_games`: the interval is the small-sample floor, see `analysis.stats`), explained beside the legend;
- a value the rules fix (the failure votes of good roles: `applies` False) is drawn as "n/a", with no bar and no
  error bar;
- a label on every axis, the legend outside the panels, titles wrapped to fit the figure (one panel included);
- `caption=`: what produced the numbers (`analysis.paper.report.footer`, `experiments.results.provenance`),
  printed under the panels as one small line (absolute paths made relative, cut to the figure's width; the
  whole provenance is in the report); `judge=` "scripted" stamps the figure as not a real judgment.
  `caption(fig, ...)` does the same to a figure already drawn.

Figures are built without pyplot, so a notebook shows a returned figure once (not again at the end of the
cell) and nothing accumulates in pyplot's figure list.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from avalon_agents.analysis.figure_text import one_line, relative_paths, wrap
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
TITLE_SIZE = 11
PANEL_TITLE_SIZE = 9
FEW_MARK = "*"
FEW_NOTE = "* fewer than 5 games:\nthe interval is a floor\n(pooled Wilson), not\nthe spread between games"
NOT_APPLICABLE = "n/a"


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


def _few(part: pd.DataFrame) -> pd.Series:
    return part["few_games"].fillna(False).astype(bool) if "few_games" in part else pd.Series(False, index=part.index)


def count_label(n: object, games: object = None, few: bool = False, sep: str = " · ") -> str:
    """A bar's or cell's n: "n=12 · 2 games", "n=4" (n counts games), with FEW_MARK under 5 games."""
    if n is None or n != n:
        return ""
    text = f"n={float(n):g}"
    if games is not None and games == games and float(games) != float(n):
        text += f"{sep}{int(games)} game{'s' if int(games) != 1 else ''}"
    return text + (FEW_MARK if few else "")


COUNT_SIZE = 6


def _count_row(ax: Axes, positions: Sequence[float], labels: Sequence[str]) -> None:
    """Each bar's n written in a band under the bars (the y-limits moved down to make room for it)."""
    if not any(labels):
        return
    low, high = ax.get_ylim()
    lines = max(label.count("\n") + 1 for label in labels)
    height = ax.get_position().height * ax.get_figure().get_figheight()  # inches, about (before the layout)
    room = (high - low) * (COUNT_SIZE * 1.25 * lines / 72 + 0.04) / max(height, 0.5)
    ax.set_ylim(low - room, high)
    for x, label in zip(positions, labels):
        ax.text(x, low - room / 2, label, ha="center", va="center", fontsize=COUNT_SIZE, color="#333333",
                linespacing=1.0)
    ax.axhline(low, color="#BBBBBB", linewidth=0.5)


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


def _games_of(part: pd.DataFrame) -> tuple[object, pd.Series | list]:
    """(the panel's number of games where every row has the same, else None; each row's games for its n label)."""
    if "games" not in part or part.empty:
        return None, [None] * len(part)
    games = part["games"]
    if games.nunique(dropna=False) == 1:
        return games.iloc[0], [None] * len(part)
    return None, games


def _with_games(title: str, games: object, few: bool) -> str:
    if games is None or games != games:
        return title
    told = f"{int(games)} game{'s' if int(games) != 1 else ''}{FEW_MARK if few else ''}"
    return f"{title} ({told})" if title else told


def _bar_panel(ax: Axes, part: pd.DataFrame, x: str, value: str, xlabel: str, ylabel: str,
               bounds: tuple[float, float] | None, title: str = "", title_width: float = 2.2) -> set[str]:
    """Bars of `value` by `x`, each in its side's colour, the CI as error bars, n under each bar ("n/a" and no bar
    where `applies` is False), the games in the title where every bar has the same. Returns the sides drawn (and
    HUMANS, FEW_MARK where drawn)."""
    _panel_title(ax, title, title_width)
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
    applies = (part["applies"].fillna(True).astype(bool).to_numpy() if "applies" in part
               else np.ones(len(keys), dtype=bool))
    heights = np.where(applies, part[value].astype(float).to_numpy(), np.nan)
    sides = [side_of(s) for s in (part["side"] if "side" in part else part[x])]
    colours = [SIDE_COLOURS.get(s or "", NO_SIDE) for s in sides]
    positions = np.arange(len(keys))
    lows, highs = heights, heights
    ax.bar(positions, np.nan_to_num(heights), 0.7, color=colours)
    if "ci_low" in part and "ci_high" in part:
        lows, highs = part["ci_low"].astype(float).to_numpy(), part["ci_high"].astype(float).to_numpy()
        shown = applies & ~np.isnan(heights) & ~np.isnan(lows) & ~np.isnan(highs)
        if shown.any():
            err = np.vstack([(heights - lows).clip(min=0), (highs - heights).clip(min=0)])[:, shown]
            ax.errorbar(positions[shown], heights[shown], yerr=err, fmt="none", ecolor="#222222", elinewidth=1,
                        capsize=4)
    drawn = set()
    if "humans" in part and part["humans"].notna().any():  # a reference per bar (analysis.humans.players)
        people = part["humans"].astype(float).to_numpy()
        known = ~np.isnan(people) & applies
        ax.scatter(positions[known], people[known], marker=HUMAN_MARKER, color="black", s=22, zorder=3)
        lows, highs = [*lows, *people[known]], [*highs, *people[known]]
        drawn.add(HUMANS)
    _limits(ax, [*lows, *heights], [*highs, *heights], bounds)
    for i in positions[~applies]:  # the rules fix this value: no bar, no interval
        ax.text(i, ax.get_ylim()[0], NOT_APPLICABLE, ha="center", va="bottom", fontsize=7, color="#555555")
    few = _few(part).to_numpy()
    if "n" in part:
        shared, games = _games_of(part)
        _panel_title(ax, _with_games(title, shared, bool(few.any())), title_width)
        _count_row(ax, positions, [count_label(n, g, f, "\n") for n, g, f in zip(part["n"], games, few)])
        if few.any():
            drawn.add(FEW_MARK)
    slanted = len(keys) > 2
    ax.set_xticks(positions, keys, rotation=30 if slanted else 0, ha="right" if slanted else "center", fontsize=8)
    _colour_ticks(ax, [str(part[x].iloc[i]) if "side" not in part else str(part["side"].iloc[i])
                       for i in range(len(keys))])
    return {s for s in sides if s} | drawn


def _note_handle() -> Line2D:
    """A legend entry without a mark: what FEW_MARK means."""
    return Line2D([], [], linestyle="", marker="", label=FEW_NOTE)


def _side_legend(fig: Figure, sides: set[str]) -> None:
    handles = [Patch(color=SIDE_COLOURS[s], label=s) for s in SIDE_COLOURS if s in sides]
    if HUMANS in sides:
        handles.append(Line2D([], [], marker=HUMAN_MARKER, color="black", linestyle="", label=HUMANS))
    if FEW_MARK in sides:
        handles.append(_note_handle())
    if handles:
        fig.legend(handles=handles, title="side", loc="outside right center", fontsize=8)


def _panel_title(ax: Axes, text: str, width: float) -> None:
    """A panel's title wrapped to `width` inches (about its cell of the figure)."""
    ax.set_title(wrap(text, PANEL_TITLE_SIZE, width) if text else "", fontsize=PANEL_TITLE_SIZE)


def canned(spec: str | None) -> bool:
    """The model `spec` answers with canned labels (its provider declares itself `canned`: scripted)."""
    from avalon_agents.llm.registry import provider_of_spec

    return bool(spec) and provider_of_spec(spec).canned


def caption_text(caption: str | None = None, judge: str | None = None) -> str:
    """The text printed under a figure: what produced it, and a scripted judge named as not a real judgment."""
    lines = []
    if canned(judge) and "not a real judg" not in (caption or ""):
        lines.append(SCRIPTED_JUDGE)
    elif judge and f"judge {judge}" not in (caption or "") and f"judge: {judge}" not in (caption or ""):
        lines.append(f"judge: {judge}")
    if caption:
        lines.append(caption)
    return " | ".join(lines)


def caption(fig: Figure, text: str | None = None, judge: str | None = None, root: str | Path | None = None
            ) -> Figure:
    """Print what produced the figure under its panels (`caption_text`) as one small line: absolute paths made
    relative (`relative_paths`: to `root`, e.g. the run folder, or the working directory), at 6 points (down to 5)
    and cut with an ellipsis to the figure's width; red when the judge is the scripted stand-in. Returns the
    figure (any figure, e.g. `report.figures`')."""
    text = caption_text(text, judge)
    if text:
        line, size = one_line(relative_paths(text, root), fig.get_figwidth() * 0.93)
        scripted = canned(judge) or "scripted: canned labels" in text or SCRIPTED_JUDGE in text
        fig.supxlabel(line, x=0.01, ha="left", fontsize=size, color="#B00020" if scripted else "#444444")
    return fig


def _finish(fig: Figure, title: str, text: str | None, judge: str | None) -> Figure:
    fig.suptitle(wrap(title, TITLE_SIZE, fig.get_figwidth() * 0.9), fontsize=TITLE_SIZE)
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
            # the measure is the y label; the title names the panel's variant only, so titles never overlap
            sides |= _bar_panel(ax, part, x, value, xlabel, ylabel, bounds,
                                "" if value_of_facet is None else f"{facet}: {value_of_facet}", 2.6 * 0.85)
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
    """Shares of judged labels per role (camouflage), one panel per variant: a bar per label beside the others,
    each with its 95% CI (`<label>_low`, `<label>_high`), n under each role."""
    facets = _facets([shares], facet)
    width = 1.2 + 0.9 * max(1, len(set(shares["role"])) if "role" in shares and not shares.empty else 1)
    fig, (axes,) = _figure(1, len(facets), (min(width, 5.0), 3.0))
    few_drawn = False
    for ax, value_of_facet in zip(axes, facets):
        part = _part(shares, facet, value_of_facet)
        _panel_title(ax, "" if value_of_facet is None else f"{facet}: {value_of_facet}", min(width, 5.0) * 0.85)
        ax.set_xlabel("speaker's role")
        ax.set_ylabel("share of speeches")
        if part.empty:
            _no_data(ax)
            _limits(ax, [], [], RATE_LIMITS)
            continue
        part = part.assign(_key=_keys(part, "role").to_numpy())
        order = {v: i for i, v in enumerate(_order(part["role"]))}
        part = part.sort_values(by=["role", "_key"], key=lambda c: c.map(order) if c.name == "role" else c)
        keys = list(dict.fromkeys(part["_key"]))
        table = part.drop_duplicates("_key").set_index("_key").reindex(keys)
        step = 0.8 / max(1, len(labels))
        lows, highs = [], []
        for j, (label, colour) in enumerate(zip(labels, LABEL_COLOURS)):
            where = np.arange(len(keys)) + (j - (len(labels) - 1) / 2) * step
            heights = table[label].astype(float).to_numpy() if label in table else np.full(len(keys), np.nan)
            ax.bar(where, np.nan_to_num(heights), step * 0.9, color=colour, label=label)
            if f"{label}_low" in table and f"{label}_high" in table:
                low = table[f"{label}_low"].astype(float).to_numpy()
                high = table[f"{label}_high"].astype(float).to_numpy()
                shown = ~np.isnan(heights) & ~np.isnan(low) & ~np.isnan(high)
                if shown.any():
                    err = np.vstack([(heights - low).clip(min=0), (high - heights).clip(min=0)])[:, shown]
                    ax.errorbar(where[shown], heights[shown], yerr=err, fmt="none", ecolor="#222222", elinewidth=0.8,
                                capsize=2)
                lows += list(low)
                highs += list(high)
        few = _few(table).to_numpy()
        few_drawn |= bool(few.any())
        ax.set_xticks(range(len(keys)), keys, rotation=30, ha="right", fontsize=8)
        _colour_ticks(ax, table["role"].astype(str).tolist())
        _limits(ax, lows, highs, RATE_LIMITS)
        if "n" in table:
            shared, games = _games_of(table)
            _panel_title(ax, _with_games("" if value_of_facet is None else f"{facet}: {value_of_facet}", shared,
                                         bool(few.any())), min(width, 5.0) * 0.85)
            _count_row(ax, range(len(keys)), [count_label(n, g, f) for n, g, f in zip(table["n"], games, few)])
    handles = [Patch(color=c, label=label) for label, c in zip(labels, LABEL_COLOURS)]
    fig.legend(handles=handles + ([_note_handle()] if few_drawn else []), title="label (95% CI)",
               loc="outside right center", fontsize=8)
    return _finish(fig, title, caption, judge)


def heatmaps(matrix: pd.DataFrame, labels: tuple[str, ...] = ("trust", "distrust"), *, caption: str | None = None,
             judge: str | None = None) -> Figure:
    """Role -> role heatmaps of judged attitudes (teamwork = trust, confrontation = distrust), one row per variant
    and agent. The colour maps (green, purple) are not the sides' colours; role names are."""
    group = [c for c in ("variant", "agent") if c in matrix]
    rows = list(dict.fromkeys(matrix[group].astype(str).agg(" · ".join, axis=1))) if group and not matrix.empty \
        else ["-"]
    speakers = int(matrix.groupby(group)["role"].nunique().max()) if group and not matrix.empty else 3
    targets = int(matrix.groupby(group)["target_role"].nunique().max()) if group and not matrix.empty else 3
    width = 2.4 + 0.62 * max(targets, 3)  # a cell holds its share, its interval and its n at COUNT_SIZE
    fig = PaperFigure(figsize=(width * len(labels) + 0.8, (0.5 * max(speakers, 2) + 1.9) * len(rows) + 1.0),
                      layout="constrained")
    axes = fig.subplots(len(rows), len(labels), squeeze=False)
    keys = matrix[group].astype(str).agg(" · ".join, axis=1) if group and not matrix.empty else None
    few_drawn = False
    for row, name in enumerate(rows):
        part = matrix[keys == name] if keys is not None else matrix
        for col, label in enumerate(labels):
            ax = axes[row][col]
            _panel_title(ax, f"{name}: {'teamwork' if label == 'trust' else 'confrontation'} ({label})",
                         width - 1.9)
            ax.set_xlabel("towards (the other player's role)")
            ax.set_ylabel("speaker's role")
            if part.empty:
                _no_data(ax)
                continue
            grid = part.pivot_table(index="role", columns="target_role", values=label, aggfunc="mean")
            grid = grid.reindex(index=_order(grid.index), columns=_order(grid.columns))
            cells = part.drop_duplicates(["role", "target_role"]).set_index(["role", "target_role"])
            image = ax.imshow(grid.to_numpy(dtype=float), vmin=0, vmax=1, aspect="auto",
                              cmap="Greens" if label == "trust" else "Purples")
            ax.set_xticks(range(len(grid.columns)), grid.columns, rotation=30, ha="right", fontsize=8)
            ax.set_yticks(range(len(grid.index)), grid.index, fontsize=8)
            _colour_ticks(ax, list(grid.columns))
            for tick, role in zip(ax.get_yticklabels(), grid.index):
                tick.set_color(side_colour(role))
            for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
                if v == v:
                    cell = cells.loc[(grid.index[i], grid.columns[j])]
                    text = f"{v:.2f}"
                    if f"{label}_low" in cell and cell[f"{label}_low"] == cell[f"{label}_low"]:
                        text += f"\n{cell[f'{label}_low']:.2f}–{cell[f'{label}_high']:.2f}"
                    if "n" in cell:
                        few = bool(cell.get("few_games", False) == True)  # noqa: E712 (NaN: not few)
                        few_drawn |= few
                        text += "\n" + count_label(cell["n"], None, few)
                    ax.text(j, i, text, ha="center", va="center", fontsize=COUNT_SIZE, linespacing=1.1,
                            color="white" if v > 0.6 else "black")
            fig.colorbar(image, ax=ax, shrink=0.8, label=f"share of mentions: {label}")
    if few_drawn:
        fig.legend(handles=[_note_handle()], loc="outside right center", fontsize=7, frameon=False,
                   title="cells: share,\n95% CI, n")
    return _finish(fig, "Teamwork and confrontation, role to role", caption, judge)


def curves(frame: pd.DataFrame, x: str, y: str, line: list[str], title: str, ylabel: str, *,
           facet: str | None = "variant", bounds: tuple[float, float] | None = RATE_LIMITS,
           caption: str | None = None, judge: str | None = None, low: str | None = None, high: str | None = None,
           n: str | None = "n") -> Figure:
    """`y` over `x`, one line per combination of the `line` columns, one panel per variant (vacillation, probes
    over quests), with its 95% CI as error bars (`low`, `high`; default `<y>_low`, `<y>_high` where the table has
    them; the lines nudged apart so their bars do not hide each other) and the n of each point (column `n`). A
    line's colour is the side of its target group (where it has one) or of its role; its marker and dash tell
    the rest apart."""
    facets = _facets([frame], facet)
    fig, (axes,) = _figure(1, len(facets), (4.2, 3.2))
    low = low or (f"{y}_low" if f"{y}_low" in frame else None)
    high = high or (f"{y}_high" if f"{y}_high" in frame else None)
    line = [c for c in line if c in frame and c != facet]
    colour_key = "target_group" if "target_group" in line else ("role" if "role" in line else
                                                                 ("side" if "side" in line else None))
    styles = {}
    handles = {}
    few_drawn = False
    for ax, value_of_facet in zip(axes, facets):
        part = _part(frame, facet, value_of_facet)
        _panel_title(ax, "" if value_of_facet is None else f"{facet}: {value_of_facet}", 4.2 * 0.85)
        ax.set_xlabel(x)
        ax.set_ylabel(ylabel)
        if part.empty:
            _no_data(ax)
            _limits(ax, [], [], bounds)
            continue
        groups = list(part.groupby(line, sort=True))
        ends: list[float] = []
        for index, (key, rows) in enumerate(groups):
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
            nudge = (index - (len(groups) - 1) / 2) * min(0.12, 0.45 / max(1, len(groups)))
            where = rows[x].astype(float).to_numpy() + nudge
            values = rows[y].astype(float).to_numpy()
            ax.plot(where, values, marker=marker, linestyle=dash, color=colour, label=label)
            if low and high:
                lo, hi = rows[low].astype(float).to_numpy(), rows[high].astype(float).to_numpy()
                shown = ~np.isnan(values) & ~np.isnan(lo) & ~np.isnan(hi)
                if shown.any():
                    ax.errorbar(where[shown], values[shown], yerr=np.vstack([(values - lo).clip(min=0),
                                                                             (hi - values).clip(min=0)])[:, shown],
                                fmt="none", ecolor=colour, elinewidth=0.8, capsize=2, alpha=0.8)
                ends += [*lo[shown], *hi[shown]]
            if n and n in rows:
                few = _few(rows).to_numpy()
                few_drawn |= bool(few.any())
                for px, py, count, f in zip(where, values, rows[n], few):
                    if py == py:
                        ax.annotate(count_label(count, None, f), (px, py), xytext=(3, 3), textcoords="offset points",
                                    fontsize=5.5, color=colour)
            handles.setdefault(label, Line2D([], [], marker=marker, linestyle=dash, color=colour, label=label))
        ax.set_xticks(sorted(part[x].unique()))
        values = part[y].astype(float).tolist()
        _limits(ax, [*values, *ends], [*values, *ends], bounds)
    if handles or few_drawn:
        fig.legend(handles=list(handles.values()) + ([_note_handle()] if few_drawn else []),
                   loc="outside right center", fontsize=7)
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
        _panel_title(ax, f"{scope} rating", 3.0)
        ax.set_xlabel("mu (95% interval)")
        ax.grid(axis="x", alpha=0.3)
    return _finish(fig, "tournament ratings (openskill Plackett-Luce)", caption, None)


def save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path
