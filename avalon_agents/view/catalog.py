"""The runs under a set of folders, each as one index row: what produced it, how far it got, its health and cost.

A run is what records.reader says is one (`is_run`: a folder holding a run record, run.json or an older run's
experiment.json, study.json, progress.json or import.json, or game folders directly); the walk does not descend into
a run. Every run is read through records.reader (`open_run`): its command, name and environment from its run record,
its games from its one cached walk, each game's health as a `Health` that adds up. A run's id is its path under the
folder it was found in (with that folder's name first when several folders are viewed), so an address names it
whatever the machine.

`Catalog` keeps every row it computed with the file times it was computed from (`Signature`): a run whose files did
not change is not read again, and of a run that changed only the games finished since are read (their health.json
files, added to the run's totals). A run still playing (progress.json `playing`) also counts its unfinished games'
calls from the new lines of their traces (a `Tail` each), so its spend moves while a game plays. Nothing here writes
anywhere.

Only what lies under the viewed folders is read (confine.py): a run folder linking out of them is not listed; a run
holding a file that links out, one over the size cap, a corrupt JSONL file or a game of a newer layout is listed
`unreadable` or `newer layout` with the file named (`unreadable` on its row, `problem`), and its pages refuse to read
it. Each run is computed under its own lock: a slow run holds its own pages, never another's.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger

from avalon_agents.prices import NoPrice, Prices
from avalon_agents.records.health import Health
from avalon_agents.records.health import problems as health_problems
from avalon_agents.records.reader import Game, Run, Tail, find_runs, open_run, stamp
from avalon_agents.records.run_dir import LayoutError
from avalon_agents.records.run_plugins import load_recorded, said
from avalon_agents.view.confine import MAX_FILE_BYTES, Confine, Problem, game_file, run_file

__all__ = ["Catalog", "UnknownRun", "find_runs"]


class UnknownRun(LookupError):
    """No run of that id under the viewed folders (the server answers 404)."""


@dataclass
class Totals:
    """A run's counted games: their health summed, and which games are in."""

    counted: dict[str, int | None] = field(default_factory=dict)
    """Each counted game's folder and its time when counted (its folder unchanged since: still finished)."""
    health: Health = field(default_factory=Health)
    problems: dict[str, Problem] = field(default_factory=dict)
    """Each counted game's problem (confine.py): its files not read."""

    def copy(self) -> Totals:
        return Totals(dict(self.counted), self.health, dict(self.problems))


@dataclass
class Live:
    """An unfinished game's calls so far: the tail of its trace and the health of what it read."""

    tail: Tail
    health: Health = field(default_factory=Health)

    def read(self) -> Health:
        new = self.tail.read()
        if self.tail.restarted:  # a new attempt: its trace from the start
            self.health = Health()
        if new:
            self.health = self.health + Health.of(new)
        return self.health


Signature = tuple
"""The file times a row was computed from: equal signatures, the same row."""


@dataclass
class Cached:
    signature: Signature
    row: dict[str, Any]
    totals: Totals
    problem: Problem | None = None


