"""The walk (`walk`, `Game`): a run's games are its folders named `game-NNNNN` (told by the name alone) or holding
meta.json (a plugin study names its games' folders itself), at any depth under it (up to MAX_DEPTH); it does not
descend into a game. Each folder's listing is kept with the folder's time: a walk again stats each folder once and
lists again only those whose time changed (a file created, renamed or removed in it: a game started, finished or
aborted) or changed within RACY of their listing, so a live reader walks a 10,000-game run again in 0.04 s (its
first walk: 0.25 s). Each game is a `Game`: typed readers of its files and a `Tail` of its growing ones.
records.reader opens a run (`open_run`) on this walk.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avalon_agents.core.events import GameEvent, GameResult
from avalon_agents.records.health import Health
from avalon_agents.records.run_dir import (
    ABORTED,
    GAME_PREFIX,
    HEALTH,
    META,
    RESULT,
    TRACE,
    GameMeta,
    Seating,
    Tail,
    check_layout,
    jsonl_lines,
    read_events,
    read_judge_trace,
    read_meta,
    read_result,
    read_seating,
    read_trace,
    stamp,
)
from avalon_agents.records.trace import TraceRecord

MAX_DEPTH = 12
"""How deep under a run its games are looked for (a guard against a pathological tree, not a layout)."""
RACY = 2_000_000_000
"""Nanoseconds: a folder listed less than this after its time may have changed again within the same tick of the
file system's clock (its time unchanged), so it is listed again on the next walk (only folders changed just now)."""

def finished_games(root: Path) -> list[Path]:
    """Every finished game directory at or under `root` (a game, a series, a run, any folder), in path order (the
    walk: `walk`).

    Raises:
        LayoutError: one of them is of a layout this code does not read.
    """
    games = [game for game in walk(root).games() if game.finished]
    for game in games:
        game.check_layout(Path(root))
    return [game.path for game in games]



def games_in(root: Path) -> list[Path]:
    """Every game directory at or under `root`, finished or not, in path order (the walk: `walk`)."""
    return [game.path for game in walk(root).games()]



def aborted_games(root: Path) -> list[Path]:
    """Every game directory at or under `root` whose last attempt was aborted (no result; replayed on resume)."""
    return [game.path for game in walk(root).games() if game.aborted]



def holds_games(out: Path) -> bool:
    """True if `out` holds any game directory, finished or not."""
    return bool(games_in(out))


class Game:
    """One game folder of a run, as the walk found it (its files when it was last listed): typed readers of each
    of its files. A game's `name` is its path under the run ("main/series-1/game-00001"; a run that is one game:
    the folder's name)."""

    __slots__ = ("path", "name", "files", "stamp", "finished_at", "_layout_checked")

    def __init__(self, path: Path, name: str, files: frozenset[str], stamp: int, finished_at: int | None) -> None:
        self.path, self.name, self.files, self.stamp, self.finished_at = path, name, files, stamp, finished_at
        self._layout_checked: tuple[int, int] | None = None  # meta.json's stamp when its layout was checked

    def __repr__(self) -> str:
        return f"Game({self.name!r}, {self.state})"

    @property
    def finished(self) -> bool:
        """It holds its result (result.json, written last)."""
        return RESULT in self.files and META in self.files

    @property
    def aborted(self) -> bool:
        """Its last attempt was aborted (aborted.json, no result: replayed on resume)."""
        return ABORTED in self.files and RESULT not in self.files

    @property
    def state(self) -> str:
        """finished, aborted or playing (started, no result yet: playing now, or stopped midway)."""
        return "finished" if self.finished else "aborted" if self.aborted else "playing"

    def has(self, name: str) -> bool:
        """The folder holds the file `name` (records.run_dir's names), as last listed."""
        return name in self.files

    def meta(self) -> GameMeta:
        return read_meta(self.path)

    def seating(self) -> Seating | None:
        return read_seating(self.path)

    def result(self) -> GameResult:
        return read_result(self.path)

    def health(self) -> Health:
        """health.json (a game written before it: its trace's usage; neither: empty)."""
        try:
            return Health.model_validate_json((self.path / HEALTH).read_bytes())
        except FileNotFoundError:
            return Health.of(read_trace(self.path)) if (self.path / TRACE).is_file() else Health()

    def aborted_reason(self) -> dict[str, Any]:
        """aborted.json: the reason and the step."""
        return json.loads((self.path / ABORTED).read_text())

    def events(self) -> list[GameEvent]:
        return read_events(self.path)

    def trace(self) -> list[TraceRecord]:
        return read_trace(self.path)

    def judge_trace(self) -> list[TraceRecord]:
        return read_judge_trace(self.path)

    def lines(self, name: str) -> Iterator[tuple[int, bytes]]:
        """Each non-blank line of one of the game's JSONL files (TRACE, EVENTS, JUDGE_TRACE) with the byte it starts
        at, unparsed (`jsonl_lines`)."""
        return jsonl_lines(self.path / name)

    def file_stamp(self, name: str) -> tuple[int, int] | None:
        """(time, size) of one of the game's files now (None: not there): what a reader caches a file's rows by."""
        return stamp(self.path / name)

    def tail(self, name: str = TRACE, offset: int = 0) -> Tail:
        """The new records of a growing file (TRACE, EVENTS, JUDGE_TRACE) since `offset`, read by `Tail.read`."""
        return Tail.of(self.path, name, offset)

    def check_layout(self, root: Path) -> None:
        """Refuse a game of a layout this code does not read (records.run_dir.LayoutError), once per meta.json."""
        now = stamp(self.path / META)
        if now is None or now != self._layout_checked:
            check_layout(root, [self.path])
            self._layout_checked = now


