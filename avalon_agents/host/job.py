"""One game job: a frozen per-game setup, played into the game directory it owns.

Every command that plays games (`avalon run` and its tournaments, `avalon redteam`, `avalon bias`, `avalon play`,
`avalon bench cost`) says what to play as `GameJob`s and hands each to `play_job`, which alone opens a game
directory, through its recorder (records.recorder, which names every file): a finished game is kept and not
played again; an unfinished one is played again from its start, taking the answers its interrupted attempts
already paid for (llm.replay), which stay on disk until it finishes. A study decides what to play, how games
pair and how results aggregate; nothing here knows which study asked. The job is handed whole to the game
(`host.play.play_game`, where `GameJob` is declared; `avalon_agents.host.job.GameJob` is the same class).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role
from avalon_agents.engine import deal
from avalon_agents.host.host import GameHost
from avalon_agents.host.play import AgentSetup, GameJob, play_game
from avalon_agents.llm.replay import Recording
from avalon_agents.modules import ExperienceBook
from avalon_agents.records import GameRecorder


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
    return await play_game(job, recorder)
