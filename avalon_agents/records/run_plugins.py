"""The plugins a run recorded, loaded again by what reads or replays the run (`avalon analyze`, `avalon view`,
`avalon calibrate`, `avalon replay`, a `--model replay:RUN_DIR` run), so a plugin's metric, judge, decision kind or
agent kind is there without naming it again.

A run's plugins are its run record's (run.json: each file's resolved path and sha256, or a module's name); a run
written before run.json was kept names them in experiment.json (`plugins`: paths or module names, no hash). A file
that is missing, or whose bytes changed since the run loaded it, is refused in one line naming the run and the
plugin: what the run recorded was made by that code, and other code would be read as if it were (`NO_RUN_PLUGINS`
goes on without them).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from avalon_agents.plugins import load_plugin
from avalon_agents.records.reader import find_runs
from avalon_agents.records.run_dir import EXPERIMENT, read_experiment
from avalon_agents.records.run_record import RUN, PluginFile, read_run_record

NO_RUN_PLUGINS = "--no-run-plugins"
"""The flag of every command that loads a run's plugins: go on without them."""
RECORDS = (RUN, EXPERIMENT)
"""A folder holding one of these is a run that may name its plugins."""
UP = 4
"""How many folders above a given folder its run is looked for (a game of an experiment: run/variant/series/game)."""
DOWN = 6
"""How deep under a given folder runs are looked for (a run's own games are not walked)."""


def recorded(run: Path) -> list[PluginFile]:
    """The plugins `run` recorded: run.json's, else experiment.json's (no hash); none when it names none."""
    record = read_run_record(run)
    if record is not None:
        return list(record.plugins)
    try:
        names = (read_experiment(run) or {}).get("plugins") or []
    except (OSError, ValueError):
        return []
    return [PluginFile(key=str(name)) for name in names if isinstance(name, str)]


def runs_at(path: Path) -> list[Path]:
    """The runs whose plugins reading `path` needs: the run at or above it that names its plugins (a game, a series
    or a run), else every run under it (a folder of runs: records.reader.find_runs), in path order."""
    path = Path(path).absolute()
    for folder in [path, *path.parents][:UP + 1]:
        if any((folder / name).is_file() for name in RECORDS):
            return [folder]
    return find_runs(path, DOWN)


def why_not(plugin: PluginFile) -> str | None:
    """Why `plugin` cannot be loaded as its run loaded it (a file missing, or changed), else None."""
    found = plugin.changed()
    if found is None and plugin.sha256 is None and Path(plugin.key).is_absolute() and not Path(plugin.key).is_file():
        found = f"plugin {plugin.key} is missing"
    return found


def load_recorded(paths: Iterable[Path]) -> list[str]:
    """Load the plugins of every run at or under `paths` (`runs_at`); returns their keys, each once, in order.

    Raises:
        ValueError: one line naming the run and its plugin that is missing, changed, or fails to load.
    """
    keys: list[str] = []
    for run in dict.fromkeys(run for path in paths for run in runs_at(path)):
        plugins = recorded(run)
        for plugin in plugins:
            if (why := why_not(plugin)) is not None:
                raise ValueError(f"run {run}: {why} ({NO_RUN_PLUGINS} goes on without the run's plugins)")
        for plugin in plugins:
            try:
                key = load_plugin(plugin.key)
            except ValueError as exc:
                raise ValueError(f"run {run}: {exc} ({NO_RUN_PLUGINS} goes on without the run's plugins)") from None
            if key not in keys:
                keys.append(key)
    return keys


def said(keys: list[str], whose: str = "the run") -> str:
    """The line a command prints when it loaded a run's plugins: "loaded 2 plugins the run recorded: a.py, b.py"."""
    names = ", ".join(Path(key).name if key.endswith(".py") else key for key in keys)
    return f"loaded {len(keys)} plugin{'s' if len(keys) != 1 else ''} {whose} recorded: {names}"
