"""How every study's command plays it (`carry_out`: the progress bar, the run log, the report, the exit code), and
the paired studies' commands: `avalon redteam` and `avalon bias`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from avalon_agents import logs
from avalon_agents.cli.base import (
    PAIRS,
    OverBudget,
    RunUnhealthy,
    cli,
    echo_json,
    embedded_notice,
    model_options,
    one_line_errors,
    study_options,
)
from avalon_agents.llm.settings import ModelSettings

if TYPE_CHECKING:
    from avalon_agents.experiments.spend import Budget
    from avalon_agents.experiments.study import Study

REPLAYED = "stopped; the unfinished game is replayed on resume"


def carry_out(study: Study, out: Path, *, as_json: bool = False, max_games: int | None = None,
              budget: Budget | None = None, backend: str = "local", address: str | None = None,
              pace: tuple[float, float | None] | None = None) -> None:
    """What every study's command does once its config is loaded and checked: play the study under `out` with a
    progress bar on stderr (`_play`; `pace`: the LLM calls and seconds a game is planned to take; diagnostics to
    OUT/run.log; a model or worker it cannot use is one line, exit 3), conclude it (measure, health, report), print its lines or its JSON, and exit as the scheduler's verdict says
    (3: not a result; 4: stopped by the budget)."""
    from avalon_agents.experiments import scheduler

    with logs.run_log(out):
        with one_line_errors(out, stopped=REPLAYED):
            aborted = _play(study, out, max_games, budget, backend, address, as_json, pace)
        with one_line_errors(out, missing="out"):
            outcome = asyncio.run(scheduler.conclude(study, out, aborted, budget))
    if as_json:
        echo_json(study.json(outcome))
    else:
        for line in study.lines(outcome):
            click.echo(line)
    found = scheduler.verdict(study, outcome)
    if found is not None:
        code, line = found
        raise (OverBudget if code == OverBudget.exit_code else RunUnhealthy)(line)


def _play(study: Study, out: Path, max_games: int | None, budget: Budget | None, backend: str,
          address: str | None, as_json: bool = False,
          pace: tuple[float, float | None] | None = None) -> list[str]:
    """Play the study's unfinished games with a progress bar (cli.progress: per round, with the calls, their
    pace and the time left; a run of one game, or -v, streams its transcript). Returns the games aborted."""
    from avalon_agents.cli.live import is_terminal
    from avalon_agents.cli.progress import run_board
    from avalon_agents.experiments import scheduler
    from avalon_agents.records.run_dir import is_done

    total, done = scheduler.total(study, out), scheduler.finished(study, out)
    if backend == "ray":
        from avalon_agents.experiments.ray_backend import run_with_ray

        with Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
                      TimeRemainingColumn(), console=Console(stderr=True)) as progress:
            overall = progress.add_task("all games (ray)", total=total, completed=done)
            run_with_ray(study, out, max_games=max_games, address=address,
                         on_progress=lambda n: progress.update(overall, completed=n))
        return []
    to_play = sum(cap if cap is not None else sum(not is_done(p) for p in lane.paths)
                  for lane, cap in scheduler.planned(study, out, max_games))
    context = click.get_current_context(silent=True)
    verbose = bool(context and context.params.get("verbose"))
    stream = not as_json and (verbose or (to_play == 1 and is_terminal(sys.stdout)))
    board = run_board(total, done, to_play, pace, stream)
    with board.progress:
        return asyncio.run(scheduler.play(study, out, max_games=max_games, budget=budget, on_game=board.on_game,
                                          on_start=board.on_start))


def _paired_study(load: Callable[[], tuple[Any, Any]], games: int | None, settings: ModelSettings,
                  out: Path | None, check: bool = False) -> tuple[Any, Any, ModelSettings | None, Path]:
    """What `redteam` and `bias` do before playing: load the config (`load()`: the config and what else its
    loader returns), apply `--games`, check the model, make the run directory (not with `check`). Returns (config,
    the rest, the model override, out); a mistake is one line, exit 2."""
    from avalon_agents.llm import check_reachable

    with one_line_errors(out):
        cfg, rest = load()
        if games is not None:
            cfg = cfg.model_copy(update={"games": games})
        override = settings if settings.model_dump(exclude_defaults=True) else None
        if settings.spec:
            check_reachable(settings.spec)
        embedded_notice(settings.spec or (cfg.model.spec if cfg.model else None))  # the study's LLM seats' model
        out = out or Path("runs") / cfg.name
        if not check:
            out.mkdir(parents=True, exist_ok=True)
    return cfg, rest, override, out


@cli.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--attacks", "attack_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="A YAML file of your own attacks (the shape of avalon_agents/data/attacks.yaml); they join the run. "
                   "Repeatable.")
@click.option("--games", type=PAIRS, default=None, help="Paired games per attack (default: the config's).")
@model_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory (default: runs/NAME).")
@study_options
def redteam(config: Path, attack_files: tuple[Path, ...], games: int | None, settings: ModelSettings,
            out: Path | None, check: bool, as_json: bool) -> None:
    """Run a red-team suite: per attack, paired games from one seed with and without the attacker's wrapper.

    Prints per attack the share of pairs whose next decision (the listeners' votes or team, the assassination,
    the extractor's reading, a judge's label) moved toward the attack's goal, judged from the records, with its
    95% Wilson interval, and the forged lines found in a prompt outside the host's quotes (must be 0). Writes
    OUT/redteam.csv, OUT/pairs.csv and OUT/redteam.md (with provenance). Finished games are kept on a rerun; a
    changed defended agent, attacker or model is refused. --check: validate and print the plan only.

    \b
    Examples:
      avalon redteam experiments/redteam.yaml --model scripted --games 2
      avalon redteam experiments/redteam.yaml --attacks my_attacks.yaml
    """
    from avalon_agents.experiments.redteam import RedTeamSuite, load_redteam

    cfg, attacks, override, out = _paired_study(lambda: load_redteam(config, attack_files), games, settings, out,
                                                check)
    click.echo(f"red team {cfg.name}: {len(attacks)} attack(s) x {cfg.games} paired game(s), attacker seat "
               f"{cfg.attacker.seat}, {cfg.games * (1 + len(attacks))} games -> {out}", err=as_json)
    if check:
        if as_json:  # the plan is the command's result
            echo_json({"name": cfg.name, "attacks": list(attacks), "pairs": cfg.games,
                       "games": cfg.games * (1 + len(attacks)), "run_dir": out})
        return
    carry_out(RedTeamSuite(cfg, attacks, override, config), out, as_json=as_json)


@cli.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--games", type=PAIRS, default=None, help="Paired games per list (default: the config's).")
@model_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory (default: runs/NAME).")
@study_options
def bias(config: Path, games: int | None, settings: ModelSettings, out: Path | None, check: bool,
         as_json: bool) -> None:
    """Measure order effects: per studied order, paired games from one seed that differ in that order only.

    Each pair plays a seed once with every listing order fixed and once with one list (`players`: seats in
    prose; `options`: the answers offered; `speeches`: a proposal's speeches as summarized; `seats`: which
    agent sits where, on the same deal) reversed or shuffled. Prints, per list, agent and measure (approvals,
    first-vote approvals, proposals' picks from the low seats, wins), the rate in each condition and the
    difference with its 95% interval, p-value and Benjamini-Hochberg q-value, and the games' health. Writes
    OUT/bias.csv, OUT/pairs.csv, OUT/bias.md and OUT/bias.json (with provenance). Resumable: finished games are
    kept; a changed config is refused. Exit 3 if unhealthy. --check: validate and print the plan only.

    \b
    Examples:
      avalon bias experiments/bias.yaml --games 100
      avalon bias experiments/bias_embedded.yaml --games 1
    """
    from avalon_agents.experiments.bias import OrderBias, load_bias

    cfg, _, override, out = _paired_study(lambda: (load_bias(config), None), games, settings, out, check)
    total = cfg.games * (1 + len(cfg.lists))
    click.echo(f"order bias {cfg.name}: {len(cfg.lists)} list(s) ({', '.join(cfg.lists)}) {cfg.treatment} x "
               f"{cfg.games} pair(s), {total} games -> {out}", err=as_json)
    if check:
        if as_json:  # the plan is the command's result
            echo_json({"name": cfg.name, "lists": list(cfg.lists), "treatment": cfg.treatment, "pairs": cfg.games,
                       "games": total, "run_dir": out})
        return
    carry_out(OrderBias(cfg, override, config), out, as_json=as_json)
