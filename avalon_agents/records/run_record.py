"""run.json: the one record every producer of a run writes at its top (experiment, tournament, red team, bias,
play, serve, import, replay), read first by every reader.

It says what made the run: the command and the run's name, its config (as the command saw it), the plugins it
loaded (each file's path and sha256, or a module's name), the run-directory layout, and the environment
(records.environment). A run written before this record has none: readers fall back to what its other files say.
"""

from __future__ import annotations

import datetime as dt
import hashlib
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
    layout: int = LAYOUT
    config: dict[str, Any] = Field(default_factory=dict)
    plugins: list[PluginFile] = Field(default_factory=list)
    environment: dict[str, str] = Field(default_factory=dict)
    started: str = ""


def write_run_record(out: Path, command: str, name: str, config: dict[str, Any] | None = None,
                     plugins: list[str] | None = None) -> RunRecord:
    """Write OUT/run.json for a run starting now (a resumed run's record is written again: its environment is
    the newest process's; the first one's is kept as `first_environment`). `plugins`: the keys of the plugins
    the run loaded (default: every plugin this process loaded, `plugins.LOADED`)."""
    if plugins is None:
        from avalon_agents.plugins import LOADED

        plugins = list(LOADED)
    old = read_run_record(out)
    record = RunRecord(command=command, name=name, config=config or {},
                       plugins=[PluginFile.of(key) for key in plugins], environment=environment(),
                       started=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
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
