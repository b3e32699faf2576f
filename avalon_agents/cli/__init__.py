"""The `avalon` command: play games, run experiments and studies, read runs, run benchmarks.

One module per command group; `base` holds the group, the options several commands share and the one place that
turns exceptions into one-line errors and exit codes (user mistakes: one line on stderr naming the bad field,
exit code 2, never a traceback). Command modules import the package's heavy parts (model clients, chromadb, the
embedded model, pandas) inside their commands, so `avalon --help` and a one-line error load none of them.
"""

from __future__ import annotations

import sys

import click

from avalon_agents.cli import analyze, imports, play, run, seats, serve, studies, tools, view  # noqa: F401  (each adds its commands)
from avalon_agents.cli.base import EXIT_TERMINATED, UserError, cli, interrupted_exit, sigterm_as_interrupt

__all__ = ["cli", "main"]


def main() -> None:
    """Entry point of the `avalon` console script (SIGTERM stops a command as Ctrl-C does, exit 143)."""
    with sigterm_as_interrupt():
        try:
            cli.main(standalone_mode=False)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except (click.exceptions.Abort, KeyboardInterrupt):
            click.echo(f"{'stopped by SIGTERM' if interrupted_exit() == EXIT_TERMINATED else 'interrupted'}: finished games are "
                       "complete on disk; an unfinished one has no result.json", err=True)
            sys.exit(interrupted_exit())
        except click.ClickException as exc:  # usage errors included: one line, no usage dump
            click.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(2 if isinstance(exc, (click.UsageError, UserError)) else exc.exit_code)


if __name__ == "__main__":
    main()
