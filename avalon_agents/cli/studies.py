"""How every study's command prepares it (`prepare`: the plan `--check` prints, the budget of `--budget-usd`, the
preflight) and plays it (`carry_out`: the progress bar, the run log, the report, the exit code); the paired
studies' commands, `avalon redteam` and `avalon bias`; and `avalon study NAME CONFIG`, the command of every study
type in `STUDIES` (a plugin's among them)."""

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
    runner_options,
    spend_options,
    study_options,
)
from avalon_agents.llm.settings import ModelSettings

if TYPE_CHECKING:
    from avalon_agents.experiments.spend import Budget
    from avalon_agents.experiments.study import Study

REPLAYED = "stopped; the unfinished game is replayed on resume"


def carry_out(study: Study, out: Path, *, as_json: bool = False, max_games: int | None = None,
              budget: Budget | None = None, backend: str = "local", address: str | None = None,
              pace: tuple[float, float | None] | None = None, play_with: Callable[..., list[str]] | None = None,
              stopped: str = REPLAYED) -> None:
    """What every study's command does once it is prepared (`prepare`): play the study under `out` with a progress
    bar on stderr (`_play`, or `play_with(study, out, max_games, budget)`: a command's own display, `avalon
    play`'s; `pace`: the LLM calls and seconds a game is planned to take; diagnostics to OUT/run.log; a model or
    worker it cannot use is one line, exit 3, saying `stopped`), conclude it (measure, health, report), print its
    lines or its JSON, and exit as the scheduler's verdict says (3: not a result; 4: stopped by the budget)."""
    from avalon_agents.experiments import scheduler

    with logs.run_log(out):
        with one_line_errors(out, stopped=stopped):
            aborted = (play_with(study, out, max_games, budget) if play_with is not None else
                       _play(study, out, max_games, budget, backend, address, as_json, pace))
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


def prepare(study: Study, out: Path | None, *, check: bool, as_json: bool = False, prices: Any = None,
            budget_usd: float | None = None, backend: str = "local", head: dict[str, Any] | None = None
            ) -> tuple[Budget | None, dict[str, Any]]:
    """The one preparation of every study's command once its config is loaded (call it inside one_line_errors):
    its plan (`Study.plan`: games, calls, tokens, dollars, the least time), the budget of --budget-usd (refused in
    one line: a limit not above 0, a model without a price, the Ray backend), and unless --check the preflight
    (its models, OUT free and of the same config), OUT made and the dollars of its finished games counted (out
    None: a study without a directory, `avalon play` without --out, plans and budgets only). Then
    the plan is printed (on stderr with --json; with --check --json, `head` and the plan are the one JSON object
    on stdout). Returns (the budget or None, the plan)."""
    from avalon_agents.experiments import scheduler
    from avalon_agents.experiments.spend import make_budget
    from avalon_agents.prices import load_prices

    prices = prices if prices is not None else load_prices(None)
    found = study.plan(out, prices)
    if budget_usd is not None and backend != "local":
        raise ValueError("budget-usd: the budget is kept by the local backend; leave out --backend ray")
    budget = make_budget(budget_usd, prices, lambda: study.estimates(prices))
    if not check and out is not None:
        scheduler.preflight(study, out)
        out.mkdir(parents=True, exist_ok=True)
        if budget is not None:
            budget.count_finished(scheduler.games(study, out))
    for line in study.plan_lines(found):
        click.echo(line, err=as_json)
    if budget is not None and out is not None:
        click.echo(f"budget: ${budget.limit_usd:,.2f}, ${budget.spent:,.2f} spent by the finished games", err=as_json)
    if check and as_json:  # the plan is the command's result
        echo_json({**(head or {}), **found, "budget_usd": budget_usd})
    return budget, found


