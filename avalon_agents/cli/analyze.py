"""`avalon analyze`, `avalon replay`, `avalon calibrate` and `avalon probe-humans`: reading runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from avalon_agents.cli.base import (
    AT_LEAST_1,
    IN_FLIGHT,
    SEEDS,
    ReadsNoConfig,
    check_option,
    cli,
    echo_json,
    json_option,
    logging_options,
    model_options,
    one_line_errors,
    plugin_option,
    run_plugins_option,
    spend_options,
)
from avalon_agents.cli.spending import CALL_BUDGET, kept_within, planned_calls, prices_of
from avalon_agents.llm.settings import ModelSettings

@cli.command(cls=ReadsNoConfig)
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--judge-model", default=None,
              help="Model that judges speeches for the behavior metrics (camouflage, teamwork/confrontation, "
                   "sharing, vacillation), e.g. openai:gpt-4o-mini, local:smollm2 or scripted. Without it those "
                   "metrics are skipped. Judgments are cached under OUT/judgments: a rerun costs nothing.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write metrics/, figures/, metrics.json and report.md (default: RUN_DIR/analysis).")
@click.option("--judge-concurrency", default=4, show_default=True, type=IN_FLIGHT,
              help="Judge calls in flight at once.")
@click.option("--reference", type=click.Choice(["auto", "human", "none"]), default="auto", show_default=True,
              help="human: each role's quest engagement, approve rate, leader self-inclusion, leader approval and "
                   "failure votes beside the same figures over 1,089 human games (paper's six roles); auto: so when "
                   "every game has the paper's six roles.")
@check_option
@spend_options(CALL_BUDGET)
@json_option
@plugin_option
@run_plugins_option("run_dir")
@logging_options
def analyze(run_dir: Path, judge_model: str | None, out: Path | None, judge_concurrency: int, reference: str,
            check: bool, prices_file: Path | None, budget_usd: float | None, as_json: bool) -> None:
    """Analyze a run: outcome and behavior metrics, figures and a report.

    RUN_DIR is a game, a series, an experiment (runs/<name>) or any folder of game directories; only
    finished games are read. Writes every metric as CSV and JSON, the figures as PNG, and report.md showing
    each figure with the numbers behind it; prints the headline table.
    The plugins the run recorded (its run.json) are loaded first, so their metrics and judges count; one line
    says which, and one missing or changed since the run is refused (--no-run-plugins: analyze without them).

    \b
    Examples:
      avalon analyze runs/quickstart
      avalon analyze runs/table2 --judge-model openai:gpt-4o-mini
      avalon analyze runs/smoke --judge-model scripted --out /tmp/report
      avalon analyze runs/table2 --judge-model openai:gpt-4o-mini --check     the judges' calls, tokens, dollars
      avalon analyze runs/table2 --judge-model openai:gpt-4o-mini --budget-usd 2
    """
    from avalon_agents.analysis.paper.report import analyze as run_analysis
    from avalon_agents.analysis.paper.report import headline_text
    from avalon_agents.llm import ClientPool, ModelSettings, check_reachable

    with one_line_errors(out, missing="run-dir"), kept_within():
        judge = budget = None
        if judge_model:
            settings = ModelSettings(spec=judge_model, temperature=0.0)
            check_reachable(settings)
            if check or budget_usd is not None:
                budget = _judges_planned(run_dir, out, settings, check, as_json, prices_file, budget_usd)
                if check:
                    return
            judge = ClientPool(limit=judge_concurrency).get(settings)
            if budget is not None:
                from avalon_agents.experiments.spend import BudgetedClient

                judge = BudgetedClient(judge, budget)
        elif check or budget_usd is not None:
            raise ValueError(f"{'check' if check else 'budget-usd'}: analyze calls a model only to judge speeches: "
                             "give --judge-model")
        with Progress(TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=Console(stderr=True), disable=judge is None) as progress:
            task = progress.add_task("judging", total=None)
            result = run_analysis(run_dir, out, judge=judge, reference=reference,
                                  progress=lambda done, total: progress.update(task, completed=done, total=total))
    from avalon_agents.analysis.paper.report import provenance
    from avalon_agents.records.analysis_dir import report_file

    if as_json:
        echo_json({"run_dir": run_dir, "provenance": provenance(result), "games": len(result.data.games),
                   "headline": result.headline, "tables": result.tables, "files": result.files,
                   "report": report_file(result.out)})
        return
    click.echo(provenance(result))
    click.echo(headline_text(result.headline))
    for row in result.tables["health"].itertuples(index=False):
        click.echo(_health_text(row))
    click.echo(f"{len(result.data.games)} game(s); report: {report_file(result.out)}")


def _judges_planned(run_dir: Path, out: Path | None, settings: ModelSettings, check: bool, as_json: bool,
                    prices_file: Path | None, budget_usd: float | None):
    """`avalon analyze`'s judge calls planned (those its cache does not hold) and printed; the budget, if any."""
    from avalon_agents.analysis.judges.run import Judge
    from avalon_agents.analysis.load import load_run
    from avalon_agents.experiments.plan import judge_cost, judge_plan
    from avalon_agents.records.analysis_dir import analysis_dir, judgments_dir

    cost, cached = judge_cost(Judge(client=None, cache_dir=None).tasks(load_run(run_dir)),
                              judgments_dir(out or analysis_dir(run_dir)), settings.spec)
    return planned_calls(judge_plan(settings, cost, prices := prices_of(prices_file), cached), check, as_json,
                         budget_usd, prices)


