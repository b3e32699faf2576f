"""Ratings of the agents of a run (a tournament's entrants) with openskill's Plackett-Luce model.

A game is a match of two teams, the good seats against the evil seats; the winning side ranks first. Every
seat enters with its agent's current rating; an agent on several seats of a game (fewer entrants than seats)
gets the mean of its seats' updated ratings (mu and sigma), so seat count never scales an update, and an agent
on both sides of one game learns about its opponents only. Three ratings per agent:

- `overall`: every seat rated with the agent's one rating;
- `good`, `evil`: the agent's rating as that side; a game updates the good ratings of the agents on good seats
  against the evil ratings of the agents on evil seats.

Games are rated one at a time in a fixed order (variant, series, game index), so the same games give the same
table whatever order they finished in. Each rating has mu, sigma, the 95% interval mu ± 1.96 sigma and
openskill's ordinal mu - 3 sigma (the conservative value the leaderboard sorts by).
"""

from __future__ import annotations

import pandas as pd

from avalon_agents.analysis.load import RunData

SCOPES = ("overall", "good", "evil")
Z95 = 1.959964


def seat_outcomes(data: RunData) -> pd.DataFrame:
    """One row per game and seat: variant, series, game_index, game, seat, agent, role, side, won."""
    seats = data.seats.merge(data.games[["game", "winner"]], on="game")
    seats["won"] = seats["side"] == seats["winner"]
    return seats.sort_values(["variant", "series", "game_index", "seat"], ignore_index=True)


def rate_games(data: RunData) -> pd.DataFrame:
    """Per agent and scope (overall, good, evil): mu, sigma, low, high (95%), ordinal, games (the games that
    updated it), sorted by agent and scope."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    seats = seat_outcomes(data)
    agents = sorted(seats["agent"].unique())
    ratings = {scope: {a: model.rating() for a in agents} for scope in SCOPES}
    games = {scope: dict.fromkeys(agents, 0) for scope in SCOPES}
    for _, game in seats.groupby(["variant", "series", "game_index"], sort=True):
        good = game[game["side"] == "good"]["agent"].tolist()
        evil = game[game["side"] == "evil"]["agent"].tolist()
        ranks = [0, 1] if game["winner"].iloc[0] == "good" else [1, 0]
        _update(model, (ratings["overall"],) * 2, good, evil, ranks, (games["overall"],) * 2)
        _update(model, (ratings["good"], ratings["evil"]), good, evil, ranks, (games["good"], games["evil"]))
    rows = []
    for a in agents:
        for scope in SCOPES:
            r = ratings[scope][a]
            rows.append({"agent": a, "scope": scope, "mu": r.mu, "sigma": r.sigma, "low": r.mu - Z95 * r.sigma,
                         "high": r.mu + Z95 * r.sigma, "ordinal": r.ordinal(), "games": games[scope][a]})
    return pd.DataFrame(rows, columns=["agent", "scope", "mu", "sigma", "low", "high", "ordinal", "games"])


def _update(model, tables: tuple[dict, dict], good: list[str], evil: list[str], ranks: list[int],
            counts: tuple[dict, dict]) -> None:
    """Rate one game: the good seats, with ratings from `tables[0]`, against the evil seats, from `tables[1]`
    (the same table for `overall`); each agent's rating in a table becomes the mean of its seats' new ratings
    there, and its game count in that table goes up by one."""
    new = model.rate([[tables[0][a] for a in good], [tables[1][a] for a in evil]], ranks=ranks)
    same = tables[0] is tables[1]
    pooled: dict[tuple[int, str], list] = {}  # (table, agent) -> its seats' new ratings
    for side, names in enumerate((good, evil)):
        for name, rating in zip(names, new[side]):
            pooled.setdefault((0 if same else side, name), []).append(rating)
    for (table, name), found in pooled.items():
        tables[table][name] = model.rating(mu=sum(r.mu for r in found) / len(found),
                                           sigma=sum(r.sigma for r in found) / len(found))
        counts[table][name] += 1
