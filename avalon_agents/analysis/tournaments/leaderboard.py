"""A tournament's tables: the leaderboard (ratings and win rates per entrant), win rates per entrant and role
(and side) with Wilson intervals, and the head-to-head matrix; as text, CSV, a Markdown page and a figure.

The leaderboard is sorted by win rate (every entrant plays every role equally often on the same deals, so the win
rate is a fair score with a sampling interval), then by openskill's ordinal, then by name. Its ranks show ties
(`rank_ranges`): an entrant's ranks run from 1 + the entrants whose win-rate interval lies wholly above its own to
the entrants less those whose interval lies wholly below; entrants whose intervals overlap share ranks ("2-3"),
and the order within a shared range is not a result.

An agent on several seats of a game counts that game once per role (and once per side) it held there, so a
rate is one yes/no per game wherever it can be (Wilson's interval); the overall rate of an agent that sat on
both sides of some games is resampled by game instead (analysis.stats.rate).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from avalon_agents.analysis.load import RunData
from avalon_agents.analysis.stats import rate
from avalon_agents.analysis.tournaments.ratings import rate_games, seat_outcomes
from avalon_agents.core.types import Role


@dataclass
class Leaderboard:
    """table: one row per entrant, best first; ratings: per entrant and scope; win_rates: per entrant and
    `by` (all, good, evil, or a role); head_to_head: per (agent, opponent) pair; games: how many were rated."""

    table: pd.DataFrame
    ratings: pd.DataFrame
    win_rates: pd.DataFrame
    head_to_head: pd.DataFrame
    games: int


def win_rates(data: RunData) -> pd.DataFrame:
    """Per agent and `by` (`all`, `good`, `evil`, each role): value, ci_low, ci_high, n, games."""
    seats = seat_outcomes(data)
    parts = []
    sides = seats.drop_duplicates(["game", "agent", "side"])
    parts.append(rate(sides.assign(by="all"), ["agent", "by"], "won"))
    parts.append(rate(sides.rename(columns={"side": "by"}), ["agent", "by"], "won"))
    roles = seats.drop_duplicates(["game", "agent", "role"]).rename(columns={"role": "by"})
    parts.append(rate(roles, ["agent", "by"], "won"))
    return pd.concat(parts, ignore_index=True)


def head_to_head(data: RunData) -> pd.DataFrame:
    """Per (agent, opponent): the agent's win rate in the games where the opponent sat on the other side
    (value, ci_low, ci_high, n, games)."""
    seats = seat_outcomes(data).drop_duplicates(["game", "agent", "side"])
    pairs = seats.merge(seats[["game", "agent", "side"]].rename(columns={"agent": "opponent", "side": "their_side"}),
                        on="game")
    pairs = pairs[(pairs["side"] != pairs["their_side"]) & (pairs["agent"] != pairs["opponent"])]
    return rate(pairs, ["agent", "opponent"], "won")


def leaderboard(data: RunData) -> Leaderboard:
    ratings = rate_games(data)
    rates = win_rates(data)
    wide = ratings.pivot(index="agent", columns="scope")
    table = pd.DataFrame({"agent": wide.index})
    for scope in ("overall", "good", "evil"):
        for column in ("mu", "sigma", "low", "high", "ordinal"):
            name = column if scope == "overall" else f"{scope}_{column}"
            table[name] = wide[(column, scope)].to_numpy()
    for by in ("all", "good", "evil"):
        part = rates[rates["by"] == by].set_index("agent")
        prefix = "win" if by == "all" else f"{by}_win"
        table[f"{prefix}_rate"] = table["agent"].map(part["value"])
        table[f"{prefix}_low"] = table["agent"].map(part["ci_low"])
        table[f"{prefix}_high"] = table["agent"].map(part["ci_high"])
    seats = seat_outcomes(data)
    table["games"] = table["agent"].map(seats.drop_duplicates(["game", "agent"]).groupby("agent").size())
    table = table.sort_values(SORT_KEY, ascending=[False, False, True], ignore_index=True)
    best, worst = rank_ranges(table["win_low"], table["win_high"])
    table.insert(0, "rank", best)
    table.insert(1, "rank_worst", worst)
    table.insert(2, "ranks", [_ranks(b, w) for b, w in zip(best, worst)])
    return Leaderboard(table, ratings, rates, head_to_head(data), len(data.games))


SORT_KEY = ["win_rate", "ordinal", "agent"]
"""The leaderboard's order: win rate (highest first), then ordinal (highest first), then the entrant's name."""
SORTED_BY = ("sorted by win rate (Wilson 95% CI), then ordinal (mu - 3σ); # is the ranks the win-rate intervals "
             "allow: from 1 + the entrants wholly above to the entrants less those wholly below; a range such as "
             "2-3 is a tie: the order inside it is not a result")


def rank_ranges(low: pd.Series, high: pd.Series) -> tuple[list[int], list[int]]:
    """Per entrant, (best rank, worst rank) its interval [low, high] allows among all of them: best = 1 + those
    whose low is above its high, worst = all less those whose high is below its low. Overlapping intervals give
    overlapping ranges (a tie); an entrant without an interval ranks anywhere."""
    lows, highs = list(low.astype(float)), list(high.astype(float))
    best, worst = [], []
    for mine_low, mine_high in zip(lows, highs):
        above = sum(1 for other in lows if other == other and mine_high == mine_high and other > mine_high)
        below = sum(1 for other in highs if other == other and mine_low == mine_low and other < mine_low)
        best.append(1 + above)
        worst.append(len(lows) - below)
    return best, worst


def _ranks(best: int, worst: int) -> str:
    return str(best) if best == worst else f"{best}-{worst}"


def _pct(x: float) -> str:
    return "" if x != x else f"{x:.0%}"


def _ci(low: float, high: float) -> str:
    return "" if low != low else f"[{low:.0%}, {high:.0%}]"


def format_leaderboard(board: Leaderboard) -> str:
    """The leaderboard as a terminal table."""
    lines = [f"{'#':>5}  {'entrant':<20}{'win rate':>9}  {'95% CI':<12}{'good wins':>10}{'evil wins':>10}"
             f"{'rating':>8}{'± 95%':>8}{'ordinal':>9}{'good':>8}{'evil':>8}{'games':>7}"]
    for r in board.table.itertuples():
        lines.append(f"{r.ranks:>5}  {r.agent:<20}{_pct(r.win_rate):>9}  {_ci(r.win_low, r.win_high):<12}"
                     f"{_pct(r.good_win_rate):>10}{_pct(r.evil_win_rate):>10}{r.mu:>8.1f}{1.96 * r.sigma:>8.1f}"
                     f"{r.ordinal:>9.1f}{r.good_mu:>8.1f}{r.evil_mu:>8.1f}{r.games:>7}")
    lines.append(f"{board.games} games; {SORTED_BY}. Rating: openskill Plackett-Luce, games rated in order, "
                 "mu ± 1.96 sigma; good/evil: the side ratings.")
    return "\n".join(lines)


def h2h_matrix(board: Leaderboard) -> pd.DataFrame:
    """Row agent's win rate against column agent (on opposite sides), in leaderboard order."""
    order = list(board.table["agent"])
    h = board.head_to_head
    matrix = h.pivot(index="agent", columns="opponent", values="value") if not h.empty else pd.DataFrame()
    return matrix.reindex(index=order, columns=order)


