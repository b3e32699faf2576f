"""The one scheduler: plays any study's games, then measures, judges the health of and reports them.

`play` holds the run directory (its lock; the study's fingerprint in OUT/`Study.record`: a directory of another
config is refused, naming what changed) and plays every unfinished game of the study's lanes, at most
`Study.concurrency` lanes at once, the games of a lane in order, each through `host.job.play_job` (a finished game
is kept; an unfinished one is played again from its start, its recorded answers first). `max_games` caps the run's
finished games (spread over the groups and lanes: `guard.allotment`); a `spend.Budget` starts no game that would
take the run over its dollars; a game aborted (the watchdog, too many failed calls) ends its lane for now, is named
and is replayed on resume. `conclude` measures the finished games, takes each group's health (`records.health`)
and writes the report; `Outcome` and `verdict` say whether the numbers are a result (exit 3: unhealthy, aborted
games or the study's own problems; 4: stopped by the budget). The Ray backend (`ray_backend.py`) plays the same
lanes with `play_lane` in Ray tasks.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from loguru import logger

from avalon_agents.experiments.guard import allotment, check_free, check_same_config, run_lock
from avalon_agents.experiments.spend import EXIT_BUDGET, Budget
from avalon_agents.experiments.study import Lane, Outcome, Study
from avalon_agents.records.health import EXIT_UNHEALTHY
from avalon_agents.records.run_dir import PROGRESS, is_done, write_json_atomic

if TYPE_CHECKING:
    from avalon_agents.host.host import GameWatcher

OnGame = Callable[[Lane, int, Path], None]
"""Called with (lane, game number in it, game directory) after each finished game."""

OnStart = Callable[[Lane, int, Path], "GameWatcher | None"]
"""Called with (lane, game number in it, game directory) as each game starts; what it returns follows that game
(host.watching: told of each request waited on and each event, as they happen; the progress bar's rounds and the
streamed transcript)."""


@contextmanager
def holding(study: Study, out: Path) -> Iterator[None]:
    """Hold OUT while the block plays: the lock, the study's fingerprint checked against the games already there
    (ConfigChanged naming what changed) and recorded, and the run record (OUT/run.json: the study's command, name
    and config, the plugins loaded, the run it replays if it does, the environment; records.run_record) written as
    it starts."""
    from avalon_agents.experiments.replays import replay_sources
    from avalon_agents.records.run_record import write_run_record

    with run_lock(out):
        current = study.fingerprint()
        check_same_config(out, current, study.record)
        study.write_record(out, current)
        config = study.config()
        replayed = replay_sources(config)
        write_run_record(out, study.command, study.name, config, replays=str(replayed[0]) if replayed else "")
        yield


def preflight(study: Study, out: Path) -> None:
    """Before anything is printed or played: its models can be built, OUT is free and holds no games of another
    config. Raises ValueError (one line)."""
    study.check_models()
    check_free(out)
    check_same_config(out, study.fingerprint(), study.record)


async def play(study: Study, out: Path, *, max_games: int | None = None, budget: Budget | None = None,
               on_game: OnGame | None = None, on_start: OnStart | None = None) -> list[str]:
    """Play every unfinished game of `study` under `out` (see the module's docstring). Returns the games aborted,
    each with its reason (replayed on resume)."""
    import asyncio

    from avalon_agents.llm import ClientPool

    out = Path(out)
    aborted: list[str] = []
    with holding(study, out):
        clients = ClientPool(limit=study.llm_calls, override=study.override)
        slots = asyncio.Semaphore(study.concurrency)
        tally = Tally(study, out, aborted)

        def finished_one(lane: Lane, n: int, path: Path) -> None:
            tally.game_finished()
            if on_game is not None:
                on_game(lane, n, path)

        async def one(lane: Lane, cap: int | None) -> None:
            async with slots:
                await play_lane(study, lane, clients, finished_one, cap, aborted, budget, on_start)

        try:
            await asyncio.gather(*(one(lane, cap) for lane, cap in planned(study, out, max_games)))
        finally:
            tally.end()
    return aborted


class Tally:
    """The study's progress.json (records.run_dir.PROGRESS), rewritten when it starts, after each finished game
    and when it ends (`done`: every planned game finished; `stopped`: interrupted, capped, over budget or with
    games aborted)."""

    def __init__(self, study: Study, out: Path, aborted: list[str]) -> None:
        self.out, self.aborted = out, aborted
        self.head = {"command": study.command, "name": study.name}
        self.planned = total(study, out)
        self.finished = finished(study, out)
        self.write("playing")

    def game_finished(self) -> None:
        self.finished += 1
        self.write("playing")

    def now(self, finished_games: int) -> None:
        """The finished games as counted on disk (the Ray backend's driver): written when the count changed."""
        if finished_games != self.finished:
            self.finished = finished_games
            self.write("playing")

    def end(self) -> None:
        self.write("done" if self.finished == self.planned and not self.aborted else "stopped")

    def write(self, state: str) -> None:
        import datetime as dt
        import os

        write_json_atomic(self.out / PROGRESS, {
            **self.head, "state": state, "planned": self.planned, "finished": self.finished,
            "aborted": list(self.aborted), "pid": os.getpid(),
            "updated": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})


async def play_lane(study: Study, lane: Lane, clients, on_game: OnGame | None = None, cap: int | None = None,
                    aborted: list[str] | None = None, budget: Budget | None = None,
                    on_start: OnStart | None = None) -> None:
    """Play the lane's unfinished games in order (at most `cap` of them now). A game aborted ends the lane for now
    (its reason added to `aborted`); with a `budget`, a game that would take the run over it is not started;
    `on_start` may give each game a watcher."""
    from avalon_agents.host.host import GameAborted, watching
    from avalon_agents.host.job import play_job

    aborted = [] if aborted is None else aborted
    pending = [n for n, path in enumerate(lane.paths, 1) if not is_done(path)]
    job = None
    for n in pending:
        if cap is not None:
            if cap <= 0:
                return
            cap -= 1
        ticket = budget.admit(lane.group) if budget is not None else None
        if budget is not None and ticket is None:
            return
        job = job or study.jobs(lane, clients, pending[0])  # made only when a game is played
        path = lane.paths[n - 1]
        finished = False
        watcher = on_start(lane, n, path) if on_start is not None else None
        try:
            with watching(watcher) if watcher is not None else nullcontext():
                await play_job(job(n), path)
            finished = True
        except GameAborted as exc:
            logger.warning("{} aborted: {} (replayed on resume; its lane stops here)", lane.game_label(n), exc)
            aborted.append(f"{lane.game_label(n)}: {exc}")
            return
        finally:
            if budget is not None:
                budget.settle(ticket, lane.group, path, finished=finished)
        if on_game is not None:
            on_game(lane, n, path)


def planned(study: Study, out: Path, max_games: int | None) -> list[tuple[Lane, int | None]]:
    """The lanes that still have games to play now, each with how many (None: all): `max_games` caps the run's
    finished games, the first game of every lane of every group before any second one (`guard.allotment`)."""
    lanes = study.lanes(out)
    groups = list(dict.fromkeys(lane.group for lane in lanes))
    place, per_group = {}, {}  # lane index -> (group index, its ordinal in the group)
    pending, finished = [], 0
    for i, lane in enumerate(lanes):
        per_group[lane.group] = per_group.get(lane.group, 0) + 1
        place[i] = (groups.index(lane.group), per_group[lane.group])
        for n, path in enumerate(lane.paths, 1):
            if is_done(path):
                finished += 1
            else:
                pending.append((*place[i], n))
    chosen = allotment(pending, finished, max_games)
    plan = []
    for i, lane in enumerate(lanes):
        count = sum(1 for g, k, _ in chosen if (g, k) == place[i])
        if count:
            plan.append((lane, None if max_games is None else count))
    return plan


def finished(study: Study, out: Path) -> int:
    """The study's finished games under `out`."""
    return sum(is_done(path) for lane in study.lanes(out) for path in lane.paths)


def games(study: Study, out: Path) -> list[tuple[str, Path]]:
    """Every game of the study, as (its group, its directory)."""
    return [(lane.group, path) for lane in study.lanes(out) for path in lane.paths]


def total(study: Study, out: Path) -> int:
    """The study's games (finished or not)."""
    return sum(len(lane.paths) for lane in study.lanes(out))


async def conclude(study: Study, out: Path, aborted: list[str] | None = None,
                   budget: Budget | None = None) -> Outcome:
    """Measure the study's finished games, take their health and write its report."""
    measured = study.measure(out)
    if inspect.isawaitable(measured):
        measured = await measured
    health = study.health(out, measured)
    files = study.report(out, measured, health)
    study.declare_result(out)
    return Outcome(out=Path(out), measured=measured, health=health, aborted=list(aborted or []),
                   stopped=budget.stopped if budget is not None else None, problems=study.problems(measured),
                   files=files)


async def run(study: Study, out: Path, **options) -> Outcome:
    """`play` then `conclude` (the options are `play`'s)."""
    aborted = await play(study, out, **options)
    return await conclude(study, out, aborted, options.get("budget"))


def verdict(study: Study, outcome: Outcome) -> tuple[int, str] | None:
    """(exit code, one line) when the numbers are no result: the study's own problems, a group over its health
    limits or games aborted (3), or the budget stopped the run (4); None: a result."""
    if outcome.problems:
        return EXIT_UNHEALTHY, "; ".join(outcome.problems)
    if any(problems for _, problems in outcome.health.values()):
        return EXIT_UNHEALTHY, study.unhealthy(outcome.health)
    if outcome.aborted:
        return EXIT_UNHEALTHY, (f"{len(outcome.aborted)} game(s) aborted (no progress, or too many of their calls "
                                "failed), not counted; rerun to replay them")
    if outcome.stopped:
        return EXIT_BUDGET, outcome.stopped
    return None
