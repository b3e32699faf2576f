"""The embedded model (local:smollm2) with the vanilla LLM agent on every seat: Valid Response Rate with
and without constrained decisions, seconds per LLM call and per game (the README's table).

Run: .venv/bin/python benchmarks/local_model.py [GAMES] [OUT_DIR] [MODES]
     MODES: constrained,unconstrained (default both), alternating game by game. Games are written under
     OUT_DIR/<mode>/; a game already finished there is not played again, so an interrupted run resumes.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from avalon_agents.core import make_rules
from avalon_agents.host.play import Models, game_dir, play_one
from avalon_agents.llm import LLMClient, ModelConfig
from avalon_agents.records import is_done, read_trace, usage

SPEC = "local:smollm2"


async def run(modes: list[str], games: int, out: Path) -> None:
    """Game i of every mode, then game i+1: an interrupted run has about as many games of each."""
    rules = make_rules("official", 6)
    extractor = LLMClient(config=ModelConfig(spec=SPEC, temperature=0.0, max_tokens=64))
    agents = {mode: LLMClient(config=ModelConfig(spec=SPEC, temperature=0.3, constrained=mode == "constrained"))
              for mode in modes}
    for i in range(games):
        for mode in modes:
            path = game_dir(out / mode, i + 1)
            if is_done(path):
                continue
            start = time.perf_counter()
            await play_one(rules, ["llm"] * 6, seed=i, out=path, models=Models(agents[mode], extractor))
            (path / "wall_seconds.txt").write_text(f"{time.perf_counter() - start:.1f}\n")
            print(f"{mode} game {i + 1}: {time.perf_counter() - start:.0f} s", flush=True)


def report(mode: str, out: Path) -> str:
    done = sorted(p for p in out.glob("game-*") if is_done(p))
    records = [r for p in done for r in read_trace(p)]
    u = usage(records)
    walls = [float((p / "wall_seconds.txt").read_text()) for p in done if (p / "wall_seconds.txt").exists()]
    per_game = sum(walls) / len(walls) if walls else float("nan")
    return (f"| {mode} | {len(done)} | {u['decisions']} | {u['valid_response_rate']:.1%} | {u['methods']} | "
            f"{u['llm_calls'] / max(1, len(done)):.0f} | {u['seconds_per_call']:.2f} | {per_game:.0f} |")


def main(games: int = 10, out: str = "runs/bench-local", modes: str = "constrained,unconstrained") -> None:
    asyncio.run(run(modes.split(","), games, Path(out)))
    print("| decisions | games | answers | valid response rate | read by | calls/game | s/call | s/game |")
    print("|---|---|---|---|---|---|---|---|")
    for mode in modes.split(","):
        print(report(mode, Path(out) / mode))


if __name__ == "__main__":
    main(*(int(a) if i == 0 else a for i, a in enumerate(sys.argv[1:])))
