"""run.json: the one record every producer of a run writes at its top (experiment, tournament, red team, bias,
play, serve, import, replay), read first by every reader.

It says what made the run: its id (made when the run is first recorded, kept when it is resumed: every game id
programs are told begins with it, `game_id`), the command and the run's name, its config (as the command saw it),
the plugins it loaded (each file's path and sha256, or a module's name), the run whose records answered its calls if
it replayed one, the run-directory layout, and the environment (records.environment). A run written before this record has none: readers fall back to what its other files say.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avalon_agents.records.environment import environment
from avalon_agents.records.run_dir import LAYOUT, write_json_atomic

RUN = "run.json"
"""A run directory's run record (`RunRecord`)."""

COMMANDS = ("run", "tournament", "redteam", "bias", "play", "serve", "import", "replay")
"""The commands that write runs (a plugin study adds its own name)."""


class PluginFile(BaseModel):
    """A plugin the run loaded: a file (resolved path and the sha256 of its bytes) or an importable module name
    (no hash: its code is wherever Python finds it)."""

    model_config = ConfigDict(extra="allow")

    key: str
    """What `plugins.load_plugin` returned: the resolved path of a file, or the module name."""
    sha256: str | None = None

    @classmethod
    def of(cls, key: str) -> PluginFile:
        path = Path(key)
        if path.is_absolute() and path.is_file():
            return cls(key=key, sha256=hashlib.sha256(path.read_bytes()).hexdigest())
        return cls(key=key)

    def changed(self) -> str | None:
        """Why this plugin cannot be loaded as the run loaded it (missing, or its bytes changed), else None."""
        if self.sha256 is None:
            return None
        path = Path(self.key)
        if not path.is_file():
            return f"plugin {self.key} is missing"
        if hashlib.sha256(path.read_bytes()).hexdigest() != self.sha256:
            return f"plugin {self.key} changed since the run loaded it"
        return None


class RunRecord(BaseModel):
    """run.json (see the module's docstring)."""

    model_config = ConfigDict(extra="allow")

    command: str
    name: str
    id: str = ""
    """The run's id (`new_run_id`), the same across resumes: it begins every game id of the run (`game_id`)."""
    layout: int = LAYOUT
    config: dict[str, Any] = Field(default_factory=dict)
    plugins: list[PluginFile] = Field(default_factory=list)
    environment: dict[str, str] = Field(default_factory=dict)
    started: str = ""
    replays: str = ""
    """The run whose records answered its calls (a model whose provider `replays`, as `replay:RUN_DIR`), as its
    model named it; empty for a run that asked its models."""


def write_run_record(out: Path, command: str, name: str, config: dict[str, Any] | None = None,
                     plugins: list[str] | None = None, replays: str = "") -> RunRecord:
    """Write OUT/run.json for a run starting now (a resumed run's record is written again: its environment is
    the newest process's; the first one's is kept as `first_environment`; its `id` is kept). `plugins`: the keys of
    the plugins the run loaded (default: every plugin this process loaded, `plugins.LOADED`); `replays`: the run
    whose records answer its calls."""
    if plugins is None:
        from avalon_agents.plugins import LOADED

        plugins = list(LOADED)
    old = read_run_record(out)
    record = RunRecord(command=command, name=name, id=old.id if old is not None and old.id else new_run_id(),
                       config=config or {}, plugins=[PluginFile.of(key) for key in plugins], environment=environment(),
                       started=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), replays=replays)
    if old is not None and old.environment != record.environment:
        record = record.model_copy(update={"first_environment": getattr(old, "first_environment", None)
                                           or old.environment})
    Path(out).mkdir(parents=True, exist_ok=True)
    write_json_atomic(Path(out) / RUN, record.model_dump(mode="json"))
    return record


def read_run_record(out: Path) -> RunRecord | None:
    """OUT/run.json, or None when the run has none (written before it was kept) or it cannot be read."""
    file = Path(out) / RUN
    if not file.is_file():
        return None
    try:
        return RunRecord.model_validate_json(file.read_bytes())
    except ValueError:
        return None


def new_run_id() -> str:
    """A new run's id: 12 hex digits of a random uuid, so that no two runs share one (on any machine)."""
    return uuid.uuid4().hex[:12]


def game_id(game: Path) -> str:
    """The id of the game in directory GAME, as programs seated in it are told (agents.protocol's `game`): the id of
    the run it is in (the nearest run.json at or above it), `/` and its path in the run, e.g.
    `3f9a2c1b7d4e/main/series-1/game-00001`; so it differs from every other run's games and a resumed game keeps
    it, whatever path the command names. A game in no run with an id: its directory as the command names it."""
    game = Path(game)
    where = game.absolute()
    for run in (where, *where.parents):
        record = read_run_record(run)
        if record is not None and record.id:
            return "/".join((record.id, *where.relative_to(run).parts))
    return game.as_posix()