@cli.command()
@click.argument("run_or_game_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=True, path_type=Path), default=None,
              help="A folder for index.html and one page per game (default: RUN_OR_GAME_DIR/replay), or, for a "
                   "single game, a file ending in .html for its page alone.")
@json_option
@plugin_option
@run_plugins_option("run_or_game_dir")
@logging_options
def replay(run_or_game_dir: Path, out: Path | None, as_json: bool) -> None:
    """Write replay pages: each finished game as one self-contained HTML file (no network), and an index.

    RUN_OR_GAME_DIR is a game, a series, an experiment or any folder of game directories. Each page shows the
    game as a timeline (seats, proposals and votes, quests, speeches, each seat's module outputs, how each
    decision was read, belief probes), roles hidden until revealed, and a seat filter that shows the game as
    that seat saw it. See docs/replay.md.

    \b
    Examples:
      avalon replay runs/quickstart                 runs/quickstart/replay/index.html and a page per game
      avalon replay runs/play/game-00001 --out game.html
    """
    from avalon_agents.view.game import write_replay

    with one_line_errors(out, missing="run-or-game-dir"):
        page = write_replay(run_or_game_dir, out)
    if as_json:
        echo_json({"replay": page})
    else:
        click.echo(f"replay: {page}")



@cli.command(cls=ReadsNoConfig)
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--judge-model", required=True,
              help="The judge model, e.g. openai:gpt-4o-mini, local:smollm2 or scripted (canned labels: the floor).")
@click.option("--sample", type=int, default=None,
              help="Judge a fixed sample of N messages, stratified by label (default: every labelled message).")
@click.option("--seed", type=SEEDS, default=0, show_default=True, help="Seeds the sample and the bootstrap CIs.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write the CSV files and report.md (default: RUN_DIR/calibration).")
@click.option("--judge-concurrency", default=4, show_default=True, type=IN_FLIGHT,
              help="Judge calls in flight at once.")
