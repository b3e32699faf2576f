"""One game job: a frozen per-game setup, played into the game directory it owns.

Every command that plays games (`avalon run` and its tournaments, `avalon redteam`, `avalon bias`, `avalon play`,
`avalon bench cost`) says what to play as `GameJob`s and hands each to `play_job`, which alone touches a game
directory: a finished game is kept and not played again; an unfinished one is removed and played again from its
start, taking the answers its interrupted attempt already paid for (llm.replay); seating.json is written before
the game starts, health.json before result.json (records.run_dir). A study decides what to play, how games pair
and how results aggregate; nothing here knows which study asked.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from avalon_agents.agents.registry import needs_llm
from avalon_agents.core.events import GameEvent, GameResult
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role
from avalon_agents.engine import deal
from avalon_agents.host.host import GameHost
from avalon_agents.host.play import AgentSetup, game_dir, play_one, trace_of
from avalon_agents.llm.replay import Recording, game_recording
from avalon_agents.modules import ExperienceBook
from avalon_agents.orders import FIXED, Orders
from avalon_agents.records import Record
from avalon_agents.records.run_dir import (
    Seating,
    has_trace,
    is_done,
    read_events,
    read_result,
    read_trace,
    write_seating,
)


@dataclass(frozen=True)
class GameJob:
    """Everything one game is played from; made per game, never changed.

    Attributes:
        rules: the rules.
        seed: the game's seed (the deal, the first leader, every seat's agent seed).
        kinds: the agent kind at each seat, in seat order.
        setups: each seat's setup (its agent's clients, models, modules and experience), in seat order, or one
            setup all seats share (`avalon play`; meta.json then records no per-seat models).
        seating: the agent name at each seat and the game's place in its run (seating.json); None: none written.
        orders: the listing orders of the game's wording.
        probes: ask the LLM seats what they believe after each quest (host.probe).
        watchdog: seconds a step may take before the game is aborted.
        max_failed_calls: the share of failed calls over which the game is aborted.
        experience_game: the game's number in its series, as what its seats learn is tagged (None: unchanged).
    """

    rules: RuleSet
    seed: int
    kinds: tuple[str, ...]
    setups: AgentSetup | tuple[AgentSetup, ...]
    seating: Seating | None = None
    orders: Orders = FIXED
    probes: bool = False
    watchdog: float | None = None
    max_failed_calls: float | None = None
    experience_game: int | None = None

    def __post_init__(self) -> None:
        if len(self.kinds) != self.rules.players:
            raise ValueError(f"seats: {len(self.kinds)} kinds for {self.rules.players} seats")

    def seat_setups(self) -> tuple[AgentSetup, ...]:
        return self.setups if isinstance(self.setups, tuple) else (self.setups,) * self.rules.players


def for_game(setup: AgentSetup, *, learn: bool = True, end_learning: bool = True) -> AgentSetup:
    """An agent's setup for one game, the shared one untouched: without `learn` its seats start from nothing
    (a fresh in-memory book), and `end_learning` says whether they learn at the game's end."""
    experience = setup.experience if learn else ExperienceBook()
    return replace(setup, experience=experience, end_learning=end_learning)


def role_order(rules: RuleSet, seed: int) -> list[int]:
    """The seats in the order of the roles the seed deals them (the rules' role order, then seat)."""
    roles = deal(rules, seed)
    return sorted(rules.seats, key=lambda s: (list(Role).index(roles[s]), s))


def restart(path: Path) -> Recording | None:
    """Clear an unfinished game directory for a new attempt; returns the answers the old attempt paid for."""
    if not path.exists():
        return None
    recording = game_recording(path) if has_trace(path) else None
    shutil.rmtree(path)
    return recording


async def play_job(job: GameJob, path: Path | None = None) -> GameHost | None:
    """Play `job` into the game directory `path` (None: in memory only). Returns the game's host, or None if
    `path` already holds the finished game (it is kept as it is)."""
    recording = None
    if path is not None:
        if is_done(path):
            return None
        recording = restart(path)
        if job.seating is not None:
            write_seating(path, job.seating)
    if job.experience_game is not None:
        for experience in {id(s.experience): s.experience for s in job.seat_setups()}.values():
            experience.game = job.experience_game
    setups = list(job.setups) if isinstance(job.setups, tuple) else job.setups
    return await play_one(job.rules, job.kinds, job.seed, path, setups, probes=job.probes,
                          watchdog=job.watchdog, orders=job.orders, max_failed_calls=job.max_failed_calls,
                          recording=recording)



@dataclass(frozen=True)
class Played:
    """A game of a batch: what it ended with, its events and its trace records (played now, or `kept`: found
    finished in its directory and read back)."""

    index: int
    result: GameResult
    events: list[GameEvent]
    records: list[Record]
    kept: bool = False


def batch(rules: RuleSet, kinds: Sequence[str], seed: int, games: int, setup: AgentSetup | None = None,
          probes: bool = False, order: dict[str, str] | None = None) -> list[GameJob]:
    """`avalon play`'s games: seeds seed, seed+1, ...; one setup every seat shares (a fresh one per game if
    None); `order`: list -> mode, the listing orders of each game's wording (`Orders.make`)."""
    return [GameJob(rules=rules, seed=seed + i, kinds=tuple(kinds), setups=setup or AgentSetup(),
                    orders=Orders.make(seed + i, rules.players, modes=order) if order else FIXED, probes=probes,
                    experience_game=i + 1) for i in range(games)]


def batch_fingerprint(jobs: Sequence[GameJob], order: dict[str, str] | None = None) -> dict[str, Any]:
    """What decides a batch's games (its first seed, rules, seats and what they play with; not how many), for
    the guard of its directory (experiments.guard.study_dir)."""
    job = jobs[0]
    setup = job.seat_setups()[0]
    llm = any(needs_llm(k) for k in job.kinds)
    return {"play": {"rules": job.rules.model_dump(mode="json"), "seats": list(job.kinds), "seed": job.seed,
                     "probes": job.probes, "order": order or None, **(setup.meta() if llm else {})},
            "model_override": None}


async def play_batch(jobs: Sequence[GameJob], out: Path | None = None,
                     on_game: Callable[[Played], None] | None = None) -> list[Played]:
    """Play `jobs` in order, game k into OUT/game-0000k if `out` is given (finished ones are kept and read back)."""
    played = []
    for i, job in enumerate(jobs):
        path = game_dir(out, i + 1) if out else None
        host = await play_job(job, path)
        if host is None:
            game = Played(i, read_result(path), read_events(path), read_trace(path), kept=True)
        else:
            game = Played(i, host.engine.result(), list(host.engine.events), trace_of(host))
        played.append(game)
        if on_game:
            on_game(game)
        await asyncio.sleep(0)  # a game of bots never suspends: let Ctrl-C's cancellation in between games
    return played


async def play_games(rules: RuleSet, kinds: Sequence[str], seed: int, games: int, out: Path | None = None,
                     setups: AgentSetup | None = None, probes: bool = False,
                     order: dict[str, str] | None = None) -> list[GameResult]:
    """Play `games` games with seeds seed, seed+1, ... (see `batch`, `play_batch`); returns their results."""
    return [p.result for p in await play_batch(batch(rules, kinds, seed, games, setups, probes, order), out)]
