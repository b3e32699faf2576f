"""`avalon import`: human games as run directories, one subcommand per importer (`importers.IMPORTERS`:
avalongame.online logs, Avalon-NLU, a plugin's)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from avalon_agents.cli.base import UserError, cli, echo_json, json_option, logging_options, one_line_errors
from avalon_agents.plugins import load_plugins
from avalon_agents.records.walk import holds_games

if TYPE_CHECKING:
    from avalon_agents.importers import Importer


class Importers(click.Group):
    """`avalon import`'s subcommands: one per importer of `importers.IMPORTERS` (a plugin's too: `avalon import
    --plugin FILE NAME ...`), each made by `importer_command`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from avalon_agents.importers import IMPORTERS

        return IMPORTERS.names()

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from avalon_agents.importers import IMPORTERS

        importer = IMPORTERS.get(name)
        return importer_command(importer) if importer is not None else None


def _load(ctx: click.Context, param: click.Parameter, plugins: tuple[str, ...]) -> tuple[str, ...]:
    """--plugin of `avalon import`, loaded while its options are read (before the subcommand is looked up)."""
    with one_line_errors():
        load_plugins(plugins)
    return plugins


@cli.group("import", cls=Importers)
@click.option("--plugin", "plugins", multiple=True, metavar="PATH_OR_MODULE", callback=_load, is_eager=True,
              expose_value=False, help="Import your own code first (a .py file or a module name): the importers it "
                                       "registers become subcommands. Repeatable.")
def import_group() -> None:
    """Import human games as run directories (`avalon analyze RUN` reads them).

    Every logged action is replayed through the engine, so each imported game is checked against the rules;
    a log the rules refuse, an unfinished game or an unreadable file is skipped, with its reason.
    """


def importer_command(importer: Importer) -> click.Command:
    """`avalon import NAME FOLDER --out RUN` of one importer (`importers.Importer`)."""

    @click.command(importer.name, help=importer.help)
    @click.argument("folder", metavar=importer.argument.upper(), type=click.Path(path_type=Path))
    @click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
                  help="The run directory to write (game-NNNNN/ per imported game); it must hold no games yet.")
    @json_option
    @logging_options
    def command(folder: Path, out: Path, as_json: bool) -> None:
        _import(importer, folder, out, as_json)

    return command


def _import(importer: Importer, folder: Path, out: Path, as_json: bool = False) -> None:
    """Run an importer over FOLDER with a progress bar; print what was imported, what was skipped and why."""
    if not folder.is_dir():
        raise UserError(f"{importer.argument}: {folder} is not a folder")
    files = importer.log_files(folder)
    if not files:
        raise UserError(f"{importer.argument}: {folder} holds no game logs")
    from avalon_agents.experiments.guard import run_lock

    with one_line_errors(out), run_lock(out):  # a second import into the same folder waits its turn: refused
        if holds_games(out):
            raise UserError(f"out: {out} already holds games; import into a new folder")
        with Progress(TextColumn("games"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=Console(stderr=True), transient=True, disable=len(files) < 20) as progress:
            task = progress.add_task("games", total=len(files))
            report = importer.import_logs(files, out, on_file=lambda _: progress.advance(task), root=folder)
    if as_json:
        echo_json(_report_json(report, out, len(files)))
        return
    for line in report.lines():
        click.echo(line)


def _report_json(report, out: Path, files: int) -> dict:
    """An import's report as `--json` prints it."""
    return {"out": out, "files": files, "imported": [{"file": f, "game": g} for f, g in report.imported],
            "skipped": [{"file": f, "reason": r} for f, r in report.skipped], "annotations": dict(report.annotations),
            "notes": report.notes}
