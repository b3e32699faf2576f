"""Importers of human games: each turns a format's logs into ordinary game directories (`avalon import`), by
replaying every logged action through the engine (`replay`), so every imported game is checked against the
rules.

IMPORTERS names each format's importer module; its `log_files(folder)` lists a folder's logs and
`import_logs(files, out, on_file, root)` writes the games and returns an `ImportReport` (`replay.py`).
`avalon_nlu` imports the Avalon-NLU dataset with its chat and human labels (`avalon import avalon-nlu`).
"""

from avalon_agents.importers import avalonlogs
from avalon_agents.importers.replay import NO_SPEECH, ImportReport, Replay, ReplayError, write_game
from avalon_agents.registry import Registry

IMPORTERS = Registry("importer", [(avalonlogs.NAME, avalonlogs)])
"""Formats by name (the `avalon import` subcommand)."""

__all__ = ["IMPORTERS", "ImportReport", "NO_SPEECH", "Replay", "ReplayError", "avalonlogs", "write_game"]
