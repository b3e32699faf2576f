"""The one reader of a run: the recorder's other half. Every reader of a run's files (analysis, `avalon view`, the
replay viewer, the progress bar, the runner) opens it here; nothing outside records/ parses a run's files.

    run = open_run(path)              # any kind: experiment, tournament, red team, bias, play, serve, import, replay
    run.record                        # its run record (run.json; an older run's: what its other files say)
    run.command, run.name             # what produced it ("run", "tournament", ..., "served table", "games")
    run.progress()                    # a study's progress.json (Progress), None without one
    run.games()                       # every game folder, finished or not (one cached walk), in path order
    run.finished(), run.unfinished(), run.aborted()
    game = run.game("main/series-1/game-00001")
    game.meta(), game.seating(), game.result(), game.health(), game.events(), game.trace(), game.judge_trace()
    tail = game.tail(TRACE)           # a live reader's new trace records since its last read (Tail)

**The walk** (records.walk). A run's games are its folders named `game-NNNNN` (told by the name alone) or
holding meta.json (a plugin study names its games' folders itself), at any depth under it (up to MAX_DEPTH); the walk
does not descend into a game. Each folder's listing is kept with the folder's time: a walk again stats each folder
once and lists only those whose time changed (a file created, renamed or removed in it: a game started, finished or
aborted) or that changed within RACY of their listing (a change in the same tick of the clock leaves the time as it
was), so a live reader (`avalon view`) walks a 10,000-game run again in 0.04 s (0.25 s the first time). A game's
layout (meta.json) is checked when `check` is asked (`finished(check=True)`, `records.walk.finished_games`), once
per meta.json.

`open_run` keeps one `Run` per folder in this process: every reader of a run shares its walk.

A run written before run.json has no record: `fallback_record` says what its other files say (experiment.json,
study.json, import.json, progress.json), here and nowhere else.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avalon_agents.records.health import Health
from avalon_agents.records.run_dir import (
    EXPERIMENT,
    GAME_PREFIX,
    IMPORT_REPORT,
    META,
    PROGRESS,
    STUDY,
    Tail,
    layout_of,
    stamp,
)
from avalon_agents.records.run_record import RUN, RunRecord, read_run_record
from avalon_agents.records.walk import Game, walk

__all__ = ["Game", "Health", "Progress", "Run", "Tail", "UnknownGame", "fallback_record", "find_runs", "is_run",
           "open_run"]

OWN_RECORDS = (EXPERIMENT, STUDY, IMPORT_REPORT)
"""A run's own record before run.json, in the order a reader trusts them (an older run's config and provenance)."""
RUN_FILES = (RUN, *OWN_RECORDS, PROGRESS)
"""A folder holding one of these is a run (`is_run`)."""


class UnknownGame(LookupError):
    """No game of that name in the run (one line)."""


# ---------------------------------------------------------------------------------------------- progress.json


class Progress(BaseModel):
    """progress.json: a study's progress as its scheduler rewrites it (records.run_dir.PROGRESS)."""

    model_config = ConfigDict(extra="allow")

    command: str | None = None
    name: str | None = None
    state: str | None = None
    """playing, done or stopped."""
    planned: int | None = None
    finished: int | None = None
    aborted: list[Any] = Field(default_factory=list)
    pid: int | None = None
    updated: str | None = None

    def alive(self) -> bool:
        """The playing process still runs (a `playing` study whose process was killed is stopped)."""
        if not isinstance(self.pid, int) or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


# ---------------------------------------------------------------------------------------------- a run


def is_run(folder: Path) -> bool:
    """`folder` is a run: it holds a run's own record (run.json, or an older run's: RUN_FILES) or game folders
    directly (a game folder itself is not: its run is above it)."""
    folder = Path(folder)
    if folder.name.startswith(GAME_PREFIX) and (folder / META).is_file():
        return False
    if any((folder / name).is_file() for name in RUN_FILES):
        return True
    try:
        return any(e.is_dir() and (e.name.startswith(GAME_PREFIX) or os.path.isfile(os.path.join(e.path, META)))
                   for e in os.scandir(folder))
    except OSError:
        return False


