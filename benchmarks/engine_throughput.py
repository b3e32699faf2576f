"""Engine throughput per preset and player count: rule-bot games per second on one core.

Run: .venv/bin/python benchmarks/engine_throughput.py [GAMES]
"""

from __future__ import annotations

import sys

from avalon_agents.bench import bench_engine
from avalon_agents.core import make_rules


def main(games: int = 500) -> None:
    print(f"{'rules':<9} {'players':>7} {'kind':<8} {'engine/s':>12} {'engine+bots/s':>14} {'host/s':>8}")
    for preset in ("official", "paper"):
        for players in range(5, 11):
            for kind in ("rulebot", "random"):
                f = bench_engine(make_rules(preset, players), games, kind)
                print(f"{preset:<9} {players:>7} {kind:<8} {f['engine_alone_games_per_s']:>12.1f} "
                      f"{f['engine_games_per_s']:>14.1f} {f['host_games_per_s']:>8.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
