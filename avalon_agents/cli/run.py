"""`avalon run` and `avalon tournament`: an experiment config played by the resumable runner, and its results."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from avalon_agents import logs
from avalon_agents.cli.base import (
    OverBudget,
    RunUnhealthy,
    cli,
    echo_json,
    embedded_notice,
    model_options,
    one_line_errors,
    runner_options,
    study_options,
)
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

    variants, out, override, spend = _prepare(load_experiments, config, settings, out, max_games, check, as_json,
                                              prices_file, budget_usd, backend)
    if check:
        return
    aborted = _play(variants, out, override, max_games, backend, address, config, spend.budget)
    _report_run(out, variants, aborted, as_json=as_json, prices=spend.prices)
    spend.stop_if_over()


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

    from avalon_agents.analysis.load import load_run
    from avalon_agents.analysis.tournaments.leaderboard import format_leaderboard, leaderboard, write
    from avalon_agents.experiments.results import provenance, variant_health
    from avalon_agents.experiments.tournament import load_tournament

    variants, out, override, spend = _prepare(load_tournament, config, settings, out, max_games, check, as_json,
                                              prices_file, budget_usd, backend)
    if check:
        return
    aborted = _play(variants, out, override, max_games, backend, address, config, spend.budget)
    with one_line_errors(out, missing="out"):
        board = leaderboard(load_run(out))
    origin = provenance(out)
    found = variant_health(out, variants)
    health = [line + ("  UNHEALTHY: " + "; ".join(problems) if problems else "") for line, problems in found.values()]
    unhealthy = [name for name, (_, problems) in found.items() if problems]
    with one_line_errors(out):
        paths = write(board, out / "tournament", next(iter(variants.values())).name, origin, "; ".join(health))
    if as_json:
        echo_json({"out": out, "provenance": origin, "games": board.games, "leaderboard": board.table,
                   "ratings": board.ratings, "win_rates": board.win_rates, "head_to_head": board.head_to_head,
                   "health": health, "aborted": aborted, "files": paths})
    else:
        click.echo(origin)
        click.echo(format_leaderboard(board))
        for line in health:
            click.echo(line)
        click.echo(f"leaderboard: {paths['markdown']} (CSV, ratings.png beside it)")
    spend.stop_if_over()
    if unhealthy:
        raise RunUnhealthy("unhealthy tournament, not a result (see the health line above)")
    if aborted:
        raise RunUnhealthy(f"{len(aborted)} game(s) aborted (no progress, or too many of their calls failed), not "
                           "counted; rerun to replay them")


class Spend:
    """A run's prices and budget, as the command line and the config set them."""

    def __init__(self, prices: Any, budget: Any | None) -> None:
        self.prices = prices
        self.budget = budget

    def stop_if_over(self) -> None:
        """Exit 4 with one line if the budget stopped the run."""
        if self.budget is not None and self.budget.stopped:
            raise OverBudget(self.budget.stopped)


def _prepare(load: Callable, config: Path, settings: ModelSettings, out: Path | None, max_games: int | None,
             check: bool, as_json: bool = False, prices_file: Path | None = None, budget_usd: float | None = None,
             backend: str = "local") -> tuple[dict, Path, ModelSettings | None, Spend]:
    """Load a config (run or tournament), check it and the run directory, print the plan: (variants, out, the
    model override, the prices and budget)."""
    from avalon_agents.prices import load_prices

    with one_line_errors(out):
        variants = load(config)  # a mistake in the config is one line before any model client is loaded
        from avalon_agents.experiments.plan import dollars, plan_lines, variant_models
        from avalon_agents.experiments.spend import Budget
        from avalon_agents.llm import check_reachable

        first = next(iter(variants.values()))
        out = out or Path("runs") / first.name
        override = settings if settings.model_dump(exclude_defaults=True) else None
        embedded_notice(*(spec for exp in variants.values() for spec in variant_models(exp, override)))
        prices = load_prices(prices_file, {k: v.model_dump() for k, v in (first.prices or {}).items()})
        budget = None
        if budget_usd is not None:
            if not budget_usd > 0:  # nan too
                raise ValueError(f"budget-usd: must be more than 0, got {budget_usd:g}")
            if backend != "local":
                raise ValueError("budget-usd: the budget is kept by the local backend; leave out --backend ray")
            estimates = {}
            for name, exp in variants.items():
                usd, missing = dollars(variant_models(exp, override), prices)
                if usd is None:
                    raise ValueError(f"budget-usd: no price for {', '.join(missing)}, so no budget can be kept (give "
                                     "one with prices: in the config or --prices FILE)")
                estimates[name] = usd / exp.games
            budget = Budget(budget_usd, prices, estimates)
        if settings.spec:
            check_reachable(settings.spec)
        if not check:
            from avalon_agents.experiments.runner import preflight

            preflight(out, variants, override)
            out.mkdir(parents=True, exist_ok=True)
            if budget is not None:
                budget.count_finished(out, variants)
    for line in plan_lines(variants, out, override, prices):
        click.echo(line, err=as_json)
    if budget is not None:
        click.echo(f"budget: ${budget.limit_usd:,.2f}, ${budget.spent:,.2f} spent by the finished games", err=as_json)
    return variants, out, override, Spend(prices, budget)