@check_option
@spend_options(CALL_BUDGET)
@json_option
@plugin_option
@run_plugins_option("run_dir")
@logging_options
def calibrate(run_dir: Path, judge_model: str, sample: int | None, seed: int, out: Path | None,
              judge_concurrency: int, check: bool, prices_file: Path | None, budget_usd: float | None,
              as_json: bool) -> None:
    """Judges against people: run the judges on the labelled chat messages of an imported Avalon-NLU run and
    report their agreement with the human labels.

    Judges: every registered judge that says how it is held to people's labels (a plugin's too, with --plugin):
    persuasion (the dataset's eight strategies), deception (influence, commission, omission or none), and the
    behavior judges camouflage (read as lie or honest) and teamwork (read as agreement, critique/opposition or
    other); the others are named in one line. Prints Cohen's kappa and accuracy with 95% CIs (bootstrap over games);
    writes summary.csv, per_class.csv (precision, recall), confusion.csv, judgments.csv and report.md.
    Judgments are cached under OUT/judgments: a rerun costs nothing. See docs/humans.md.

    \b
    Examples:
      avalon calibrate runs/avalon-nlu --judge-model scripted
      avalon calibrate runs/avalon-nlu --judge-model local:smollm2 --sample 200 --seed 0
      avalon calibrate runs/avalon-nlu --judge-model openai:gpt-4o-mini --check     calls, tokens, dollars
    """
    from avalon_agents.analysis.humans.calibrate import calibrate as run_calibration
    from avalon_agents.analysis.humans.calibrate import unheld_judges
    from avalon_agents.analysis.humans.calibration import provenance, text_table, write_calibration
    from avalon_agents.analysis.load import load_run
    from avalon_agents.llm import ClientPool, ModelSettings, check_reachable
    from avalon_agents.records.run_dir import JsonlTracer

    out = out if out is not None else run_dir / "calibration"
    with one_line_errors(out, missing="run-dir"), kept_within():
        if sample is not None and sample < 1:
            raise ValueError(f"sample: must be at least 1, got {sample}")
        data = load_run(run_dir)
        if data.games.empty:
            raise ValueError(f"run-dir: no finished games in {run_dir}")
        settings = ModelSettings(spec=judge_model, temperature=0.0)
        check_reachable(settings)
        budget = None
        if check or budget_usd is not None:
            from avalon_agents.analysis.humans.calibrate import messages, tasks
            from avalon_agents.analysis.humans.calibrate import sample as sampled
            from avalon_agents.analysis.judges.run import Judge
            from avalon_agents.experiments.plan import judge_cost, judge_plan

            work = tasks(Judge(client=None, cache_dir=None), data, sampled(messages(data), sample, seed))
            cost, cached = judge_cost(work, out / "judgments", settings.spec)
            budget = planned_calls(judge_plan(settings, cost, prices := prices_of(prices_file), cached), check,
                                   as_json, budget_usd, prices)
            if check:
                return
        client = ClientPool(limit=judge_concurrency).get(settings).with_tracer(
            JsonlTracer(out / "judgments" / "calls.jsonl"))  # every judge call, recorded
        if budget is not None:
            from avalon_agents.experiments.spend import BudgetedClient

            client = BudgetedClient(client, budget)
        with Progress(TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=Console(stderr=True)) as progress:
            task = progress.add_task("judging", total=None)
            found = run_calibration(data, run_dir, client=client, cache_dir=out / "judgments", n=sample, seed=seed,
                                    concurrency=judge_concurrency,
                                    progress=lambda done, total: progress.update(task, completed=done, total=total))
        files = write_calibration(found, out)
    if as_json:
        echo_json({"provenance": provenance(found), "judge": found.judge_spec, "messages": found.messages,
                   "not_compared": unheld_judges(),
                   "agreements": {k: vars(v) if hasattr(v, "__dict__") else v for k, v in found.agreements.items()},
                   "files": files, "report": files[-1]})
        return
    click.echo(provenance(found))
    if unheld := unheld_judges():
        click.echo(f"judges with no human labels to be held to: {', '.join(unheld)} (not compared)")
    click.echo(text_table(found))
    click.echo(f"report: {files[-1]}")


@cli.command("probe-humans")
@click.argument("run_dir", metavar="RUN", type=click.Path(file_okay=False, path_type=Path))
@model_options
@click.option("--games", type=int, default=None, help="Probe only the first N games (default: all).")
@click.option("--history-tokens", type=AT_LEAST_1, default=None,
              help="Budget for the seat's view of the game in the prompt; older lines are cut, night information "
                   "kept (default: the model's, as in games: 2500; 900 local).")