def pace_of(found: dict[str, Any]) -> tuple[float, float | None]:
    """(LLM calls, least seconds) a game is planned to take (the plan's): the progress bar's time left until the
    run has measured its own pace."""
    games = found["games"] or 1
    seconds = found["least_seconds"]
    return found["calls"] / games, None if seconds is None else seconds / games


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
                  out: Path | None) -> tuple[Any, Any, ModelSettings | None, Path]:
    """What `redteam` and `bias` do first: load the config (`load()`: the config and what else its loader
    returns), apply `--games`, check the model. Returns (config, the rest, the model override, out); call it
    inside one_line_errors."""
    from avalon_agents.llm import check_reachable

    cfg, rest = load()
    if games is not None:
        cfg = cfg.model_copy(update={"games": games})
    override = settings if settings.model_dump(exclude_defaults=True) else None
    if settings.spec:
        check_reachable(settings.spec)
    embedded_notice(settings.spec or (cfg.model.spec if cfg.model else None))  # the study's LLM seats' model
    return cfg, rest, override, out or Path("runs") / cfg.name


def paired_command(command: Callable) -> Callable:
    """A paired study's command (`redteam`, `bias`): CONFIG, the model options, --out, --prices and --budget-usd
    and every study's options."""
    for option in (study_options, spend_options(),
                   click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
                                help="Run directory (default: runs/NAME)."),
                   model_options):
        command = option(command)
    return command


def _carry_out_planned(study: Study, out: Path, head_line: str, head: dict[str, Any], check: bool, as_json: bool,
                       prices_file: Path | None, budget_usd: float | None, **options: Any) -> None:
    """Print the study's line, prepare it (its plan and budget) and, without --check, carry it out."""
    from avalon_agents.prices import load_prices

    click.echo(head_line, err=as_json)
    with one_line_errors(out):
        budget, found = prepare(study, out, check=check, as_json=as_json, prices=load_prices(prices_file),
                                budget_usd=budget_usd, head=head, backend=options.get("backend", "local"))
    if not check:
        carry_out(study, out, as_json=as_json, budget=budget, pace=pace_of(found), **options)


@cli.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--attacks", "attack_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="A YAML file of your own attacks (the shape of avalon_agents/data/attacks.yaml); they join the run. "
                   "Repeatable.")
@click.option("--games", type=PAIRS, default=None, help="Paired games per attack (default: the config's).")
@paired_command
def redteam(config: Path, attack_files: tuple[Path, ...], games: int | None, settings: ModelSettings,
            out: Path | None, prices_file: Path | None, budget_usd: float | None, check: bool,
            as_json: bool) -> None:
    """Run a red-team suite: per attack, paired games from one seed with and without the attacker's wrapper.

    Prints per attack the share of pairs whose next decision (the listeners' votes or team, the assassination,
    the extractor's reading, a judge's label) moved toward the attack's goal, judged from the records, with its
    95% Wilson interval, and the forged lines found in a prompt outside the host's quotes (must be 0). Writes
    OUT/redteam.csv, OUT/pairs.csv and OUT/redteam.md (with provenance). Finished games are kept on a rerun; a
    changed defended agent, attacker or model is refused. The table is any the config deals (roles, assassin,
    lady_of_the_lake, as in avalon run). --check: validate and print the plan (games, calls, tokens, dollars,
    time) only; --budget-usd: start no game that would take the suite over it (exit 4).

    \b
    Examples:
      avalon redteam experiments/redteam.yaml --model scripted --games 2
      avalon redteam experiments/redteam.yaml --attacks my_attacks.yaml
      avalon redteam experiments/redteam.yaml --model openai:gpt-4o-mini --check
    """
    from avalon_agents.experiments.redteam import RedTeamSuite, load_redteam

    with one_line_errors(out):
        cfg, attacks, override, out = _paired_study(lambda: load_redteam(config, attack_files), games, settings,
                                                    out)
    total = cfg.games * (1 + len(attacks))
    _carry_out_planned(RedTeamSuite(cfg, attacks, override, config), out,
                       f"red team {cfg.name}: {len(attacks)} attack(s) x {cfg.games} paired game(s), attacker seat "
                       f"{cfg.attacker.seat}, {total} games -> {out}",
                       {"name": cfg.name, "attacks": list(attacks), "pairs": cfg.games, "games": total},
                       check, as_json, prices_file, budget_usd)


