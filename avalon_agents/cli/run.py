"""`avalon run` and `avalon tournament`: an experiment config loaded as its study, checked and planned (`--check`:
games, calls, tokens, dollars, time), then played by the scheduler (`cli.studies.carry_out`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from avalon_agents.cli.base import (
    cli,
    embedded_notice,
    model_options,
    one_line_errors,
    runner_options,
    study_options,
)
from avalon_agents.cli.studies import carry_out, pace_of, prepare
from avalon_agents.llm.settings import ModelSettings


def runner_command(out_help: str) -> Callable[[Callable], Callable]:
    """A command that plays a config with the experiment runner (`run`, `tournament`): CONFIG, the model
    options, --out (`out_help`), the runner's options and every study's."""

    def decorate(command: Callable) -> Callable:
        for option in (study_options, runner_options,
                       click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
                                    help=out_help),
                       model_options, click.argument("config", type=click.Path(dir_okay=False, path_type=Path)),
                       cli.command()):
            command = option(command)
        return command

    return decorate


@runner_command("Run directory (default: runs/<experiment name>).")
def run(config: Path, check: bool, settings: ModelSettings, out: Path | None, max_games: int | None, backend: str,
        address: str | None, prices_file: Path | None, budget_usd: float | None, as_json: bool) -> None:
    """Run an experiment: every variant x series x game of CONFIG, resumable.

    Rerunning the same command skips finished games and restarts an unfinished one from its start, answering
    again from the records the calls it had already paid for; a killed run loses no finished game. --check
    prints the plan: games, calls, tokens, dollars and the least time the models' rate limits allow. At the
    end it prints win rates per variant and side with 95% Wilson CIs, mean calls and tokens per game, and each
    variant's health and cost (also in OUT/cost.csv). The model options given here (--model, --temperature,
    ...) are laid over every agent's and module's settings (--model scripted: a smoke run; --model
    replay:RUN_DIR: every answer from a finished run's records). Rate limits are learned from the provider;
    a 429 is waited out, never a failed call. Diagnostics go to OUT/run.log.

    \b
    Examples:
      avalon run experiments/quickstart.yaml
      avalon run --check experiments/paper/table2.yaml
      avalon run experiments/paper/table7.yaml --model openai:gpt-4o-mini --model-kwarg seed=1
      avalon run experiments/quickstart.yaml --model scripted --max-games 2 --out /tmp/smoke
      avalon run experiments/paper/table2.yaml --model openai:gpt-4o-mini --budget-usd 5
      avalon run my_ablation.yaml --plugin my_modules.py
      avalon run experiments/paper/table8.yaml --backend ray --address ray://head:10001
    """

    from avalon_agents.experiments import load_experiments
    from avalon_agents.experiments.runner import ExperimentStudy

    study, out, budget, found = _prepare(ExperimentStudy, load_experiments, config, settings, out, check, as_json,
                                         prices_file, budget_usd, backend)
    if check:
        return
    carry_out(study, out, as_json=as_json, max_games=max_games, budget=budget, backend=backend, address=address,
              pace=pace_of(found))


@runner_command("Run directory (default: runs/<tournament name>); the leaderboard goes to OUT/tournament/.")
def tournament(config: Path, check: bool, settings: ModelSettings, out: Path | None, max_games: int | None,
               backend: str, address: str | None, prices_file: Path | None, budget_usd: float | None,
               as_json: bool) -> None:
    """Play a tournament: CONFIG's entrants against each other, every entrant in every role equally often,
    then rate them (openskill) and print the leaderboard.

    Resumable like `avalon run` (same run directory, lock and resume rules). Writes OUT/tournament/:
    leaderboard.csv, ratings.csv, win_rates.csv, head_to_head.csv, ratings.png and leaderboard.md. Each game
    is an ordinary game directory (`avalon analyze OUT` works) whose seating.json says which entrant sat where.
    See docs/tournaments.md.

    \b
    Examples:
      avalon tournament experiments/tournament_bots.yaml
      avalon tournament my_tournament.yaml --max-games 20 --out /tmp/smoke
    """

    from avalon_agents.experiments.tournament import TournamentStudy, load_tournament

    study, out, budget, found = _prepare(TournamentStudy, load_tournament, config, settings, out, check, as_json,
                                         prices_file, budget_usd, backend)
    if check:
        return
    carry_out(study, out, as_json=as_json, max_games=max_games, budget=budget, backend=backend, address=address,
              pace=pace_of(found))


def _prepare(kind: Callable, load: Callable, config: Path, settings: ModelSettings, out: Path | None, check: bool,
             as_json: bool = False, prices_file: Path | None = None, budget_usd: float | None = None,
             backend: str = "local") -> tuple[Any, Path, Any, dict[str, Any]]:
    """Load a config (run or tournament) as a study of `kind`, check it and the run directory, print the plan:
    (the study, out, the budget or None, the plan)."""
    from avalon_agents.prices import load_prices

    with one_line_errors(out):
        variants = load(config)  # a mistake in the config is one line before any model client is loaded
        for exp in variants.values() if not check else ():  # and a missing key, before anything heavy
            exp.check_keys(settings)
        from avalon_agents.experiments.plan import variant_models
        from avalon_agents.llm import check_reachable

        first = next(iter(variants.values()))
        out = out or Path("runs") / first.name
        override = settings if settings.model_dump(exclude_defaults=True) else None
        embedded_notice(*(spec for exp in variants.values() for spec in variant_models(exp, override)))
        prices = load_prices(prices_file, {k: v.model_dump() for k, v in (first.prices or {}).items()})
        study = kind(variants, override, config, prices)
        if settings.spec:
            check_reachable(settings.spec)
        budget, found = prepare(study, out, check=check, as_json=as_json, prices=prices, budget_usd=budget_usd,
                                backend=backend)
    return study, out, budget, found
