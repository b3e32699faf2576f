"""The runs under a set of folders, each as one index row: what produced it, how far it got, its health and cost.

A run is a folder holding a run's own record (experiment.json, study.json, progress.json, import.json) or game
folders directly (`game-NNNNN`, records.run_dir.GAME_PREFIX, or any folder holding meta.json); the walk does not
descend into a run. A run's id is its path under the folder it was found in (with that folder's name first when
several folders are viewed), so an address names it whatever the machine.

`Catalog` keeps every row it computed with the file times it was computed from (`Signature`): a run whose files did
not change is not read again, and of a run that changed only the games finished since are read (their health.json
files, added to the run's totals). A run still playing (progress.json `playing`) also counts its unfinished games'
calls from their traces, so its spend moves while a game plays. Nothing here writes anywhere.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avalon_agents.prices import NoPrice, Prices
from avalon_agents.records.health import HealthLimits
from avalon_agents.records.run_dir import (EXPERIMENT, GAME_PREFIX, HEALTH, IMPORT_REPORT, META, PROGRESS, RESULT,
                                           STUDY, TRACE, read_progress, read_trace)
from avalon_agents.records.usage import usage

RUN_FILES = (EXPERIMENT, STUDY, PROGRESS, IMPORT_REPORT)
"""A folder holding one of these is a run."""
MAX_DEPTH = 6
"""How deep under a viewed folder runs are looked for (a run's own games are deeper: they are not walked)."""
SUMMED = ("llm_calls", "attempts", "input_tokens", "output_tokens", "decisions", "reasks", "fallbacks",
          "failed_calls", "seat_faults", "seat_fallbacks", "speeches", "echoes", "throttled")
"""The counts of a game's health.json that a run's row adds up."""


class UnknownRun(LookupError):
    """No run of that id under the viewed folders (the server answers 404)."""


def find_runs(root: Path) -> list[Path]:
    """Every run at or under `root`, in path order (see the module's docstring)."""
    root = Path(root)
    if _is_run(root):
        return [root]
    found: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        try:
            entries = sorted((e for e in os.scandir(folder) if e.is_dir() and not e.name.startswith(".")),
                             key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            path = Path(entry.path)
            if _is_run(path):
                found.append(path)
            elif depth < MAX_DEPTH:
                walk(path, depth + 1)

    walk(root, 1)
    return found


def _is_run(folder: Path) -> bool:
    if folder.name.startswith(GAME_PREFIX) and (folder / META).is_file():
        return False  # a game: its run is above it
    if any((folder / name).is_file() for name in RUN_FILES):
        return True
    try:
        return any(e.is_dir() and (e.name.startswith(GAME_PREFIX) or os.path.isfile(os.path.join(e.path, META)))
                   for e in os.scandir(folder))
    except OSError:
        return False


def game_folders(run: Path) -> list[Path]:
    """Every game folder of a run, in path order, at any depth under it: named `game-NNNNN` (told by the name alone),
    or any folder holding meta.json (a plugin study names its games' folders itself)."""
    games: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        try:
            entries = sorted((e for e in os.scandir(folder) if e.is_dir()), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith(GAME_PREFIX) or os.path.isfile(os.path.join(entry.path, META)):
                games.append(Path(entry.path))
            elif depth < MAX_DEPTH and not entry.name.startswith("."):
                walk(Path(entry.path), depth + 1)

    walk(run, 0)
    return games


def kind_of(run: Path, progress: dict[str, Any] | None, games: list[Path] = ()) -> str:
    """What produced the run: the command its progress.json names (`run`, `tournament`, `redteam`, `bias`, a plugin
    study's), else what its files say (run, tournament, import, play; `served table`: games with a person's seat and
    no record, as `avalon serve` writes them)."""
    if progress and progress.get("command"):
        return str(progress["command"])
    if (run / EXPERIMENT).is_file():
        return "tournament" if (run / "tournament").is_dir() else "run"
    if (run / IMPORT_REPORT).is_file():
        return "import"
    if (run / STUDY).is_file():
        return "play"
    return "served table" if "human" in _seat_kinds(list(games)) else "games"


@dataclass
class Totals:
    """A run's counted games: their health.json counts summed, by model too, and which games are in."""

    counted: dict[str, int | None] = field(default_factory=dict)
    """Each counted game's folder and its time when counted (its folder unchanged since: still finished)."""
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(SUMMED, 0))
    valid: float = 0
    by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    failed_by_cause: dict[str, int] = field(default_factory=dict)

    def add(self, u: dict[str, Any]) -> None:
        for key in SUMMED:
            self.sums[key] += u.get(key) or 0
        if u.get("valid_response_rate") is not None:  # health.json keeps the rate: valid = rate x decisions
            self.valid += round(u["valid_response_rate"] * u.get("decisions", 0))
        for spec, tokens in (u.get("by_model") or {}).items():
            mine = self.by_model.setdefault(spec, {})
            for key, n in tokens.items():
                mine[key] = mine.get(key, 0) + n
        for cause, n in (u.get("failed_by_cause") or {}).items():
            self.failed_by_cause[cause] = self.failed_by_cause.get(cause, 0) + n

    def copy(self) -> Totals:
        return Totals(dict(self.counted), dict(self.sums), self.valid,
                      {spec: dict(t) for spec, t in self.by_model.items()}, dict(self.failed_by_cause))


Signature = tuple
"""The file times a row was computed from: equal signatures, the same row."""


@dataclass
class Cached:
    signature: Signature
    row: dict[str, Any]
    totals: Totals


class Catalog:
    """The runs under `roots` and their rows, computed once per change (see the module's docstring).

    Args:
        roots: the folders viewed (each may itself be a run).
        prices: what tokens cost (default: the shipped table); a model without a price makes `usd` None.
    """

    def __init__(self, roots: list[Path], prices: Prices | None = None) -> None:
        self.roots = [Path(r) for r in roots]
        self.prices = prices or Prices.shipped()
        self._rows: dict[Path, Cached] = {}
        self._ids: dict[str, Path] = {}
        self._lock = threading.Lock()

    def runs(self) -> list[Path]:
        """Every run under the roots, found afresh (a run started since shows up)."""
        found = []
        for root in self.roots:
            for run in find_runs(root):
                found.append(run)
                self._ids[self.run_id(run)] = run
        return found

    def run_id(self, run: Path) -> str:
        """A run's id: its path under its root, with the root's name first when several roots are viewed."""
        for root in self.roots:
            try:
                rel = Path(run).relative_to(root)
            except ValueError:
                continue
            parts = ([root.resolve().name] if len(self.roots) > 1 or rel == Path(".") else []) + list(rel.parts)
            return "/".join(parts)
        raise UnknownRun(str(run))

    def path(self, run_id: str) -> Path:
        """The run of an id. Raises UnknownRun."""
        if run_id not in self._ids:
            self.runs()
        if run_id not in self._ids:
            raise UnknownRun(f"no run {run_id!r} under {', '.join(map(str, self.roots))}")
        return self._ids[run_id]

    def index(self) -> list[dict[str, Any]]:
        """One row per run (see `row`), in path order."""
        return [self.row(run) for run in self.runs()]

    def row(self, run: Path) -> dict[str, Any]:
        """The run's index row: id, name, kind, state, games finished and planned, health, models, tokens,
        dollars, dates, commit. Recomputed only when its files changed; of the games, only those finished since."""
        with self._lock:
            progress = read_progress(run)
            playing = (progress or {}).get("state") == "playing"
            cached = self._rows.get(run)
            quick = progress is not None and not playing  # progress.json changes whenever a game finishes
            signature = _quick_signature(run) if quick else None
            if cached is not None and signature is not None and cached.signature == signature:
                return cached.row
            games = game_folders(run)
            stamps = [_mtime(game) for game in games]
            signature = signature or _full_signature(run, games, stamps)
            if cached is not None and cached.signature == signature and not playing:
                return cached.row
            totals = cached.totals.copy() if cached is not None else Totals()
            done, unfinished = [], []
            for game, stamp in zip(games, stamps):
                key = str(game)
                if stamp is not None and totals.counted.get(key) == stamp:  # counted, its folder untouched since
                    done.append(game)
                elif (game / RESULT).is_file():
                    done.append(game)
                    if key not in totals.counted:
                        totals.add(_health(game))
                    totals.counted[key] = stamp
                else:
                    unfinished.append(game)
            live = Totals()
            if playing:
                for game in unfinished:
                    if (game / TRACE).is_file():
                        live.add(usage(read_trace(game)))
            row = self._make_row(run, progress, games, done, totals, live)
            self._rows[run] = Cached(signature, row, totals)
            return row

    def _make_row(self, run: Path, progress: dict[str, Any] | None, games: list[Path], done: list[Path],
                  totals: Totals, live: Totals) -> dict[str, Any]:
        record = _record(run)
        sums = {k: totals.sums[k] + live.sums[k] for k in SUMMED}
        by_model = {spec: dict(t) for spec, t in totals.by_model.items()}
        for spec, tokens in live.by_model.items():
            for key, n in tokens.items():
                by_model.setdefault(spec, {})[key] = by_model.get(spec, {}).get(key, 0) + n
        decisions = sums["decisions"]
        health = {
            "llm_calls": int(sums["llm_calls"]), "failed_calls": int(sums["failed_calls"]),
            "decisions": int(decisions), "reasks": int(sums["reasks"]), "fallbacks": int(sums["fallbacks"]),
            "valid_response_rate": (totals.valid + live.valid) / decisions if decisions else None,
            "seat_faults": int(sums["seat_faults"]), "seat_fallbacks": int(sums["seat_fallbacks"]),
            "failed_by_cause": totals.failed_by_cause,
        }
        health["problems"] = HealthLimits().problems({**health, "failed_by_cause": totals.failed_by_cause})
        try:
            usd = sum(self.prices.dollars(spec, t.get("input_tokens", 0), t.get("output_tokens", 0),
                                          t.get("cached_tokens", 0)) for spec, t in by_model.items())
        except NoPrice:
            usd = None
        planned = (progress or {}).get("planned")
        state = (progress or {}).get("state") or ("done" if games and len(done) == len(games) else "unfinished")
        if state == "playing" and not _alive((progress or {}).get("pid")):
            state = "stopped"  # its process is gone (killed): not playing any more
        return {
            "id": self.run_id(run), "name": record.get("name") or (progress or {}).get("name") or run.name,
            "kind": kind_of(run, progress, games), "state": state,
            "games_finished": len(done), "games_planned": planned if planned is not None else len(games),
            "aborted": len((progress or {}).get("aborted") or []),
            "health": health, "models": sorted(by_model) or _seat_kinds(games),
            "input_tokens": int(sums["input_tokens"]), "output_tokens": int(sums["output_tokens"]),
            "usd": usd, "started": record.get("started") or _time(games[0] if games else run),
            "updated": (progress or {}).get("updated") or _time(done[-1] if done else run),
            "commit": record.get("commit"),
        }


def _quick_signature(run: Path) -> Signature:
    return tuple(_mtime(run / name) for name in RUN_FILES) + (_mtime(run),)


def _full_signature(run: Path, games: list[Path], stamps: list[int | None]) -> Signature:
    """The run's files' times, each game folder's (`stamps`) and each folder holding games' (one stat each)."""
    parents = dict.fromkeys(game.parent for game in games)
    return (_quick_signature(run) + tuple(zip((g.name for g in games), stamps))
            + tuple((str(folder), _mtime(folder)) for folder in parents))


def _mtime(path: Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _health(game: Path) -> dict[str, Any]:
    """A finished game's health.json (its trace's usage when the file is missing: a game written before it)."""
    try:
        return json.loads((game / HEALTH).read_text())
    except (OSError, ValueError):
        return usage(read_trace(game)) if (game / TRACE).is_file() else {}


def _record(run: Path) -> dict[str, Any]:
    """The run's own record (experiment.json, study.json or import.json), or {}."""
    for name in (EXPERIMENT, STUDY, IMPORT_REPORT):
        try:
            data = json.loads((run / name).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            return data
    return {}


def _seat_kinds(games: list[Path]) -> list[str]:
    """The seats' kinds of a run without LLM calls (its first game's: rulebot, random, human, external)."""
    for game in games[:1]:
        try:
            seats = json.loads((game / META).read_text()).get("seats") or {}
        except (OSError, ValueError):
            return []
        return sorted(set(map(str, seats.values())))
    return []


def _time(path: Path) -> str | None:
    import datetime as dt

    stamp = _mtime(path)
    if stamp is None:
        return None
    return dt.datetime.fromtimestamp(stamp / 1e9, dt.timezone.utc).isoformat(timespec="seconds")


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