def find_runs(root: Path, depth: int = 6) -> list[Path]:
    """Every run at or under `root` (`is_run`), in path order, not looking inside a run nor deeper than `depth`."""
    root = Path(root)
    if is_run(root):
        return [root]
    found: list[Path] = []

    def walk(folder: Path, level: int) -> None:
        try:
            entries = sorted((e for e in os.scandir(folder) if e.is_dir() and not e.name.startswith(".")),
                             key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            path = Path(entry.path)
            if is_run(path):
                found.append(path)
            elif level < depth:
                walk(path, level + 1)

    walk(root, 1)
    return found


def _json(file: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class Run:
    """A run folder, read (see the module's docstring). Use `open_run`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._walk = walk(self.path)
        self._record: tuple[Any, RunRecord] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    # -- what made it

    @property
    def recorded(self) -> bool:
        """It holds a run record (run.json); False: an older run, its record read from its other files."""
        return (self.path / RUN).is_file()

    @property
    def record(self) -> RunRecord:
        """Its run record: run.json, read again when rewritten (a resume), else `fallback_record`."""
        key = (stamp(self.path / RUN), stamp(self.path / EXPERIMENT), stamp(self.path / STUDY),
               stamp(self.path / IMPORT_REPORT), stamp(self.path / PROGRESS) if not self.recorded else None)
        with self._lock:
            if self._record is None or self._record[0] != key:
                self._record = (key, read_run_record(self.path) or fallback_record(self))
            return self._record[1]

    @property
    def command(self) -> str:
        """What produced it: the run record's command (see `fallback_record` for an older run)."""
        return self.record.command

    @property
    def kind(self) -> str:
        """What produced it, for people: its command, or `replay` for a run whose answers came from another run's
        records (its record's `replays`; a run recorded before that field: a `replay:` model in its config)."""
        return "replay" if self.record.replays or _replays(self.record.config) else self.command

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def environment(self) -> dict[str, str]:
        """The machine and software that made it (records.environment; an older run: its commit alone, if kept)."""
        return dict(self.record.environment)

    def own_record(self) -> tuple[str, dict[str, Any]] | None:
        """An older run's own record: (its file's name, what it holds) of experiment.json, study.json or import.json;
        None without one."""
        for name in OWN_RECORDS:
            data = _json(self.path / name)
            if data is not None:
                return name, data
        return None

    def experiment(self) -> dict[str, Any] | None:
        """An experiment's experiment.json (its variants' configs, provenance and fingerprint); None: none."""
        return _json(self.path / EXPERIMENT)

    def variant_order(self) -> list[str]:
        """An experiment's variants in its config's order (none for another run)."""
        return list((self.experiment() or {}).get("variants") or {})

    def progress(self) -> Progress | None:
        """A study's progress.json (None: none, or unreadable while it is replaced)."""
        data = _json(self.path / PROGRESS)
        try:
            return Progress.model_validate(data) if data is not None else None
        except ValueError:
            return None

    def stamps(self) -> tuple:
        """The times of the run's own files (run.json, the older records, progress.json) and of its folder: equal
        stamps, no file of the run's own changed."""
        return tuple(stamp(self.path / name) for name in RUN_FILES) + (stamp(self.path),)

    # -- its games

    def games(self) -> list[Game]:
        """Every game folder, finished or not, in path order (the cached walk)."""
        return self._walk.games()

    def finished(self, check: bool = False) -> list[Game]:
        """The finished games; `check`: refuse a game of a layout this code does not read (LayoutError)."""
        found = [g for g in self.games() if g.finished]
        if check:
            for game in found:
                game.check_layout(self.path)
        return found

    def unfinished(self) -> list[Game]:
        """The games started and not finished (playing, or stopped midway, aborted included)."""
        return [g for g in self.games() if not g.finished]

    def aborted(self) -> list[Game]:
        """The games whose last attempt was aborted (replayed on resume)."""
        return [g for g in self.games() if g.aborted]

    def game(self, name: str) -> Game:
        """The game of a name (its path under the run), as the walk finds it now. Raises UnknownGame."""
        if name and ".." not in Path(name).parts and not Path(name).is_absolute():
            games = self.games()
            folder = self._walk.folders.get(os.path.join(str(self.path), *name.split("/")))
            if folder is not None and folder.game is not None:
                return folder.game
            if len(games) == 1 and games[0].path == self.path and games[0].name == name:
                return games[0]  # a run that is one game
        raise UnknownGame(f"no game {name!r} in run {self.path}")

    def seat_kinds(self) -> list[str]:
        """The seats' kinds of its first game (rulebot, random, human, llm, external): a run without LLM calls'
        models."""
        for game in self.games()[:1]:
            try:
                return sorted(set(map(str, game.meta().seats.values())))
            except (OSError, ValueError):
                return []
        return []


def fallback_record(run: Run) -> RunRecord:
    """What an older run's files say of it, as a run record (`recorded` False): its command from progress.json,
    else its own record's file (experiment.json: run or tournament; import.json: import; study.json: play), else
    its games (a person's seat and no record: `served table`, as `avalon serve` wrote them before run.json;
    otherwise `games`); its name and config from its own record; its commit as its environment."""
    path = run.path
    progress = _json(path / PROGRESS) or {}
    own = run.own_record()
    name, data = own if own is not None else (None, {})
    if progress.get("command"):
        command = str(progress["command"])
    elif name == EXPERIMENT:
        command = "tournament" if (path / "tournament").is_dir() else "run"
    elif name == IMPORT_REPORT:
        command = "import"
    elif name == STUDY:
        command = "play"
    else:
        command = "served table" if "human" in run.seat_kinds() else "games"
    environment = {"commit": str(data["commit"])} if data.get("commit") else {}
    config = {k: v for k, v in data.items() if k not in ("commit", "started", "name")}
    games = run.games()[:1]
    layout = layout_of(games[0].path) if games else None
    return RunRecord(command=command, name=str(data.get("name") or progress.get("name") or path.name),
                     config=config, environment=environment, started=str(data.get("started") or ""),
                     layout=layout if isinstance(layout, int) else 1, recorded=False)


def _replays(config: Any) -> bool:
    """The config names a `replay:` model (a model's `spec`, at any depth): how a run recorded before run.json's
    `replays` tells it replayed (records sit below the model registry, so the built-in provider's name is read)."""
    if isinstance(config, dict):
        return any((k == "spec" and isinstance(v, str) and v.startswith("replay:")) or _replays(v)
                   for k, v in config.items())
    return isinstance(config, list) and any(_replays(v) for v in config)


_RUNS: dict[Path, Run] = {}
_RUNS_LOCK = threading.Lock()


def open_run(path: str | Path) -> Run:
    """The run at `path` (a run folder, a game folder, any folder holding games), one `Run` per folder in this
    process (its walk shared by every reader). Raises FileNotFoundError when `path` is no folder."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such folder")
    with _RUNS_LOCK:
        run = _RUNS.get(path)
        if run is None:
            run = _RUNS[path] = Run(path)
        return run
