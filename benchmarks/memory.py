"""The playing process's memory over a long run: `avalon run`'s code (`run_experiment`, in this process) plays N
games on the `scripted` model, and the process's resident set (RSS: psutil if installed, else /proc/self/status)
is sampled after each finished game. Prints games -> RSS and the growth since the 10th game played in this
process (the target: within 150 MB of it over 500 games).

The default match-up is the quickstart's (the cognitive agent, all modules, on good; the paper's baseline on evil),
in series of `--games-per-series` games (experience flows forward within a series, as in any study), one game at
a time. The run directory is kept (`--out`, default /tmp/avalon-memory): rerunning the same command resumes it
(finished games are kept), so a long measurement can be taken in parts; every sample is appended to
OUT/memory.jsonl (one line per game: the process, the games it has played, the run's finished games, RSS in MB,
seconds since the process started). `--tracemalloc K` also diffs the allocations still held after the K-th game
against the 10th (the top sites; slow: Python's allocations are traced).

`--command play` measures `avalon play`'s code instead (`host.batch.play_batch`, lean as the command plays: one
setup every seat shares, the seats `--seats`, in OUT/play).

Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/memory.py [--games 500] [--games-per-series 10] [--out DIR]
     [--agents cognitive,baseline] [--every 10] [--max-games N] [--tracemalloc 40] [--command play --seats ...]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import yaml

BASE = 10  # the game whose RSS the growth is measured from


def rss_mb() -> float:
    """This process's resident set, in MB."""
    try:
        import psutil
    except ImportError:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no psutil and no /proc/self/status: cannot read this process's RSS") from None
    return psutil.Process().memory_info().rss / 2**20


def config(games: int, per_series: int, good: str, evil: str) -> dict:
    series = -(-games // per_series)
    return {"name": "memory", "rules": "official", "players": 6, "model": "scripted",
            "agents": {"ours": {"kind": good}, "theirs": {"kind": evil}}, "sides": {"good": "ours", "evil": "theirs"},
            "series": series, "games_per_series": per_series, "seed": 0, "concurrency": {"games": 1}}


def top_sites(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, n: int = 25) -> list[str]:
    stats = after.compare_to(before, "traceback")
    lines = []
    for stat in stats[:n]:
        frames = [f"{f.filename.split('site-packages/')[-1]}:{f.lineno}" for f in stat.traceback[-6:]]
        lines.append(f"{stat.size_diff / 2**20:+8.2f} MB {stat.count_diff:+7d} blocks  " + " <- ".join(frames[::-1]))
    return lines


def finished(args: argparse.Namespace) -> int:
    """The games already finished in OUT (a rerun resumes after them)."""
    pattern = "play/game-*/result.json" if args.command == "play" else "run/*/series-*/game-*/result.json"
    return sum(1 for _ in args.out.glob(pattern))


def run(args: argparse.Namespace, cap: int, sample: Callable[[], None]) -> None:
    """`avalon run`'s code: the experiment's next `cap` games, `sample` after each."""
    from avalon_agents.experiments import load_experiments, run_experiment

    good, evil = args.agents.split(",")
    cfg_path = args.out / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(config(args.games, args.games_per_series, good, evil)))
    asyncio.run(run_experiment(load_experiments(cfg_path), args.out / "run", max_games=cap,
                               on_game=lambda lane, n, path: sample()))


def play(args: argparse.Namespace, cap: int, sample: Callable[[], None]) -> None:
    """`avalon play`'s code: games 1..(finished + cap) of a batch, lean, `sample` after each game played now."""
    from avalon_agents.core import make_rules
    from avalon_agents.host.batch import batch, play_batch, play_setup
    from avalon_agents.llm import ModelSettings

    kinds = args.seats.split(",")
    setup = play_setup(kinds, ModelSettings(spec="scripted"))
    jobs = batch(make_rules("official", len(kinds)), kinds, 0, finished(args) + cap, setup)
    asyncio.run(play_batch(jobs, args.out / "play", on_game=lambda p: None if p.kept else sample(), lean=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=500, help="the run's games in all (default 500)")
    parser.add_argument("--games-per-series", type=int, default=10)
    parser.add_argument("--agents", default="cognitive,baseline", help="GOOD,EVIL: the agent kinds of each side")
    parser.add_argument("--out", type=Path, default=Path("/tmp/avalon-memory"))
    parser.add_argument("--every", type=int, default=10, help="print a row every this many games")
    parser.add_argument("--max-games", type=int, default=None, help="play at most this many games now")
    parser.add_argument("--command", choices=("run", "play"), default="run")
    parser.add_argument("--seats", default="cognitive,cognitive,cognitive,baseline,baseline,baseline",
                        help="--command play: the agent kind at each seat")
    parser.add_argument("--tracemalloc", type=int, default=None, metavar="K",
                        help="diff what is held after game K against game 10 (top allocation sites)")
    args = parser.parse_args()

    from loguru import logger

    logger.remove()  # the runner's progress lines are not measured here
    args.out.mkdir(parents=True, exist_ok=True)
    samples = args.out / "memory.jsonl"
    t0, pid = time.perf_counter(), os.getpid()
    rows: list[tuple[int, float]] = []
    done_before = finished(args)
    snaps: dict[int, tracemalloc.Snapshot] = {}
    if args.tracemalloc:
        tracemalloc.start(8)

    def sample() -> None:
        played = len(rows) + 1
        if args.tracemalloc and played in (BASE, args.tracemalloc):
            gc.collect()
            snaps[played] = tracemalloc.take_snapshot()
        rss = rss_mb()
        rows.append((played, rss))
        with samples.open("a") as f:
            f.write(json.dumps({"pid": pid, "command": args.command, "played": played, "finished": done_before + played,
                                "rss_mb": round(rss, 1), "s": round(time.perf_counter() - t0, 1)}) + "\n")
        if played % args.every == 0 or played == BASE:
            base = dict(rows).get(BASE)
            growth = f"{rss - base:+7.1f}" if base is not None else "      -"
            print(f"{played:6d} {done_before + played:8d} {rss:9.1f} {growth} {time.perf_counter() - t0:8.0f}",
                  flush=True)
        if args.tracemalloc and played == args.tracemalloc:
            print("\n".join(top_sites(snaps[BASE], snaps[played])), flush=True)

    print(f"rss at start {rss_mb():.1f} MB; {done_before} games already finished in {args.out}", flush=True)
    print(f"{'played':>6} {'finished':>8} {'rss MB':>9} {'vs g10':>7} {'s':>8}", flush=True)
    left = max(0, args.games - done_before)
    cap = left if args.max_games is None else min(left, args.max_games)
    (play if args.command == "play" else run)(args, cap, sample)
    if len(rows) >= BASE:
        base = dict(rows)[BASE]
        last, peak = rows[-1][1], max(r for _, r in rows)
        print(f"{len(rows)} games played in this process ({done_before + len(rows)} in the run): RSS at game {BASE} "
              f"{base:.1f} MB, at the last {last:.1f} MB ({last - base:+.1f}), "
              f"peak {peak:.1f} MB ({peak - base:+.1f}); "
              f"{(last - base) / max(1, len(rows) - BASE) * 1000:.0f} kB a game after game {BASE}; "
              f"{time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
