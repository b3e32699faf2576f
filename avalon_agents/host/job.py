"""One game job: a frozen per-game setup, played into the game directory it owns.

Every command that plays games (`avalon run` and its tournaments, `avalon redteam`, `avalon bias`, `avalon play`,
`avalon bench cost`) says what to play as `GameJob`s and hands each to `play_job`, which alone opens a game
directory, through its recorder (records.recorder, which names every file): a finished game is kept and not
played again; an unfinished one is played again from its start, taking the answers its interrupted attempts
already paid for (llm.replay), which stay on disk until it finishes. A study decides what to play, how games
pair and how results aggregate; nothing here knows which study asked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role
from avalon_agents.engine import deal
from avalon_agents.host.host import GameHost
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.llm.replay import Recording
from avalon_agents.modules import ExperienceBook
from avalon_agents.orders import FIXED, Orders
from avalon_agents.records import GameRecorder
from avalon_agents.records.run_dir import Seating


@dataclass(frozen=True)
class GameJob:
    """Everything one game is played from; made per game, never changed.

    Attributes:
        rules: the rules.
        seed: the game's seed (the deal, the first leader, every seat's agent seed).
        kinds: the agent kind at each seat, in seat order.
        setups: each seat's setup (its agent's clients, models, modules and experience), in seat order, or one
            setup all seats share (`avalon play`; meta.json then records no per-seat models).
        seating: the agent name at each seat and the game's place in its run (recorded when the game starts); None:
            none recorded.
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


async def play_job(job: GameJob, path: Path | None = None) -> GameHost | None:
    """Play `job` into the game directory `path` (None: in memory only). Returns the game's host, or None if
    `path` already holds the finished game (it is kept as it is)."""
    recorder = None
    if path is not None:
        recorder = GameRecorder(path, seating=job.seating)
        if recorder.finished:
            return None
        calls = recorder.earlier_calls()
        recorder.recording = Recording(calls, where=str(path)) if calls else None
    if job.experience_game is not None:
        for experience in {id(s.experience): s.experience for s in job.seat_setups()}.values():
            experience.game = job.experience_game
    setups = list(job.setups) if isinstance(job.setups, tuple) else job.setups
    return await play_one(job.rules, job.kinds, job.seed, path, setups, probes=job.probes,
                          watchdog=job.watchdog, orders=job.orders, max_failed_calls=job.max_failed_calls,
                          recorder=recorder)
