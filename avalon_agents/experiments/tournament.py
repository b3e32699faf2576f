"""Tournament configs: entrants and blocks of games, played by the experiment runner.

    name: tournament_bots
    rules: official
    players: 5
    entrants:                      # name -> an agent, exactly as an experiment's `agents`
      rulebot: {kind: rulebot}
      weak: {kind: rulebot, options: {blunder: 0.5}}
      random: {kind: random}
    blocks: 40                     # per series; a block is one game per entrant, all on one deal
    series: 2                      # series run in parallel (concurrency.games)

Every other key is an experiment's (model, extractor, plugins, seed, concurrency, probes, watchdog_s, health,
learn_after_last). A tournament becomes one experiment (variant `main`) whose agents are the entrants, seated
by `rotation` (experiments/runner.py): in a block of n games (n entrants) every entrant takes every seat of the
role order once, all under the block's deal. It is played as the experiment's study is (`TournamentStudy`: the
same lanes, lock and resume) and measured by its leaderboard. See docs/tournaments.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from avalon_agents.errors import field_error
from avalon_agents.experiments.config import (
    COMMAND_KEYS, SERIES_STRIDE, Experiment, line_of, check_command, check_keys, read_config,
)
from avalon_agents.experiments.runner import ExperimentStudy
from avalon_agents.experiments.study import Health, Outcome, Study, health_lines

VARIANT = "main"
DEFAULT_BLOCKS = 10
NOT_HERE = ("agents", "sides", "roles", "lineup", "rotation", "schedule", "games_per_series", "variants", "grid",
            "paper")
"""Experiment keys a tournament sets itself (the seating, the games) or has no use for (variants)."""
RENAMED = {"agents": "entrants", "rotation": "entrants", "games_per_series": "blocks"}


def tournament_experiment(raw: dict[str, Any]) -> Experiment:
    """The experiment a tournament config plays. Raises ValueError or ValidationError (with the tournament's
    own field names)."""
    for key in NOT_HERE:
        if key in raw:
            raise ValueError(f"{key}: not a tournament key (a tournament seats its entrants itself: entrants, "
                             "blocks, series; see docs/tournaments.md)")
    entrants = raw.get("entrants")
    if not isinstance(entrants, dict) or len(entrants) < 2:
        raise ValueError("entrants: at least two, each `name: {kind: ...}` as an experiment's agents")
    blocks = raw.get("blocks", DEFAULT_BLOCKS)
    if not isinstance(blocks, int) or isinstance(blocks, bool) or not 1 <= blocks <= SERIES_STRIDE:
        raise ValueError(f"blocks: a whole number from 1 to {SERIES_STRIDE}, got {blocks!r}")
    config = {k: v for k, v in raw.items() if k not in ("entrants", "blocks")}
    config.update(agents=entrants, rotation=list(entrants), games_per_series=blocks * len(entrants))
    return Experiment.model_validate(config)


def load_tournament(path: str | Path) -> dict[str, Experiment]:
    """{"main": the experiment} of a tournament config file. Raises ValueError naming the file, the line and
    the field."""
    path = Path(path)
    raw, node = read_config(path)
    check_command(raw, path, "tournament")
    check_keys(raw, path, node, [*(k for k in Experiment.model_fields if k not in NOT_HERE), *RENAMED.values()],
               refused_later=NOT_HERE)
    try:
        return {VARIANT: tournament_experiment(raw)}
    except ValidationError as exc:
        loc = tuple(exc.errors()[0]["loc"])
        loc = (RENAMED.get(str(loc[0]), loc[0]), *loc[1:]) if loc else loc
        line = line_of(node, loc)
        message = field_error(exc)
        for old, new in RENAMED.items():
            message = message.replace(f"{old}.", f"{new}.").replace(f"{old}:", f"{new}:")
        raise ValueError(f"{path}:{line}: {message}" if line else f"{path}: {message}") from None
    except ValueError as exc:
        key = str(exc).split(":")[0]
        line = line_of(node, (key,)) if key in raw else None
        raise ValueError(f"{path}:{line}: {exc}" if line else f"{path}: {exc}") from None


@dataclass
class TournamentStudy(ExperimentStudy):
    """`avalon tournament` as a study: the experiment's lanes (its series), measured by the leaderboard
    (openskill ratings, win rates per entrant and role, head to head), written to OUT/tournament/."""

    command: ClassVar[str] = "tournament"
    config_keys: ClassVar[tuple[str, ...]] = COMMAND_KEYS["tournament"]
    what: ClassVar[str] = "tournament"
    result: ClassVar[dict[str, str]] = {"Leaderboard": "tournament/leaderboard.csv",
                                        "Head to head": "tournament/head_to_head.csv"}
    unhealthy = Study.unhealthy

    @staticmethod
    def loader(config: Path) -> dict[str, Experiment]:
        return load_tournament(config)

    def measure(self, out: Path) -> dict[str, Any]:
        from avalon_agents.analysis.load import load_run
        from avalon_agents.analysis.tournaments.leaderboard import leaderboard
        from avalon_agents.experiments.results import provenance

        return {"board": leaderboard(load_run(out)), "provenance": provenance(out)}

    def health(self, out: Path, measured: dict[str, Any]) -> Health:
        """The one variant's health, as the whole tournament's."""
        from avalon_agents.experiments.results import variant_health

        return {"": found for found in variant_health(out, self.variants).values()}

    def report(self, out: Path, measured: dict[str, Any], health: Health) -> dict[str, Path]:
        from avalon_agents.analysis.tournaments.leaderboard import write

        return write(measured["board"], out / "tournament", self.name, measured["provenance"],
                     "; ".join(health_lines(health)))

    def lines(self, outcome: Outcome) -> list[str]:
        from avalon_agents.analysis.tournaments.leaderboard import format_leaderboard

        return [outcome.measured["provenance"], format_leaderboard(outcome.measured["board"]),
                *health_lines(outcome.health), f"leaderboard: {outcome.files['markdown']} (CSV, ratings.png beside it)"]

    def json(self, outcome: Outcome) -> dict[str, Any]:
        board = outcome.measured["board"]
        return {"out": outcome.out, "provenance": outcome.measured["provenance"], "games": board.games,
                "leaderboard": board.table, "ratings": board.ratings, "win_rates": board.win_rates,
                "head_to_head": board.head_to_head, "health": health_lines(outcome.health),
                "aborted": outcome.aborted, "files": outcome.files}