class Catalog:
    """The runs under `roots` and their rows, computed once per change (see the module's docstring).

    Args:
        roots: the folders viewed (each may itself be a run).
        prices: what tokens cost (default: the shipped table); a model without a price makes `usd` None.
        max_bytes: the largest file read (confine.py).
    """

    def __init__(self, roots: list[Path], prices: Prices | None = None, max_bytes: int = MAX_FILE_BYTES,
                 run_plugins: bool = False) -> None:
        self.roots = [Path(r) for r in roots]
        self.prices = prices or Prices.shipped()
        self.confine = Confine(self.roots, max_bytes)
        self.run_plugins = run_plugins
        self._plugins: dict[Path, Problem | None] = {}  # each run found: its plugins loaded (None), or why not
        self._plugins_lock = threading.Lock()
        self._rows: dict[Path, Cached] = {}
        self._tails: dict[str, Live] = {}  # each unfinished game's trace read so far (a run playing)
        self._ids: dict[str, Path] = {}
        self._lock = threading.Lock()  # guards _ids and _locks only
        self._locks: dict[Path, threading.Lock] = {}  # one per run: its row computed once at a time

    def runs(self) -> list[Path]:
        """Every run under the roots, found afresh (a run started since shows up; one linking out of the roots
        does not)."""
        found = [run for root in self.roots for run in find_runs(root) if self.confine.inside(run)]
        for run in found:
            self._load_plugins(run)
        with self._lock:
            for run in found:
                self._ids[self.run_id(run)] = run
        return found

    def _load_plugins(self, run: Path) -> None:
        """With `run_plugins`, the plugins a run recorded (records.run_plugins), loaded when the catalog first
        finds it: a run started after `avalon view` (which loads those of the runs there at its start, refusing
        one in one line) shows its plugins' metrics too, and one missing or changed since it ran is its row's
        problem (its pages refuse it, as a run read without the code that made it is not shown as a result)."""
        if not self.run_plugins or run in self._plugins:
            return
        with self._plugins_lock:
            if run in self._plugins:
                return
            try:
                keys = load_recorded([run])
            except ValueError as exc:
                self._plugins[run] = Problem(422, str(exc))
                return
            self._plugins[run] = None
            if keys:
                logger.info("{}", said(keys, f"run {run}"))

    def ids(self) -> list[str]:
        """The run ids found so far (a copy: another request may be finding runs)."""
        with self._lock:
            return list(self._ids)

    def problem(self, path: Path) -> Problem | None:
        """Why the run's pages are not read (its row's first `unreadable`), None: they may be."""
        self.row(path)
        cached = self._rows.get(path)
        return cached.problem if cached is not None else None

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

    def note(self, path: Path, problem: Problem) -> None:
        """A problem a page met reading the run (a corrupt line inside a file): its row says it and its pages refuse
        it until a file of the run changes (its row is then computed again)."""
        cached = self._rows.get(path)
        if cached is None or problem.message in cached.row["unreadable"]:
            return
        cached.row = {**cached.row, "state": problem.kind if cached.problem is None else cached.row["state"],
                      "unreadable": [*cached.row["unreadable"], problem.message]}
        cached.problem = cached.problem or problem

    def path(self, run_id: str) -> Path:
        """The run of an id. Raises UnknownRun (also for a run whose folder was removed since)."""
        if run_id not in self._ids or not self._ids[run_id].is_dir():
            with self._lock:
                self._ids.pop(run_id, None)
            self.runs()
        if run_id not in self._ids:
            raise UnknownRun(f"no run {run_id!r} under {', '.join(map(str, self.roots))}")
        return self._ids[run_id]

    def index(self) -> list[dict[str, Any]]:
        """One row per run (see `row`), in path order."""
        return [self.row(run) for run in self.runs()]

    def row(self, path: Path) -> dict[str, Any]:
        """The run's index row: id, name, kind, state, games finished and planned, health, models, tokens,
        dollars, dates, commit, and `unreadable` (what is not read, naming each file: state `unreadable` or
        `newer layout`). Recomputed only when its files changed; of the games, only those finished since."""
        with self._lock:
            lock = self._locks.setdefault(Path(path), threading.Lock())
        with lock:
            run = open_run(path)
            progress = run.progress()
            playing = progress is not None and progress.state == "playing"
            cached = self._rows.get(path)
            quick = progress is not None and not playing  # progress.json changes whenever a game finishes
            signature = run.stamps() if quick else None
            if cached is not None and signature is not None and cached.signature == signature:
                return cached.row
            games = run.games()
            signature = signature or run.stamps() + tuple((g.name, g.stamp) for g in games)
            if cached is not None and cached.signature == signature and not playing:
                return cached.row
            totals = cached.totals.copy() if cached is not None else Totals()
            done, unfinished, added = [], [], []
            for game in games:
                key = str(game.path)
                if not game.finished:
                    unfinished.append(game)
                    continue
                self._tails.pop(key, None)
                done.append(game)
                if key not in totals.counted:
                    problem = self.confine.files(game.path, game.name)
                    if problem is None:
                        added.append(_health(game))
                        totals.problems.pop(key, None)
                    else:
                        totals.problems[key] = problem
                totals.counted[key] = game.stamp
            if added:
                totals.health = Health.total([totals.health, *added])
            problems = self._problems(run, done, unfinished, totals, playing)
            live = Health.total(self._live(game).read() for game in unfinished) if playing and not problems else \
                Health()
            row = self._make_row(run, progress, games, done, totals.health + live)
            if problems:
                row.update(state=problems[0].kind,
                           unreadable=[p.message for p in problems[:3]]
                           + ([f"and {len(problems) - 3} more"] if len(problems) > 3 else []))
            self._rows[path] = Cached(signature, row, totals, problems[0] if problems else None)
            return row

    def _problems(self, run: Run, done: list[Game], unfinished: list[Game], totals: Totals,
                  playing: bool) -> list[Problem]:
        """What of the run is not read (confine.py), its layout first: its own files, its counted games', its
        unfinished games' (looked at again each time: they are being written)."""
        problems = [found] if (found := self._plugins.get(run.path)) is not None else []
        for game in done[:1]:  # a run's games share its layout
            try:
                game.check_layout(run.path)
            except LayoutError as exc:
                problems.append(Problem(422, str(exc), "newer layout"))
        own = self.confine.files(run.path, "", finished=not playing, read=lambda n: run_file(n) or game_file(n))
        problems += [own] if own is not None else []
        problems += [totals.problems[str(g.path)] for g in done if str(g.path) in totals.problems]
        for game in unfinished:
            found = self.confine.files(game.path, game.name, finished=False)
            problems += [found] if found is not None else []
        return problems

    def _live(self, game: Game) -> Live:
        key = str(game.path)
        if key not in self._tails:
            self._tails[key] = Live(game.tail())
        return self._tails[key]

    def _make_row(self, run: Run, progress: Any, games: list[Game], done: list[Game],
                  health: Health) -> dict[str, Any]:
        summary = {name: getattr(health, name) for name in (
            "llm_calls", "failed_calls", "decisions", "reasks", "fallbacks", "valid_response_rate", "seat_faults",
            "seat_fallbacks", "failed_by_cause")}
        summary["problems"] = health_problems(health.summary())  # over the limits, and speeches that are not data
        try:
            usd = sum(self.prices.dollars(spec, t.get("input_tokens", 0), t.get("output_tokens", 0),
                                          t.get("cached_tokens", 0)) for spec, t in health.by_model.items())
        except NoPrice:
            usd = None
        planned = progress.planned if progress is not None else None
        state = (progress.state if progress is not None else None) or (
            "done" if games and len(done) == len(games) else "unfinished")
        if state == "playing" and not progress.alive():
            state = "stopped"  # its process is gone (killed): not playing any more
        record = run.record
        return {
            "id": self.run_id(run.path), "name": record.name, "kind": run.kind, "state": state,
            "games_finished": len(done), "games_planned": planned if planned is not None else len(games),
            "aborted": len(progress.aborted) if progress is not None else 0,
            "health": summary, "models": sorted(health.by_model) or run.seat_kinds(),
            "input_tokens": health.input_tokens, "output_tokens": health.output_tokens,
            "usd": usd, "started": record.started or _time(games[0].path if games else run.path),
            "updated": (progress.updated if progress is not None else None) or _time(
                done[-1].path if done else run.path),
            "commit": run.environment.get("commit"),
            "unreadable": [],
        }


def _health(game: Game) -> Health:
    """A finished game's health (none when it cannot be read: its row counts it as no calls)."""
    try:
        return game.health()
    except (OSError, ValueError):
        return Health()


def _time(path: Path) -> str | None:
    import datetime as dt

    found = stamp(path)
    if found is None:
        return None
    return dt.datetime.fromtimestamp(found[0] / 1e9, dt.timezone.utc).isoformat(timespec="seconds")
