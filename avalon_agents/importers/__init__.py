"""Importers of human games: each turns a format's logs into ordinary game directories (`avalon import`), by
replaying every logged action through the engine (`replay`), so every imported game is checked against the
rules.

IMPORTERS holds each format's `Importer` (`replay.py`): its name, help and argument, `log_files(folder)` listing a
folder's logs and `import_logs(files, out, on_file, root)` writing the games and returning an `ImportReport`.
`avalon import` has one subcommand per entry (a plugin's too). `avalonlogs` imports avalongame.online logs,
`avalon_nlu` the Avalon-NLU dataset with its chat and human labels.
"""

from avalon_agents.importers import avalon_nlu, avalonlogs
from avalon_agents.importers.replay import NO_SPEECH, Importer, ImportReport, Replay, ReplayError, write_game
from avalon_agents.registry import Registry


def _check(name: str, importer: Importer) -> None:
    if not isinstance(importer, Importer) or importer.name != name:
        raise ValueError(f"importer {name}: register an importers.Importer named {name!r}")


IMPORTERS: Registry[Importer] = Registry("importer", [(i.name, i) for i in (avalonlogs.IMPORTER, avalon_nlu.IMPORTER)],
                                         check=_check)
"""Formats by name (the `avalon import` subcommands)."""


def register_importer(importer: Importer) -> Importer:
    """Add a format: `avalon import NAME` (with `--plugin FILE` before NAME for a plugin's). Refused in one line
    under a taken name."""
    return IMPORTERS.register(importer.name, importer, builtin=False)


__all__ = ["IMPORTERS", "ImportReport", "Importer", "NO_SPEECH", "Replay", "ReplayError", "avalon_nlu", "avalonlogs",
           "register_importer", "write_game"]
