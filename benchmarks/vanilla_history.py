"""The vanilla seat's history against the cacheable share: the game's opening it keeps and how far a cut goes.

For each pair (OPENING, KEPT: shares of the history budget, avalon_agents/agents/llm_agent.py), six vanilla `llm`
seats play GAMES scripted games (seeds 0, 1, ...) as `avalon bench cost` plays them, and the line says the input
tokens a call, the share a prefix cache serves (OpenAI's rule: llm/prefix_cache.py) and a call's cost in
token-equivalents at gpt-4o-mini's prices (a cached token half an uncached one).

Run: .venv/bin/python benchmarks/vanilla_history.py [GAMES]
"""

from __future__ import annotations

import sys

from avalon_agents.agents import llm_agent
from avalon_agents.bench import bench_cost
from avalon_agents.core import make_rules

PAIRS = [(0.0, 1 / 3), (0.2, 0.2), (0.2, 0.15), (0.25, 0.2), (0.25, 0.15), (0.15, 0.2)]
"""(opening, kept); (0, 1/3) is the rule before the opening was kept: the newest third after each cut."""


def main(games: int = 20) -> None:
    rules = make_rules("official", 6)
    default = (llm_agent.OPENING, llm_agent.KEPT)
    print("| opening | cut to | games | calls / game | tokens / call | cacheable | cost / call (token-equivalents) |")
    print("|---|---|---|---|---|---|---|")
    try:
        for opening, kept in PAIRS:
            llm_agent.OPENING, llm_agent.KEPT = opening, kept
            found = bench_cost(rules, ["llm"] * 6, games)
            calls, tokens = found["calls_per_game"], found["input_tokens_per_game"]
            share = found["cacheable_share"]
            mark = " (default)" if (opening, kept) == default else ""
            print(f"| {opening:g}{mark} | {kept:.3g} | {games} | {calls:.1f} | {tokens / calls:,.0f} | {share:.1%} | "
                  f"{tokens / calls * (1 - share / 2):,.0f} |", flush=True)
    finally:
        llm_agent.OPENING, llm_agent.KEPT = default


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
