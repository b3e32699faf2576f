"""`avalon view`: every run under some folders as one local site, live while runs play; or exported as files."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from avalon_agents.cli.base import (
    RUN_PLUGINS_HELP,
    UserError,
    cli,
    echo_json,
    json_option,
    load_run_plugins,
    logging_options,
    one_line_errors,
    plugin_option,
)

DEFAULT_FOLDER = Path("runs")


@cli.command()
@click.argument("folders", nargs=-1, type=click.Path(file_okay=False, path_type=Path))
@click.option("--port", default=8100, show_default=True, type=click.IntRange(0, 65535),
              help="The port to listen on (0: any free one).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on. Another than 127.0.0.1 (e.g. 0.0.0.0 to view from another machine) "
                   "makes every address need the token printed with it.")
@click.option("--export", "export_to", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the site as plain files into this new folder (they open from disk or any static host) "
                   "instead of serving it.")
@click.option("--compare", "comparisons", multiple=True, metavar="RUN,RUN[,...]",
              help="With --export: also write this comparison of runs (their ids as the index shows them); with "
                   "--json: print it (the Compare page's JSON). Repeatable.")
@click.option("--max-file-mb", "max_file_mb", default=512, show_default=True, type=click.IntRange(1),
              help="The largest file read (MB): a run holding a larger one is listed unreadable, naming it.")
@click.option("--no-run-plugins", "no_run_plugins", is_flag=True, help=RUN_PLUGINS_HELP)
@json_option
@plugin_option
@logging_options
def view(folders: tuple[Path, ...], port: int, host: str, export_to: Path | None,
         comparisons: tuple[str, ...], max_file_mb: int, no_run_plugins: bool, as_json: bool) -> None:
    """View runs: every run under FOLDERS (default: runs/) of every kind (experiments, tournaments, red-team and
    bias studies, played batches, served tables, imports) as one local site: an index with each run's games,
    health, tokens and dollars; each run's metrics with their intervals, figures, health, cost and config; runs
    compared side by side; each game's replay; every LLM call. Runs still playing update while you watch.

    Read-only: nothing is written into a run folder, nothing outside FOLDERS is read (a link out of them is not
    followed) and no file over --max-file-mb. On 127.0.0.1 it answers to this machine's names only. The JSON under
    /api/ mirrors each page (docs/view.md).
    The plugins each run recorded are loaded first, so their metrics and judges' tables are shown; one missing
    or changed since its run is refused, naming the run (--no-run-plugins: view without them). A run started
    while the view is open has its plugins loaded when it shows up (one missing or changed: its row says so).

    \b
      avalon view                                  runs/ at http://127.0.0.1:8100/
      avalon view runs/ablation runs/tournament    two folders
      avalon view runs --export site/              the site as files, for a paper's supplement
    """
    roots = list(folders) or [DEFAULT_FOLDER]
    with one_line_errors(missing="folders"):
        for root in roots:
            if not root.is_dir():
                raise UserError(f"folders: {root} is not a folder (give the folders holding your runs)")
    if not no_run_plugins:
        load_run_plugins(roots, "the runs")
    with one_line_errors(missing="folders"):
        if export_to is not None:
            from avalon_agents.view.export import export

            picked = [[r for r in c.split(",") if r] for c in comparisons]
            files = export(roots, export_to, picked, progress=lambda run: click.echo(f"exporting {run}", err=True),
                           max_bytes=max_file_mb * 2**20)
            if as_json:
                echo_json({"out": export_to, "index": export_to / "index.html", "files": len(files)})
            else:
                click.echo(f"wrote {len(files)} files; open {export_to / 'index.html'}")
            return
        if comparisons:
            if not as_json:
                raise UserError("compare: --compare goes with --export or --json (live, pick the runs on the index)")
            _compare_json(roots, comparisons, max_file_mb * 2**20)
            return
        asyncio.run(_serve(roots, host, port, as_json, max_file_mb * 2**20, run_plugins=not no_run_plugins))


def _compare_json(roots: list[Path], comparisons: tuple[str, ...], max_bytes: int) -> None:
    """`--compare A,B --json`: each comparison's data as the Compare page's JSON (a list, in the order given)."""
    from avalon_agents.view.pages import View

    view = View(roots, max_bytes=max_bytes)
    try:
        echo_json([view.compare([r for r in c.split(",") if r]) for c in comparisons])
    except LookupError as exc:  # an unknown run or variant
        raise UserError(f"compare: {exc.args[0] if exc.args else exc}") from None


async def _serve(roots: list[Path], host: str, port: int, as_json: bool, max_bytes: int,
                 run_plugins: bool = True) -> None:
    from aiohttp import web

    from avalon_agents.web.hosts import reachable
    from avalon_agents.web.serving import runner as site_runner
    from avalon_agents.view.pages import View
    from avalon_agents.view.server import ViewServer, loopback, new_token
    from avalon_agents.view.site import Site

    from concurrent.futures import ThreadPoolExecutor

    # each run's pages compute in a thread of their own (view.server): room for many runs at once
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(32, thread_name_prefix="view"))
    token = None if loopback(host) else new_token()
    # run_plugins: those of a run started since, loaded when it is found
    server = ViewServer(View(roots, Site(token=token), max_bytes=max_bytes, run_plugins=run_plugins), token, host)
    runner = site_runner(server.app())
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise UserError(f"port: cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    bound = site._server.sockets[0].getsockname()[1] if site._server and site._server.sockets else port
    shown = reachable(host)
    shown = f"[{shown}]" if ":" in shown else shown
    address = f"http://{shown}:{bound}/" + (f"?token={token}" if token else "")
    if as_json:  # one line, as soon as the site answers
        echo_json({"url": address, "folders": roots, "token": token})
    else:
        click.echo(f"avalon view: {', '.join(map(str, roots))} at {address} (Ctrl-C to stop)")
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