@cli.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--games", type=PAIRS, default=None, help="Paired games per list (default: the config's).")
@paired_command
def bias(config: Path, games: int | None, settings: ModelSettings, out: Path | None, prices_file: Path | None,
         budget_usd: float | None, check: bool, as_json: bool) -> None:
    """Measure order effects: per studied order, paired games from one seed that differ in that order only.

    Each pair plays a seed once with every listing order fixed and once with one list (`players`: seats in
    prose; `options`: the answers offered; `speeches`: a proposal's speeches as summarized; `seats`: which
    agent sits where, on the same deal) reversed or shuffled. Prints, per list, agent and measure (approvals,
    first-vote approvals, proposals' picks from the low seats, wins), the rate in each condition and the
    difference with its 95% interval, p-value and Benjamini-Hochberg q-value, and the games' health. Writes
    OUT/bias.csv, OUT/pairs.csv, OUT/bias.md and OUT/bias.json (with provenance). Resumable: finished games are
    kept; a changed config is refused. The table is any the config deals (roles, assassin, lady_of_the_lake).
    Exit 3 if unhealthy. --check: validate and print the plan (games, calls, tokens, dollars, time) only;
    --budget-usd: start no game that would take the study over it (exit 4).

    \b
    Examples:
      avalon bias experiments/bias.yaml --games 100
      avalon bias experiments/bias_embedded.yaml --games 1
      avalon bias experiments/bias.yaml --model openai:gpt-4o-mini --budget-usd 2
    """
    from avalon_agents.experiments.bias import OrderBias, load_bias

    with one_line_errors(out):
        cfg, _, override, out = _paired_study(lambda: (load_bias(config), None), games, settings, out)
    total = cfg.games * (1 + len(cfg.lists))
    _carry_out_planned(OrderBias(cfg, override, config), out,
                       f"order bias {cfg.name}: {len(cfg.lists)} list(s) ({', '.join(cfg.lists)}) {cfg.treatment} x "
                       f"{cfg.games} pair(s), {total} games -> {out}",
                       {"name": cfg.name, "lists": list(cfg.lists), "treatment": cfg.treatment, "pairs": cfg.games,
                        "games": total}, check, as_json, prices_file, budget_usd)


@cli.command("study")
@click.argument("name", metavar="NAME")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@model_options
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run directory (default: runs/<the study's name>).")
@runner_options
@study_options
def study(name: str, config: Path, settings: ModelSettings, out: Path | None, max_games: int | None, backend: str,
          address: str | None, prices_file: Path | None, budget_usd: float | None, check: bool,
          as_json: bool) -> None:
    """Play any registered study type (experiments.studies.STUDIES: the built-in ones and a plugin's) from its
    CONFIG: NAME is its command. The config's own `plugins:` (and --plugin) are loaded first, so a study a
    plugin registers is played as `avalon study NAME CONFIG`. Like every study: resumable (same run directory,
    lock and resume rules as avalon run), --check prints the plan (games, calls, tokens, dollars, time),
    --budget-usd starts no game that would take it over, exit 3 when unhealthy, 4 when the budget stopped it.

    \b
    Examples:
      avalon study mirrored my_mirror.yaml --plugin my_study.py
      avalon study mirrored my_mirror.yaml --check --json
      avalon study redteam experiments/redteam.yaml --model scripted --check    (as avalon redteam)
    """
    from avalon_agents.experiments.config import read_config
    from avalon_agents.experiments.studies import STUDIES

    with one_line_errors(out):
        read_config(config)  # its plugins first: they may register the study
        kind = STUDIES[name]
        override = settings if settings.model_dump(exclude_defaults=True) else None
        made = kind.load(config, override)
        out = out or Path("runs") / made.name
    _carry_out_planned(made, out, f"{name} {made.name}: {config} -> {out}", {"name": made.name},
                       check, as_json, prices_file, budget_usd, max_games=max_games, backend=backend,
                       address=address)