def markdown(board: Leaderboard, title: str, provenance: str = "", figure: str | None = None,
             health: str = "") -> str:
    """The leaderboard page: what produced it and its games' health, the table, the figure, win rates per role,
    the head-to-head matrix."""
    t = board.table
    out = [f"# {title}", "", provenance, "", *([f"Games' {health}", ""] if health else []),
           "| # | entrant | win rate [95% CI] | good wins | evil wins | rating (mu ± 1.96 σ) | ordinal | good | evil "
           "| games |",
           "|---:|---|---|---:|---:|---|---:|---|---|---:|"]
    for r in t.itertuples():
        out.append(f"| {r.ranks} | {r.agent} | {_pct(r.win_rate)} {_ci(r.win_low, r.win_high)} | "
                   f"{_pct(r.good_win_rate)} | {_pct(r.evil_win_rate)} | {r.mu:.1f} ± {1.96 * r.sigma:.1f} | "
                   f"{r.ordinal:.1f} | {r.good_mu:.1f} ± {1.96 * r.good_sigma:.1f} | "
                   f"{r.evil_mu:.1f} ± {1.96 * r.evil_sigma:.1f} | {r.games} |")
    out += ["", f"{board.games} games; {SORTED_BY}. Ratings: openskill's Plackett-Luce model, the games rated one at "
            "a time in game order. See docs/tournaments.md.", ""]
    if figure:
        out += [f"![ratings]({figure})", ""]
    rates = board.win_rates
    roles = [r.value for r in Role if r.value in set(rates["by"])]
    out += ["## Win rate per role (95% Wilson interval, games)", "",
            "| entrant | " + " | ".join(roles) + " |", "|---|" + "---|" * len(roles)]
    for agent in t["agent"]:
        cells = []
        for role in roles:
            row = rates[(rates["agent"] == agent) & (rates["by"] == role)]
            cells.append("" if row.empty else f"{_pct(row['value'].iloc[0])} "
                         f"{_ci(row['ci_low'].iloc[0], row['ci_high'].iloc[0])} ({row['n'].iloc[0]:.0f})")
        out.append(f"| {agent} | " + " | ".join(cells) + " |")
    matrix = h2h_matrix(board)
    out += ["", "## Head to head", "", "The row entrant's win rate in the games where the column entrant sat on "
            "the other side (games in brackets).", "",
            "| | " + " | ".join(matrix.columns) + " |", "|---|" + "---:|" * len(matrix.columns)]
    h = board.head_to_head.set_index(["agent", "opponent"]) if not board.head_to_head.empty else None
    for agent in matrix.index:
        cells = []
        for other in matrix.columns:
            value = matrix.loc[agent, other]
            cells.append("" if value != value else f"{value:.0%} ({h.loc[(agent, other), 'n']:.0f})")
        out.append(f"| {agent} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def write(board: Leaderboard, folder: Path, title: str, provenance: str = "", health: str = "") -> dict[str, Path]:
    """leaderboard.csv, ratings.csv, win_rates.csv, head_to_head.csv, ratings.png and leaderboard.md in
    `folder`; returns them by name."""
    from avalon_agents.analysis.plots import ratings_plot, save

    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: folder / f"{name}.csv" for name in ("leaderboard", "ratings", "win_rates", "head_to_head")}
    board.table.to_csv(paths["leaderboard"], index=False)
    board.ratings.to_csv(paths["ratings"], index=False)
    board.win_rates.to_csv(paths["win_rates"], index=False)
    board.head_to_head.to_csv(paths["head_to_head"], index=False)
    paths["figure"] = save(ratings_plot(board.ratings, order=list(board.table["agent"]), caption=provenance),
                           folder / "ratings.png")
    paths["markdown"] = folder / "leaderboard.md"
    paths["markdown"].write_text(markdown(board, title, provenance, figure="ratings.png", health=health))
    return paths