@dataclass
class _Folder:
    """A folder as last listed: its time, its files' names and its subfolders' names."""

    mtime: int
    files: frozenset[str]
    folders: tuple[str, ...]
    listed: int
    """When it was listed (ns): a listing within RACY of the folder's time is not trusted (listed again)."""
    game: Game | None = None


@dataclass
class Walk:
    """A run's folders as last listed (see the module's docstring: the walk)."""

    root: Path
    folders: dict[str, _Folder] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def games(self) -> list[Game]:
        with self.lock:
            seen: dict[str, _Folder] = {}
            found: list[Game] = []
            root = str(self.root)
            self._visit(root, "", 0, seen, found)
            self.folders = seen
            return found

    def _visit(self, path: str, name: str, depth: int, seen: dict[str, _Folder], found: list[Game]) -> None:
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            return
        folder = self.folders.get(path)
        if folder is None or folder.mtime != mtime or folder.listed - mtime < RACY:
            listed = time.time_ns()
            try:
                entries = list(os.scandir(path))
            except OSError:
                return
            files, folders = [], []
            for e in entries:
                try:
                    (folders if e.is_dir() else files).append(e.name)
                except OSError:
                    continue
            known, folder = folder, _Folder(mtime, frozenset(files), tuple(sorted(folders)), listed)
            if known is not None and (known.mtime, known.files) == (mtime, folder.files):
                folder.game = known.game  # listed again (changed just now), the same: the same game
        seen[path] = folder
        is_game = META in folder.files or (depth > 0 and name.rpartition("/")[2].startswith(GAME_PREFIX))
        if is_game:
            if folder.game is None:
                finished_at = None
                if RESULT in folder.files:
                    found_stamp = stamp(Path(path) / RESULT)
                    finished_at = found_stamp[0] if found_stamp else None
                folder.game = Game(Path(path), name or Path(path).name, folder.files, mtime, finished_at)
            found.append(folder.game)
            return
        if depth >= MAX_DEPTH:
            return
        for sub in folder.folders:
            if not sub.startswith("."):
                self._visit(os.path.join(path, sub), f"{name}/{sub}" if name else sub, depth + 1, seen, found)


_WALKS: dict[Path, Walk] = {}
_WALKS_LOCK = threading.Lock()


def walk(root: Path) -> Walk:
    """The walk of the games at or under `root` (a run, a game, any folder), one per folder in this process: every
    reader of a run shares its listings (a folder that is not there has no games)."""
    root = Path(root)
    with _WALKS_LOCK:
        found = _WALKS.get(root)
        if found is None:
            found = _WALKS[root] = Walk(root)
        return found
