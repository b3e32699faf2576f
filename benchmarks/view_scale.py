"""`avalon view` at scale: the index of many run folders and the page of one big run, timed on generated runs.

Generates, once, into OUT (resumable: what exists is skipped):

- OUT/template: a real run of `avalon run`'s code (`run_experiment`): rule bots against random agents, `--template`
  games (default 1,000) in series of 100;
- OUT/index/run-NNNN: `--runs` run folders (default 1,000) of `--games` finished games each (default 100): the
  template's game folders copied whole (meta, events, trace, result, health.json), each game's seating.json
  renumbered to its place, the run's experiment.json and progress.json rewritten with its own name, plan and dates;
- OUT/big/run-big: one run of `--big` games (default 10,000), the template's games copied into series of 100.

Then times, through `avalon view`'s own code (view.pages.View, what the server answers, JSON-encoded as /api/
sends it), the median over `--repeats` of: the index first (a new View each time: nothing cached in memory), the
index again with nothing changed, the index after one run gained a game (a game folder copied in and its
progress.json rewritten, as the runner does, saying it plays), the big run's page first (a new View), again, and
after it gained a game: the page answered, the time until its metrics count that game (counted in a thread,
view.run_data.BEHIND), and the page when they are counted before it is answered; and prints a table. The games
added are removed when timing starts again.

Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/view_scale.py [--out /tmp/avalon-view-scale] [--runs 1000]
     [--games 100] [--big 10000] [--template 1000] [--repeats 5] [--first-repeats 3] [--profile index|page]
Figures: docs/benchmarks.md, "avalon view at scale".
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

SERIES_GAMES = 100  # games per series, in the template and the big run


def template(out: Path, games: int) -> list[Path]:
    """The template run (played by `avalon run`'s code, resumed if it exists): its finished game folders."""
    from loguru import logger

    from avalon_agents.experiments import load_experiments, run_experiment
    from avalon_agents.records.walk import finished_games

    run = out / "template"
    per = min(games, SERIES_GAMES)
    config = {"name": "view-scale", "rules": "official", "players": 6,
              "agents": {"bot": {"kind": "rulebot"}, "rnd": {"kind": "random"}},
              "sides": {"good": "bot", "evil": "rnd"}, "series": -(-games // per), "games_per_series": per,
              "seed": 0}
    out.mkdir(parents=True, exist_ok=True)
    (out / "template.yaml").write_text(yaml.safe_dump(config))
    done = finished_games(run) if run.is_dir() else []
    if len(done) < config["series"] * per:
        logger.remove()
        print(f"playing the template: {config['series'] * per} rule-bot games into {run}", flush=True)
        asyncio.run(run_experiment(load_experiments(out / "template.yaml"), run))
        done = finished_games(run)
    return done


def write_json(path: Path, data: dict) -> None:
    from avalon_agents.records.run_dir import write_json_atomic

    write_json_atomic(path, data)


def copy_game(source: Path, dest: Path, series: int, game: int) -> None:
    """A finished game folder copied whole, its seating.json renumbered to its new place."""
    shutil.copytree(source, dest)
    seating = json.loads((source / "seating.json").read_text())
    write_json(dest / "seating.json", {**seating, "series": series, "game": game})


def make_run(games: list[Path], run: Path, name: str, count: int, offset: int, when: dt.datetime) -> None:
    """A run folder of `count` of the template's games (from `offset`, round the list), with its own records;
    progress.json last, so a run with it is complete and skipped on a rerun."""
    from avalon_agents.records.run_dir import EXPERIMENT, PROGRESS

    if (run / PROGRESS).is_file():
        return
    shutil.rmtree(run, ignore_errors=True)  # a half-made run, from an interrupted generation
    run.mkdir(parents=True)
    per = min(count, SERIES_GAMES)
    series = -(-count // per)
    for k in range(count):
        s, g = divmod(k, per)
        copy_game(games[(offset + k) % len(games)], run / "main" / f"series-{s + 1}" / f"game-{g + 1:05d}", s + 1,
                  g + 1)
    record = json.loads((games[0].parents[2] / EXPERIMENT).read_text())
    record["name"] = name
    record["started"] = when.isoformat(timespec="seconds")
    record["config_file"] = f"experiments/{name}.yaml"
    record["variants"]["main"].update(name=name, series=series, games_per_series=per)
    write_json(run / EXPERIMENT, record)
    write_json(run / PROGRESS, {"command": "run", "name": name, "state": "done", "planned": count,
                                "finished": count, "aborted": [], "pid": 0,
                                "updated": (when + dt.timedelta(minutes=10)).isoformat(timespec="seconds")})


def generate(args: argparse.Namespace) -> tuple[Path, Path, list[Path]]:
    games = template(args.out, args.template)
    start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    index = args.out / "index"
    t0 = time.perf_counter()
    for i in range(args.runs):
        make_run(games, index / f"run-{i + 1:04d}", f"scale-{i + 1:04d}", args.games, i * args.games,
                 start + dt.timedelta(minutes=i))
        if (i + 1) % 100 == 0:
            print(f"  {i + 1}/{args.runs} run folders ({time.perf_counter() - t0:.0f} s)", flush=True)
    big = args.out / "big" / "run-big"
    make_run(games, big, "scale-big", args.big, 0, start)
    return index, big, games


def grow(run: Path, games: list[Path], k: int, playing: bool = False) -> None:
    """The run gains a finished game (copied into its last series as the next game), progress.json rewritten (as
    a run still playing, by this process, when `playing`)."""
    from avalon_agents.records.run_dir import PROGRESS, read_progress

    series = sorted((run / "main").iterdir(), key=lambda p: int(p.name.split("-")[1]))[-1]
    n = len(list(series.iterdir())) + 1
    copy_game(games[k % len(games)], series / f"game-{n:05d}", int(series.name.split("-")[1]), n)
    progress = read_progress(run) or {}
    write_json(run / PROGRESS, {**progress, "planned": progress["planned"] + 1, "finished": progress["finished"] + 1,
                                "updated": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                **({"state": "playing", "pid": os.getpid()} if playing else {})})


def shrink(run: Path, count: int) -> None:
    """Undo `grow`: the run back to its `count` games."""
    from avalon_agents.records.run_dir import PROGRESS, read_progress

    progress = read_progress(run) or {}
    if progress.get("finished", count) == count and progress.get("state") == "done":
        return
    per = min(count, SERIES_GAMES)
    for series in (run / "main").iterdir():
        for game in series.iterdir():
            if int(game.name.split("-")[1]) > per:
                shutil.rmtree(game)
    write_json(run / PROGRESS, {**progress, "planned": count, "finished": count, "state": "done", "pid": 0})


def timed(work: Callable[[], object], repeats: int, before: Callable[[], object] | None = None) -> list[float]:
    """Seconds of `work` (its result JSON-encoded, as the API sends it), `repeats` times; `before` each, untimed."""
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        t = time.perf_counter()
        json.dumps(work())
        times.append(time.perf_counter() - t)
    return times


def measure(args: argparse.Namespace, index: Path, big: Path, games: list[Path]) -> list[tuple[str, list[float]]]:
    from avalon_agents.view.pages import View

    grower = index / f"run-{args.runs:04d}"
    shrink(grower, args.games)
    shrink(big, args.big)
    rows = []
    print("timing ...", flush=True)
    views: list[View] = []
    rows.append(("index, first read (a new View)", timed(lambda: views[-1].index(), args.first_repeats,
                                                          lambda: views.append(View([index])))))
    view = views[-1]
    rows.append(("index again, nothing changed", timed(view.index, args.repeats)))
    added = iter(range(10**6))
    rows.append(("index after one run gained a game", timed(view.index, args.repeats,
                                                            lambda: grow(grower, games, next(added)))))
    shrink(grower, args.games)
    big_views: list[View] = []
    rows.append((f"{args.big:,}-game run's page, first read (a new View)",
                 timed(lambda: big_views[-1].run("run-big"), args.first_repeats,
                       lambda: big_views.append(View([big.parent])))))
    view = big_views[-1]
    rows.append((f"{args.big:,}-game run's page again, nothing changed", timed(lambda: view.run("run-big"),
                                                                             args.repeats)))
    answered, shown = [], []
    for _ in range(args.repeats):  # answered at once, its metrics counted again in a thread (run_data.BEHIND)
        grow(big, games, next(added), playing=True)
        t = time.perf_counter()
        json.dumps(view.run("run-big"))
        answered.append(time.perf_counter() - t)
        while getattr(view.runs, "_computing", ()):
            time.sleep(0.05)
        shown.append(time.perf_counter() - t)
    rows.append((f"{args.big:,}-game run's page after it gained a game", answered))
    rows.append(("  ... until its metrics counting that game are shown", shown))
    from avalon_agents.view import run_data

    behind, run_data.BEHIND = getattr(run_data, "BEHIND", None), float("inf")  # counted before answering
    rows.append((f"{args.big:,}-game run's page after it gained a game, counted before answering",
                 timed(lambda: view.run("run-big"), args.repeats, lambda: grow(big, games, next(added), True))))
    run_data.BEHIND = behind
    shrink(big, args.big)
    return rows


def profile(args: argparse.Namespace, index: Path, big: Path, games: list[Path]) -> None:
    """cProfile of the index (a second read after a change) or the big run's page (after it gained a game)."""
    import cProfile
    import pstats

    from avalon_agents.view.pages import View

    if args.profile == "index":
        view = View([index])
        view.index()
        grow(index / f"run-{args.runs:04d}", games, 0)
        work, target = view.index, index / f"run-{args.runs:04d}"
    else:
        view = View([big.parent])
        view.run("run-big")
        grow(big, games, 0)
        work, target = (lambda: view.run("run-big")), big
    with cProfile.Profile() as p:
        json.dumps(work())
    shrink(target, args.games if args.profile == "index" else args.big)
    pstats.Stats(p).sort_stats("cumulative").print_stats(35)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/avalon-view-scale"), help="where the runs are made")
    parser.add_argument("--runs", type=int, default=1000, help="run folders in the index")
    parser.add_argument("--games", type=int, default=100, help="games of each of them")
    parser.add_argument("--big", type=int, default=10_000, help="games of the big run")
    parser.add_argument("--template", type=int, default=1000, help="rule-bot games played, copied into the runs")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--first-repeats", type=int, default=3, help="repeats of the first reads (slower)")
    parser.add_argument("--profile", choices=("index", "page"), default=None,
                        help="instead of the table: cProfile of the index or the big run's page after a change")
    args = parser.parse_args()
    repo = Path(__file__).resolve().parents[1]
    if args.out.resolve().is_relative_to(repo):
        sys.exit("--out: generated runs are not kept inside the repository (give a folder under /tmp)")
    t0 = time.perf_counter()
    index, big, games = generate(args)
    print(f"runs ready in {time.perf_counter() - t0:.0f} s: {args.runs} x {args.games} games in {index}, "
          f"{args.big} games in {big}", flush=True)
    if args.profile:
        profile(args, index, big, games)
        return
    rows = measure(args, index, big, games)
    width = max(len(name) for name, _ in rows)
    print(f"\n{'measurement':<{width}}  median s   min s   max s  repeats")
    for name, times in rows:
        print(f"{name:<{width}}  {statistics.median(times):8.3f} {min(times):7.3f} {max(times):7.3f}  {len(times):7d}")


if __name__ == "__main__":
    main()