@click.option("--concurrency", default=4, show_default=True, type=IN_FLIGHT, help="Probes in flight at once.")
@check_option
@spend_options(CALL_BUDGET)
@json_option
@logging_options
def probe_humans(run_dir: Path, settings: ModelSettings, games: int | None, history_tokens: int | None,
                 concurrency: int, check: bool, prices_file: Path | None, budget_usd: float | None,
                 as_json: bool) -> None:
    """Belief probes on imported human games: who is Merlin, who is evil, at the end of every quest.

    RUN is a folder of games made by `avalon import` (Avalon-NLU: with the players' stated beliefs). Every
    seat is given the game as it saw it up to the end of each quest (public events and speeches, its own night
    information) and asked the belief probe; the answers are scored against the truth and against the beliefs
    the player had stated by then. Prints accuracy per quest with 95% intervals (whole games resampled); writes
    RUN/probes-humans/ (probes.csv, quests.csv, roles.csv, report.md, the answers cached in answers.jsonl, every
    call in calls/). A rerun asks only what is not cached. See docs/humans.md.

    \b
    \b
    Examples:
      avalon probe-humans runs/avalon-nlu --model scripted
      avalon probe-humans runs/avalon-nlu --model openai:gpt-4o-mini --check     calls, tokens, dollars, time
    """
    from avalon_agents.analysis.humans.report import quest_lines
    from avalon_agents.host.human_probes import probe_humans as run_probes
    from avalon_agents.llm import ClientPool, check_reachable

    with one_line_errors(run_dir, stopped="answers so far are cached; a rerun asks the rest", field="run"), \
            kept_within():
        if settings.spec is None:
            raise ValueError("model: give the model to probe with --model SPEC (e.g. scripted, local:smollm2)")
        if not run_dir.is_dir():  # one line before any model client loads
            raise ValueError(f"run: {run_dir} is not a folder")
        check_reachable(settings)
        client = ClientPool(limit=concurrency).get(settings)
        if check or budget_usd is not None:
            from avalon_agents.analysis.humans.games import imported_games
            from avalon_agents.experiments.plan import probe_cost, work_plan
            from avalon_agents.experiments.spend import BudgetedClient
            from avalon_agents.host.human_probes import OUT

            cost, cached = probe_cost(imported_games(run_dir, games), run_dir / OUT, client.settings.spec)
            budget = planned_calls(work_plan("belief probes", client.settings, cost, prices := prices_of(prices_file),
                                             cached, "the probe's declared cost (host/probe.py: PROBE_COST)"),
                                   check, as_json, budget_usd, prices)
            if check:
                return
            client = BudgetedClient(client, budget) if budget is not None else client
        with Progress(TextColumn("probes"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task("probes", total=None)
            result = asyncio.run(run_probes(
                run_dir, client, games=games, history_tokens=history_tokens, concurrency=concurrency,
                progress=lambda done, total: progress.update(task, completed=done, total=total)))
    if as_json:
        echo_json({"provenance": result.provenance, "probes": len(result.scored), "asked": result.asked,
                   "quests": result.quests, "roles": result.roles, "files": result.files,
                   "report": result.out / "report.md"})
        return
    click.echo(result.provenance)
    for line in quest_lines(result.quests):
        click.echo(line)
    click.echo(f"{len(result.scored)} probes ({result.asked} asked now, the rest cached); report: "
               f"{result.out / 'report.md'}")


def _health_text(row) -> str:
    """A variant's row of the health table as `avalon analyze` prints it (the numbers' formats: formats.py)."""
    from avalon_agents.formats import percent
    from avalon_agents.records.health import not_data

    speeches = ""
    if row.speeches:
        note = not_data(row.speeches, row.placeholders)
        speeches = (f"; speeches {row.speeches}: {round(row.echo_rate * row.speeches)} copy their instructions, "
                    f"{row.placeholders} placeholders or empty" + (f"; {note}" if note else ""))
    seats = (f"; program and web seats: {row.seat_faults} protocol errors, {row.seat_fallbacks} fallbacks"
             if row.seat_faults or row.seat_fallbacks else "")
    return (f"{row.variant}: health: {row.failed_calls}/{row.llm_calls} calls failed ({percent(row.failed_share)}), "
            f"{row.reasks} re-asks, {row.fallbacks}/{row.decisions} fallbacks ({percent(row.fallback_share)})"
            f"{speeches}{seats}")
