"""`avalon import`: human games as run directories (avalongame.online logs, Avalon-NLU)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from avalon_agents.cli.base import UserError, cli, echo_json, json_option, logging_options, one_line_errors
from avalon_agents.records.run_dir import holds_games


@cli.group("import")
def import_group() -> None:
    """Import human games as run directories (`avalon analyze RUN` reads them).

    Every logged action is replayed through the engine, so each imported game is checked against the rules;
    a log the rules refuse, an unfinished game or an unreadable file is skipped, with its reason.
    """


@import_group.command("avalonlogs")
@click.argument("log_dir", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The run directory to write (game-NNNNN/ per imported game); it must hold no games yet.")
@json_option
@logging_options
def import_avalonlogs(log_dir: Path, out: Path, as_json: bool) -> None:
    """avalongame.online logs (one JSON file per game, at or under DIR) as game directories, seats of kind human.

    \b
    Example:
      avalon import avalonlogs avalonlogs/logs --out runs/humans && avalon analyze runs/humans
    """
    from avalon_agents.importers import IMPORTERS

    _import(IMPORTERS["avalonlogs"], log_dir, out, as_json)


def _import(importer, log_dir: Path, out: Path, as_json: bool = False) -> None:
    """Run an importer module (see `importers`) over DIR with a progress bar; print what was skipped and why."""
    if not log_dir.is_dir():
        raise UserError(f"dir: {log_dir} is not a folder")
    files = importer.log_files(log_dir)
    if not files:
        raise UserError(f"dir: {log_dir} holds no game logs")
    from avalon_agents.experiments.guard import run_lock

    with one_line_errors(out), run_lock(out):  # a second import into the same folder waits its turn: refused
        if holds_games(out):
            raise UserError(f"out: {out} already holds games; import into a new folder")
        with Progress(TextColumn("games"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=Console(stderr=True), transient=True, disable=len(files) < 20) as progress:
            task = progress.add_task("games", total=len(files))
            report = importer.import_logs(files, out, on_file=lambda _: progress.advance(task), root=log_dir)
    if as_json:
        echo_json(_report_json(report, out, len(files)))
        return
    for name, reason in report.skipped:
        click.echo(f"skipped {name}: {reason}")
    click.echo(f"imported {len(report.imported)} of {len(files)} game(s) into {out}"
               + (f" ({len(report.skipped)} skipped)" if report.skipped else ""))



@import_group.command("avalon-nlu")
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="A new folder for the games (game-NNNNN, numbered by the files' sorted order) and import.json.")
@json_option
@logging_options
def import_avalon_nlu(dataset: Path, out: Path, as_json: bool) -> None:
    """Import the Avalon-NLU dataset: DATASET is the folder of <id>.json files.

    Each game is replayed through the engine under the paper rules (its deal and first leader fixed), with the
    chat as speeches, so every imported game is checked against the rules; the persuasion, deception and
    belief labels go to each game's trace.jsonl as annotation records. Prints how many games were imported and
    why each other one was skipped (also in OUT/import.json). See docs/humans.md.

    \b
    Example:
      avalon import avalon-nlu ../shared/data/avalon_nlu/dataset --out runs/avalon-nlu
    """
    from avalon_agents.experiments.guard import run_lock
    from avalon_agents.importers.avalon_nlu import import_avalon_nlu as run_import

    with one_line_errors(out), run_lock(out):
        report = run_import(dataset, out)
    if as_json:
        echo_json(_report_json(report, out, len(report.imported) + len(report.skipped)))
        return
    for line in report.lines():
        click.echo(line)


def _report_json(report, out: Path, files: int) -> dict:
    """An import's report as `--json` prints it."""
    return {"out": out, "files": files, "imported": [{"file": f, "game": g} for f, g in report.imported],
            "skipped": [{"file": f, "reason": r} for f, r in report.skipped], "annotations": dict(report.annotations),
            "notes": report.notes}
