"""Figures (matplotlib): the paper's Figures 2-6 in spirit, plus win rate per variant. Each function takes
the metric table it draws (so a notebook can filter it first) and returns a Figure; `save` writes a PNG."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt  # headless: matplotlib picks Agg itself; in a notebook figures show inline
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

ROLE_ORDER = ["Merlin", "Percival", "Loyal Servant", "Morgana", "Assassin", "Mordred", "Oberon", "Minion of Mordred"]


def _order(values) -> list:
    present = list(dict.fromkeys(values))
    return [r for r in ROLE_ORDER if r in present] + sorted(v for v in present if v not in ROLE_ORDER)


def bars(ax, frame: pd.DataFrame, x: str, hue: str, value: str = "value", title: str = "",
         ylabel: str = "rate") -> None:
    """Grouped bars of `value` by `x` (roles in the game's order), one colour per `hue`, with the CI as
    error bars where the table has ci_low/ci_high."""
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    if frame.empty:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return
    if frame.duplicated([x, hue]).any():  # e.g. several variants: one colour per variant and agent
        extra = [c for c in ("variant", "agent", "side", "team", "metric")
                 if c in frame and c not in (x, hue) and frame[c].nunique() > 1]
        frame = frame.assign(_hue=frame[[hue, *extra]].astype(str).agg(" / ".join, axis=1))
        hue = "_hue"
    xs, hues = _order(frame[x]), list(dict.fromkeys(frame[hue]))
    width = 0.8 / len(hues)
    for i, h in enumerate(hues):
        part = frame[frame[hue] == h].set_index(x).reindex(xs)
        pos = np.arange(len(xs)) + (i - (len(hues) - 1) / 2) * width
        err = None
        if "ci_low" in part:
            low = (part[value] - part["ci_low"]).clip(lower=0)
            err = np.nan_to_num(np.vstack([low, (part["ci_high"] - part[value]).clip(lower=0)]))
        ax.bar(pos, part[value].astype(float), width, yerr=err, capsize=3, label=str(h))
    ax.set_xticks(np.arange(len(xs)), xs, rotation=20)
    ax.set_ylim(0, max(1.0, float(np.nanmax(frame[value].astype(float))) * 1.1))
    ax.legend(fontsize=8)


def bars_figure(frame: pd.DataFrame, x: str, hue: str, value: str, title: str) -> Figure:
    fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
    bars(ax, frame, x, hue, value, title=title)
    return fig


def win_rate_plot(wr: pd.DataFrame) -> Figure:
    fig, ax = plt.subplots(figsize=(max(5, 1.5 * wr["variant"].nunique()), 3.5), layout="constrained")
    bars(ax, wr, "variant", "side", title="Winning rate per variant (95% CI)", ylabel="win rate")
    return fig


def qer_fvr_plot(qer: pd.DataFrame, fvr: pd.DataFrame, hue: str = "agent") -> Figure:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), layout="constrained")
    bars(axes[0], qer, "role", hue, title="Quest engagement rate")
    bars(axes[1], fvr, "role", hue, title="Failure vote rate")
    return fig


def leader_approval_plot(lar: pd.DataFrame, hue: str = "agent") -> Figure:
    fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
    bars(ax, lar, "role", hue, title="Leader approval rate by the leader's role")
    return fig


def self_recommendation_plot(sr: pd.DataFrame, hue: str = "agent") -> Figure:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), layout="constrained")
    bars(axes[0], sr[sr["metric"] == "rate"], "role", hue, title="Self-recommendation rate")
    bars(axes[1], sr[sr["metric"] == "success"], "role", hue, title="Self-recommendation success")
    return fig


def shares_plot(shares: pd.DataFrame, labels: list[str], title: str) -> Figure:
    """Stacked shares of judged labels per agent and role (camouflage)."""
    fig, ax = plt.subplots(figsize=(8, 3.5), layout="constrained")
    ax.set_title(title)
    if shares.empty:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return fig
    key = shares["agent"].astype(str) + "\n" + shares["role"].astype(str)
    if "variant" in shares and shares["variant"].nunique() > 1:  # judged shares are per variant
        key = shares["variant"].astype(str) + "\n" + key
    shares = shares.assign(_key=key)
    keys = list(dict.fromkeys(shares.sort_values("role", key=lambda c: c.map(_order(c).index))["_key"]))
    table = shares.set_index("_key").reindex(keys)
    bottom = np.zeros(len(keys))
    for label in labels:
        heights = table[label].fillna(0).to_numpy(dtype=float) if label in table else np.zeros(len(keys))
        ax.bar(range(len(keys)), heights, bottom=bottom, label=label)
        bottom += heights
    ax.set_xticks(range(len(keys)), keys, fontsize=8)
    ax.set_ylabel("share of speeches")
    ax.legend(fontsize=8)
    return fig


def heatmaps(matrix: pd.DataFrame, labels: tuple[str, ...] = ("trust", "distrust")) -> Figure:
    """Role -> role heatmaps of judged attitudes (teamwork = trust, confrontation = distrust), per agent."""
    agents = list(dict.fromkeys(matrix["agent"])) if not matrix.empty else ["-"]
    fig, axes = plt.subplots(len(agents), len(labels), figsize=(4.5 * len(labels), 3.8 * len(agents)),
                             layout="constrained", squeeze=False)
    for row, agent in enumerate(agents):
        part = matrix[matrix["agent"] == agent] if not matrix.empty else matrix
        for col, label in enumerate(labels):
            ax = axes[row][col]
            ax.set_title(f"{agent}: {'teamwork' if label == 'trust' else 'confrontation'} ({label})", fontsize=9)
            if part.empty:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
                continue
            grid = part.pivot_table(index="role", columns="target_role", values=label, aggfunc="mean")
            grid = grid.reindex(index=_order(grid.index), columns=_order(grid.columns))
            image = ax.imshow(grid.to_numpy(dtype=float), vmin=0, vmax=1, cmap="Blues" if label == "trust" else "Reds")
            ax.set_xticks(range(len(grid.columns)), grid.columns, rotation=30, fontsize=8)
            ax.set_yticks(range(len(grid.index)), grid.index, fontsize=8)
            ax.set_xlabel("towards")
            for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
                if v == v:
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7)
            fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


def curves(frame: pd.DataFrame, x: str, y: str, line: list[str], title: str, ylabel: str) -> Figure:
    """One line per combination of the `line` columns, `y` over `x` (vacillation, probes over quests)."""
    fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
    ax.set_title(title)
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel)
    if frame.empty:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return fig
    for key, part in frame.groupby(line, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        part = part.sort_values(x)
        ax.plot(part[x], part[y].astype(float), marker="o", label=" / ".join(map(str, key)))
    ax.set_xticks(sorted(frame[x].unique()))
    ax.legend(fontsize=7)
    return fig


def save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
