"""The results table of a run directory: win rate per variant and side with a 95% bootstrap CI, the games
behind each figure, and mean LLM calls and tokens per game."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from avalon_agents.records import is_done, read_result, read_trace, usage

BOOTSTRAP = 2000


def bootstrap_ci(values: np.ndarray, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (seeded, so a table is reproducible)."""
    if len(values) == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = rng.choice(values, size=(BOOTSTRAP, len(values)), replace=True).mean(axis=1)
    tail = (1 - level) / 2 * 100
    return float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))


def game_rows(out: Path) -> pd.DataFrame:
    """One row per finished game: variant, series, game, winner, which agent played each side, usage."""
    rows = []
    for seating_file in sorted(Path(out).glob("*/series-*/game-*/seating.json")):
        path = seating_file.parent
        if not is_done(path):
            continue
        seating = json.loads(seating_file.read_text())
        result = read_result(path)
        sides = {"good": set(), "evil": set()}
        for seat, name in seating["agents"].items():
            sides[result.roles[int(seat)].side.value].add(name)
        u = usage(read_trace(path))
        rows.append({"variant": seating["variant"], "series": seating["series"], "game": seating["game"],
                     "winner": result.winner.value, "reason": result.reason.value,
                     "good_agents": "+".join(sorted(sides["good"])), "evil_agents": "+".join(sorted(sides["evil"])),
                     "llm_calls": u["llm_calls"], "input_tokens": u["input_tokens"],
                     "output_tokens": u["output_tokens"]})
    return pd.DataFrame(rows)


def results_table(out: Path) -> pd.DataFrame:
    """Per variant and side: who played it, win rate, its 95% CI, games, mean calls and tokens per game, and
    the paper's win rate where the config gives it."""
    games = game_rows(out)
    meta = Path(out) / "experiment.json"
    variants = json.loads(meta.read_text())["variants"] if meta.exists() else {}
    rows = []
    if games.empty:
        return pd.DataFrame(rows)
    for variant, group in games.groupby("variant", sort=False):
        for side in ("good", "evil"):
            wins = (group["winner"] == side).to_numpy(dtype=float)
            low, high = bootstrap_ci(wins)
            rows.append({"variant": variant, "side": side,
                         "agents": "/".join(sorted(set(group[f"{side}_agents"]))),
                         "win_rate": wins.mean(), "ci_low": low, "ci_high": high, "games": len(group),
                         "calls_per_game": group["llm_calls"].mean(),
                         "input_tokens_per_game": group["input_tokens"].mean(),
                         "output_tokens_per_game": group["output_tokens"].mean(),
                         "paper_win_rate": ((variants.get(variant) or {}).get("paper") or {}).get(
                             f"{side}_win_rate", float("nan"))})
    return pd.DataFrame(rows)


def format_table(table: pd.DataFrame) -> str:
    if table.empty:
        return "no finished games yet"
    lines = [f"{'variant':<22}{'side':<6}{'agents':<22}{'win rate':>9}  {'95% CI':<13}{'games':>6}"
             f"{'calls/game':>12}{'tokens in/game':>16}{'paper WR':>10}"]
    for r in table.itertuples():
        ci = f"[{r.ci_low:.0%}, {r.ci_high:.0%}]"
        lines.append(f"{r.variant:<22}{r.side:<6}{r.agents:<22}{r.win_rate:>9.1%}  {ci:<13}{r.games:>6}"
                     f"{r.calls_per_game:>12.0f}{r.input_tokens_per_game:>16,.0f}"
                     f"{'' if r.paper_win_rate != r.paper_win_rate else f'{r.paper_win_rate:.0%}':>10}")
    if table["paper_win_rate"].notna().any():
        lines.append("paper WR: the paper's own figure (GPT-3.5), for comparison; ours are measured above")
    return "\n".join(lines)
