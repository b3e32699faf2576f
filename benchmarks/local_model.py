"""The embedded model (local:smollm2) with the vanilla LLM agent on every seat: Valid Response Rate with
and without constrained decisions, seconds per LLM call and per game (the README's table).

Run: .venv/bin/python benchmarks/local_model.py [GAMES] [MODES] [TAG]
     MODES: constrained,unconstrained (default both), alternating game by game. TAG: measure again beside
     the earlier figures (summaries in local_model/<TAG>/<mode>/, games in runs/bench-local/<TAG>/<mode>/).

Each finished game leaves a small summary in benchmarks/results/local_model/<mode>/game-<n>.json (committed,
so the figures survive a fresh checkout); a game with a summary is not played again, so an interrupted run
resumes. The full game records go to runs/bench-local/<mode>/game-<n>/ (not committed).
Set AVALON_LOCAL_THREADS=1 to leave a core free while it runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

from avalon_agents.core import make_rules
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.llm import ClientPool, ModelSettings
from avalon_agents.records import read_trace, usage
from avalon_agents.records.run_dir import game_dir

SPEC = "local:smollm2"
RESULTS = Path(__file__).parent / "results" / "local_model"
GAMES_DIR = Path("runs/bench-local")


def summary_path(mode: str, n: int) -> Path:
    return RESULTS / mode / f"game-{n}.json"


def tagged(tag: str) -> None:
    """Measure again under `tag`, beside the earlier figures."""
    global RESULTS, GAMES_DIR
    RESULTS, GAMES_DIR = RESULTS / tag, GAMES_DIR / tag


async def run(modes: list[str], games: int) -> None:
    """Game i of every mode, then game i+1: an interrupted run has about as many games of each."""
    rules = make_rules("official", 6)
    clients = ClientPool()
    agents = {mode: AgentSetup(clients=clients, settings=ModelSettings(spec=SPEC, temperature=0.3,
                                                                      constrained=mode == "constrained"))
              for mode in modes}
    for i in range(games):
        for mode in modes:
            target = summary_path(mode, i + 1)
            if target.exists():
                continue
            path = game_dir(GAMES_DIR / mode, i + 1)
            start = time.perf_counter()
            host = await play_one(rules, ["llm"] * 6, seed=i, out=path, setups=agents[mode])
            wall = time.perf_counter() - start
            counts = usage(read_trace(path))
            valid = sum(r.valid for r in read_trace(path) if r.type == "extraction")
            target.parent.mkdir(parents=True, exist_ok=True)
            threads = int(os.environ.get("AVALON_LOCAL_THREADS", 0)) or os.cpu_count()
            summary = {"seed": i, "winner": host.engine.result().winner.value, "wall_seconds": round(wall, 1),
                       "server_threads": threads, "valid": valid, "profile": agents[mode].clients.resolve(
                           agents[mode].settings).complete().profile, **counts}
            target.write_text(json.dumps(summary, indent=1) + "\n")
            print(f"{mode} game {i + 1}: {wall:.0f} s, valid {valid}/{counts['decisions']}", flush=True)


def report(mode: str) -> str:
    games = [json.loads(p.read_text()) for p in sorted((RESULTS / mode).glob("game-*.json"))]
    if not games:
        return f"| {mode} | 0 | | | | | | |"
    decisions = sum(g["decisions"] for g in games)
    valid = sum(g["valid"] for g in games)
    calls = sum(g["llm_calls"] for g in games)
    methods: dict[str, int] = {}
    for g in games:
        for method, n in g["methods"].items():
            methods[method] = methods.get(method, 0) + n
    # Medians over games: a game that shared the machine with another job runs long, and the mean would show it.
    per_call = statistics.median(g["llm_seconds"] / g["llm_calls"] for g in games)
    per_game = statistics.median(g["wall_seconds"] for g in games)
    return (f"| {mode} | {len(games)} | {decisions} | {valid / decisions:.1%} | {dict(sorted(methods.items()))} | "
            f"{calls / len(games):.0f} | {per_call:.2f} | {per_game:.0f} |")


def main(games: int = 10, modes: str = "constrained,unconstrained", tag: str = "") -> None:
    if tag:
        tagged(tag)
    asyncio.run(run(modes.split(","), games))
    print("| decisions | games | answers | valid response rate | read by | calls/game "
          "| s/call, queue included (median game) | s/game (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for mode in modes.split(","):
        print(report(mode))


if __name__ == "__main__":
    main(*(int(a) if i == 0 else a for i, a in enumerate(sys.argv[1:])))
