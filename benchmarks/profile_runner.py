"""Where the framework's CPU goes: k games in flight (cognitive on good, the paper's baseline on evil, as in
runner_latency.py's in-flight rows) against the loopback server in its own process, after a warm-up game.

Prints wall, CPU of this process, CPU per game. With --cprofile FILE, the timed run is profiled by cProfile
(the event loop's thread only; work sent to threads by asyncio.to_thread is not in it: use py-spy for that:
`py-spy record --idle -r 200 -f raw -o out.txt -- python benchmarks/profile_runner.py ...`).

Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/profile_runner.py [--in-flight 8] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import cProfile
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from runner_latency import QUICKSTART_AGENTS, config, loopback, quickstart_agents, run, warm_up  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--games-per-series", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--llm-calls", type=int, default=64)
    parser.add_argument("--cprofile", type=Path, default=None)
    parser.add_argument("--embeddings", choices=("local", "served"), default="local",
                        help="the baseline's vectors: MiniLM in this process, or from the loopback server "
                             "(a fixed vector per text, no encoder)")
    args = parser.parse_args()
    sides = {"good": "ours", "evil": "baseline"}
    with tempfile.TemporaryDirectory(prefix="profile_runner-") as tmp:
        root = Path(tmp)
        base = config(QUICKSTART_AGENTS, 1, 1, 64, sides=sides)
        warm_up(base, root / "warm")
        served = args.embeddings == "served"
        with loopback(args.latency, 1024, served) as (spec, server):
            cfg = config(quickstart_agents(spec, served), args.in_flight, args.games_per_series, args.llm_calls,
                         sides=sides)
            profiler = cProfile.Profile() if args.cprofile else None
            if profiler:
                profiler.enable()
            t0 = time.perf_counter()
            measured = run(cfg, root / "timed", spec)
            if profiler:
                profiler.disable()
                profiler.dump_stats(args.cprofile)
        games = len(measured["games"])
        print(f"embeddings {args.embeddings}, in flight {args.in_flight} x {args.games_per_series}, "
              f"L={args.latency}, llm_calls "
              f"{args.llm_calls}: {games} games, wall {measured['wall']:.1f} s, CPU {measured['cpu']:.1f} s, "
              f"CPU/game {measured['cpu'] / games:.3f} s, CPU/wall {measured['cpu'] / measured['wall']:.2f}, "
              f"server CPU {server['server_cpu_s']:.1f} s ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
