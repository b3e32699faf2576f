"""Run folders of every kind for the view's tests, made by the commands that make them (small and fast)."""

from __future__ import annotations

import shutil
from pathlib import Path

from avalon_agents.records.run_record import RUN
from avalon_agents.view.run_data import RunPages
from tests.helpers import avalon

ROOT = Path(__file__).parents[2]
BOTS = """\
name: {name}
agents:
  bots: {{kind: rulebot}}
  rand: {{kind: random}}
sides: {{good: bots, evil: rand}}
games_per_series: {games}
seed: {seed}
"""

REDTEAM = """\
name: rt
model: scripted
defended: {kind: llm}
attacker: {seat: 2, inner: {kind: llm}}
attacks: [host_vote_cancelled]
games: 1
"""
BIAS = """\
name: b
model: scripted
players: 5
agents: {vanilla: {kind: llm}, bot: {kind: rulebot}}
seats: [vanilla, bot, bot, vanilla, bot]
lists: [players]
games: 1
"""


def experiment(folder: Path, name: str = "exp", games: int = 2, seed: int = 0, max_games: int | None = None) -> Path:
    config = folder / f"{name}.yaml"
    config.write_text(BOTS.format(name=name, games=games, seed=seed))
    out = folder / name
    extra = ["--max-games", str(max_games)] if max_games else []
    done = avalon("run", str(config), "--out", str(out), *extra)
    assert done.returncode == 0, done.stderr
    return out


def every_kind(folder: Path) -> dict[str, Path]:
    """An experiment, a tournament, a played batch, an import, a run with LLM calls (a recorded one, from before
    run.json), a red-team suite, an order-bias study, a served table and a replay of the recorded run, under
    `folder`."""
    runs = {"run": experiment(folder)}
    tournament = folder / "tourney.yaml"
    tournament.write_text("name: tourney\nentrants:\n  bots: {kind: rulebot}\n  rand: {kind: random}\n"
                          "blocks: 1\nseries: 1\n")
    done = avalon("tournament", str(tournament), "--out", str(folder / "tourney"))
    assert done.returncode == 0, done.stderr
    runs["tournament"] = folder / "tourney"
    done = avalon("play", "--games", "2", "--seats", ",".join(["rulebot"] * 6), "--out", str(folder / "batch"))
    assert done.returncode == 0, done.stderr
    runs["play"] = folder / "batch"
    done = avalon("import", "avalon-nlu", str(ROOT / "tests/importers/avalon_nlu"), "--out", str(folder / "humans"))
    assert done.returncode == 0, done.stderr
    runs["import"] = folder / "humans"
    shutil.copytree(ROOT / "tests/data/replay/run", folder / "llm")
    (folder / "llm" / RUN).unlink()  # as a run recorded before run.json: read by what its other files say
    runs["llm"] = folder / "llm"
    for command, config in (("redteam", REDTEAM), ("bias", BIAS)):
        path = folder / f"{command}.yaml"
        path.write_text(config)
        done = avalon(command, str(path), "--out", str(folder / command))
        assert done.returncode == 0, done.stderr
        runs[command] = folder / command
    done = avalon("serve", "--out", str(folder / "served"), "--port", "0", "--decision-timeout", "0.01",
                  "--linger", "0", "--no-lobby")  # a person's seat no one took: its fallback answers
    assert done.returncode == 0, done.stderr
    runs["serve"] = folder / "served"
    avalon("run", str(ROOT / "tests/data/replay/config.yaml"), "--model", f"replay:{runs['llm']}", "--out",
           str(folder / "again"))  # a replay (its games may diverge on another machine: a replay run all the same)
    runs["replay"] = folder / "again"
    return runs


def settled(pages: RunPages) -> None:
    """Until the pages' threads end (each joined: an event, not a clock, so a slow machine only waits longer; the
    bound only ends a hung test) and no run is being counted."""
    for thread in list(pages._threads.values()):
        thread.join(timeout=900)
        assert not thread.is_alive(), f"{thread.name} did not end in 15 minutes"
    assert not pages._computing
