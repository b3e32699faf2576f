"""What `avalon view` may read: files under the folders it was given, none over its size cap, each looking like what
its name says. Every path a page reads is resolved (symlinks followed) and must lie under a viewed folder (resolved
too): a link out of them, to another run or to /etc/passwd, is refused as if it were not there (`Outside`, 404). A
file over `max_bytes` is refused naming it (`TooLarge`, 422) before anything reads it: a 4 GB trace would hold one
run's pages for a minute. A game's JSONL file whose first byte is not `{`, or (the game finished) whose last byte is
not a newline, is corrupt (`Corrupt`, 422): read, it would count as no calls, with no word.

Only sizes, links and two bytes are looked at here: nothing is parsed (records/ reads the files)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from collections.abc import Callable

from avalon_agents.records.reader import RUN_FILES
from avalon_agents.records.run_dir import ABORTED, EVENTS, HEALTH, JUDGE_TRACE, META, RESULT, SEATING, TRACE

MAX_FILE_BYTES = 512 * 2**20
"""The largest file `avalon view` reads by default (`avalon view --max-file-mb`)."""
RESOLVED = 2.0
"""Seconds a folder's resolved path is kept (`Confine.resolve`)."""
JSONL = (TRACE, EVENTS, JUDGE_TRACE)
"""A game's JSON-lines files, checked for a first `{` and a last newline."""
GAME_FILES = {META, SEATING, RESULT, HEALTH, ABORTED, *JSONL}


def game_file(name: str) -> bool:
    """A file of a game's folder that a page reads (its records, an interrupted attempt's trace)."""
    return name in GAME_FILES or (name.startswith("attempt-") and name.endswith(".jsonl"))


def run_file(name: str) -> bool:
    """A run's own file that a page reads (records.reader.RUN_FILES)."""
    return name in RUN_FILES


def analysis_file(name: str) -> bool:
    """A file of a run's analysis folder that a page reads (its metrics, judged tables, judges' calls)."""
    return name.endswith((".json", ".jsonl", ".csv"))


@dataclass(frozen=True)
class Problem:
    """Why a path is not read: `status` (404: outside the viewed folders; 422: too large, corrupt, a newer layout),
    one line naming it, and what its run's row says (`kind`: its state)."""

    status: int
    message: str
    kind: str = "unreadable"


class Unreadable(LookupError):
    """A path `avalon view` does not read (its `problem`)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def size_text(n: int) -> str:
    for unit, size in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


class Confine:
    """The viewed folders (`roots`) and the size cap (`max_bytes`) every read is checked against."""

    def __init__(self, roots: list[Path], max_bytes: int = MAX_FILE_BYTES) -> None:
        self.roots = [os.path.realpath(r) for r in roots]
        self.max_bytes = max_bytes
        self._real: dict[str, tuple[float, str]] = {}  # a folder's resolved path, when resolved (games share them)

    def inside(self, path: Path | str) -> bool:
        """`path`, resolved, is a viewed folder or under one."""
        real = self.resolve(str(path))
        return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots)

    def resolve(self, path: str) -> str:
        """`path` with every link resolved; its parent's resolution kept for `RESOLVED` seconds (ten thousand games
        share a few parents; a folder swapped for a link is seen within that time, as a check and a read are never
        one step anyway)."""
        parent, name = os.path.split(os.path.abspath(path))
        if not name:
            return os.path.realpath(path)
        now = time.monotonic()
        known = self._real.get(parent)
        if known is None or now - known[0] > RESOLVED:
            if len(self._real) > 65536:
                self._real.clear()
            known = self._real[parent] = (now, os.path.realpath(parent))
        if os.path.islink(path):
            return os.path.realpath(path)
        return os.path.join(known[1], name)

    def folder(self, path: Path, shown: str) -> Problem | None:
        """A folder's problem: outside the viewed folders (None: it may be read)."""
        if not self.inside(path):
            return Problem(404, f"{shown} is a link out of the viewed folders: not read")
        return None

    def files(self, folder: Path, shown: str, finished: bool = True, deep: bool = False,
              read: Callable[[str], bool] = game_file) -> Problem | None:
        """The first problem of the files a page reads in a folder (`read`: which, by name; `shown`: how a message
        names the folder): a file linking out of the viewed folders, one over the cap, a game's JSONL file that is
        not JSON lines (its last byte checked only when the game is `finished`: a line may be being written).
        `deep`: its subfolders' files too."""
        problem = self.folder(folder, shown)
        if problem is not None:
            return problem
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return None  # gone since it was listed: the readers say so
        for entry in entries:
            name = f"{shown}/{entry.name}" if shown else entry.name
            if not (deep and entry.is_dir()) and not read(entry.name):
                continue
            if entry.is_symlink() and not self.inside(entry.path):  # the folder is inside: only a link leads out
                return Problem(404, f"{name} is a link out of the viewed folders: not read")
            try:
                if entry.is_dir():
                    found = self.files(Path(entry.path), name, finished, deep, read) if deep else None
                    if found is not None:
                        return found
                    continue
                size = entry.stat().st_size
            except OSError:
                continue
            if size > self.max_bytes:
                return Problem(422, f"{name} is {size_text(size)}, over the viewer's cap of "
                                    f"{size_text(self.max_bytes)} a file (avalon view --max-file-mb): not read")
            if entry.name in JSONL and size:
                problem = _jsonl(Path(entry.path), name, size, finished)
                if problem is not None:
                    return problem
        return None


def _jsonl(path: Path, shown: str, size: int, finished: bool) -> Problem | None:
    try:
        with open(path, "rb") as f:
            first = f.read(1)
            f.seek(size - 1)
            last = f.read(1)
    except OSError:
        return None
    if first != b"{" or (finished and last != b"\n"):
        where = f"starts with {first!r}" if first != b"{" else "ends mid-line"
        return Problem(422, f"{shown} is corrupt: not JSON lines (it {where})")
    return None