REPLAYED = "stopped; the unfinished game is replayed on resume"


def _play(variants: dict, out: Path, override: ModelSettings | None, max_games: int | None, backend: str,
          address: str | None, config: Path, budget: Any | None = None) -> list[str]:
    """Play a run's unfinished games with a progress bar (run and tournament); returns the aborted games."""
    from avalon_agents.experiments import run_experiment
    from avalon_agents.experiments.runner import finished_games, game_usage

    total = sum(exp.games for exp in variants.values())
    done = finished_games(variants, out)
    err = Console(stderr=True)
    columns = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
               TextColumn("{task.fields[tokens]:>10,} tokens"))
    spent = {"tokens": 0}
    if backend == "ray":
        from avalon_agents.experiments.ray_backend import run_with_ray

        with Progress(*columns[:-1], console=err) as progress:
            overall = progress.add_task("all games (ray)", total=total, completed=done)
            with logs.run_log(out):
                with one_line_errors(out, stopped=REPLAYED):
                    run_with_ray(variants, out, model=override, max_games=max_games, source=config,
                                 address=address, on_progress=lambda n: progress.update(overall, completed=n))
        return []
    with Progress(*columns, console=err) as progress:
        overall = progress.add_task("all games", total=total, completed=done, tokens=0)
        bars: dict[str, int] = {}

        def on_game(job, n, path) -> None:
            u = game_usage(path)
            spent["tokens"] += u["input_tokens"] + u["output_tokens"]
            if job.label not in bars:
                bars[job.label] = progress.add_task(job.label, total=job.experiment.games_per_series,
                                                    completed=n - 1, tokens=0)
            progress.update(bars[job.label], completed=n, tokens=spent["tokens"])
            progress.update(overall, advance=1, tokens=spent["tokens"])

        with logs.run_log(out):
            with one_line_errors(out, stopped=REPLAYED):
                aborted = asyncio.run(run_experiment(variants, out, model=override, max_games=max_games,
                                                     source=config, on_game=on_game, budget=budget))
    return aborted


def _report_run(out: Path, variants: dict, aborted: list[str] = (), as_json: bool = False,
                prices: Any | None = None) -> None:
    """The results table, each variant's health and cost beside it (cost also in OUT/cost.csv), and exit code 3
    when a variant is over its limits."""
    from avalon_agents.analysis.load import game_dirs
    from avalon_agents.experiments import format_table, results_table
    from avalon_agents.experiments.results import (
        figures_table,
        format_figures,
        provenance,
        variant_health,
        variant_usage,
    )
    from avalon_agents.experiments.spend import cost_line, cost_rows, write_cost
    from avalon_agents.prices import Prices

    table, figures = results_table(out), figures_table(out)
    usages = variant_usage(out, variants)
    health = variant_health(out, variants, usages)
    games = {name: len(game_dirs(out / name)) for name in usages}
    costs = cost_rows(usages, prices or Prices.shipped(), games)
    write_cost(out, costs)
    if not table.empty:
        usd = {name: (None if any(r["usd"] is None for r in costs if r["variant"] == name) else
                      sum(r["usd"] for r in costs if r["variant"] == name)) for name in games}
        table["usd"] = table["variant"].map(usd)
        table["usd_per_game"] = [u / games[v] if u is not None and games.get(v) else None
                                 for v, u in zip(table["variant"], table["usd"])]
    unhealthy = [name for name, (_, problems) in health.items() if problems]
    if as_json:
        rows = json.loads(table.to_json(orient="records")) if not table.empty else []
        paper = json.loads(figures.to_json(orient="records")) if not figures.empty else []
        click.echo(json.dumps({"out": str(out), "provenance": provenance(out), "results": rows, "paper_figures": paper,
                               "aborted": list(aborted),
                               "health": {name: {"line": line, "problems": problems}
                                          for name, (line, problems) in health.items()},
                               "cost": costs}))
    else:
        click.echo(provenance(out))
        click.echo(format_table(table))
        if not figures.empty:
            click.echo(format_figures(figures))
        for name, (line, problems) in health.items():
            mark = "  UNHEALTHY: " + "; ".join(problems) if problems else ""
            click.echo(f"{name}: {line}{mark}")
        for name in usages:
            click.echo(cost_line(name, costs))
        for line in aborted:
            click.echo(f"aborted: {line}")
        click.echo(f"run directory: {out}")
    if unhealthy:
        raise RunUnhealthy(f"unhealthy variant(s), not results: {', '.join(unhealthy)} (see the health lines above)")
    if aborted:
        raise RunUnhealthy(f"{len(aborted)} game(s) aborted (no progress, or too many of their calls failed), not "
                           "counted; rerun to replay them")
