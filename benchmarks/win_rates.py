"""Win rates and end reasons of rule bots and random agents, both presets (the README's table).

Run: .venv/bin/python benchmarks/win_rates.py [GAMES]
"""

from __future__ import annotations

import sys

from avalon_agents.bench import play_direct
from avalon_agents.core import make_rules
from avalon_agents.host.play import summarize

REASONS = ("three_successes", "assassin_missed", "three_fails", "merlin_assassinated", "five_rejections")


def main(games: int = 10_000, players: int = 6) -> None:
    print("| rules | seats | games | good wins | evil wins | " + " | ".join(REASONS) + " |")
    print("|---" * (5 + len(REASONS)) + "|")
    for preset in ("official", "paper"):
        rules = make_rules(preset, players)
        for kind in ("rulebot", "random"):
            s = summarize([play_direct(rules, kind, seed).result() for seed in range(games)])
            cells = [f"{s['reasons'].get(r, 0) / games:.1%}" for r in REASONS]
            print(f"| {preset} | {kind} | {games} | {s['good_wins'] / games:.1%} | {s['evil_wins'] / games:.1%} | "
                  + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
