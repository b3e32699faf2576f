"""A batch of games between agent kinds named per seat, one setup every seat shares (what `avalon play` and
`avalon bench cost` play): the setup, the game jobs, playing them in order into OUT/game-NNNNN (finished games
kept and read back), and the batch's summary."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from avalon_agents.agents.human import Terminal
from avalon_agents.agents.registry import needs_llm
from avalon_agents.core.events import GameEvent, GameResult
from avalon_agents.core.rules import RuleSet
from avalon_agents.extract.extractor import EXTRACTOR_SETTINGS
from avalon_agents.host.job import GameJob, play_job
from avalon_agents.host.play import AgentSetup, agent_setup, summarize, trace_of
from avalon_agents.llm.pool import ClientPool
from avalon_agents.llm.settings import ModelSettings, check_reachable
from avalon_agents.modules import AgentConfig
from avalon_agents.orders import FIXED, Orders
from avalon_agents.records import LLMCall, Record, usage
from avalon_agents.records.health import HealthLimits
from avalon_agents.records.run_dir import game_dir, read_events, read_result, read_trace


def play_setup(kinds: Sequence[str], settings: ModelSettings, extractor_spec: str | None = None, *,
               cards: str | None = None, terminal: Terminal | None = None, agent_config: AgentConfig | None = None,
               experience_dir: Path | None = None) -> AgentSetup:
    """The setup every seat of a batch shares: one client pool, the agents' settings, the extractor's ("none":
    no LLM stage), the role cards, a person's terminal, the modules, an experience store on disk. A model that
    cannot be used fails here, in one line (a bad spec, a missing key or package, no server)."""
    extractor = EXTRACTOR_SETTINGS
    if extractor_spec == "none":
        extractor = None
    elif extractor_spec:
        extractor = EXTRACTOR_SETTINGS.model_copy(update={"spec": extractor_spec})
    setup = agent_setup(ClientPool(), settings, extractor=extractor, modules=agent_config, cards=cards,
                        experience_dir=experience_dir, terminal=terminal)
    if any(needs_llm(k) for k in kinds):
        for wanted in (settings, setup.extractor_settings()):
            if wanted is not None:
                check_reachable(setup.clients.resolve(wanted))
                setup.clients.get(wanted)
    return setup


@dataclass(frozen=True)
class Played:
    """A game of a batch: what it ended with, its events and its trace records (played now, or `kept`: found
    finished in its directory and read back). `trace`: the game directory whose trace holds the records, which a
    lean batch does not keep in memory (`records` is then empty)."""

    index: int
    result: GameResult
    events: list[GameEvent]
    records: list[Record]
    kept: bool = False
    trace: Path | None = None

    def ledger(self) -> Iterator[Record]:
        """Its trace records, read back from `trace` if they were not kept."""
        return iter(read_trace(self.trace)) if self.trace is not None else iter(self.records)


def batch(rules: RuleSet, kinds: Sequence[str], seed: int, games: int,
          setup: AgentSetup | tuple[AgentSetup, ...] | None = None, probes: bool = False,
          order: dict[str, str] | None = None) -> list[GameJob]:
    """`avalon play`'s games: seeds seed, seed+1, ...; one setup every seat shares (a fresh one per game if
    None), or one per seat (program seats get their command); `order`: list -> mode, the listing orders of each
    game's wording (`Orders.make`)."""
    return [GameJob(rules=rules, seed=seed + i, kinds=tuple(kinds), setups=setup or AgentSetup(),
                    orders=Orders.make(seed + i, rules.players, modes=order) if order else FIXED, probes=probes,
                    experience_game=i + 1) for i in range(games)]


def batch_fingerprint(jobs: Sequence[GameJob], order: dict[str, str] | None = None) -> dict[str, Any]:
    """What decides a batch's games (its first seed, rules, seats and what they play with; not how many), for
    the fingerprint of `avalon play --out`'s study (experiments.play.PlayStudy)."""
    job = jobs[0]
    setup = job.seat_setups()[0]
    llm = any(needs_llm(k) for k in job.kinds)
    return {"play": {"rules": job.rules.model_dump(mode="json"), "seats": list(job.kinds), "seed": job.seed,
                     "probes": job.probes, "order": order or None, **(setup.meta() if llm else {})},
            "model_override": None}


async def play_batch(jobs: Sequence[GameJob], out: Path | None = None,
                     on_game: Callable[[Played], None] | None = None, lean: bool = False,
                     before: Callable[[int], Awaitable[None]] | None = None) -> list[Played]:
    """Play `jobs` in order, game k into OUT/game-0000k if `out` is given (finished ones are kept and read back).
    `lean`: a long batch keeps no trace records in memory (with `out`, `Played.ledger` reads them back; without,
    they are kept without the texts of LLM calls: what the usage figures count). `before(i)` is awaited before
    game i (0-based) is played (the web table's lobby and its pause between games)."""
    played = []
    for i, job in enumerate(jobs):
        if before is not None:
            await before(i)
        path = game_dir(out, i + 1) if out else None
        host = await play_job(job, path)
        if host is None:
            game = Played(i, read_result(path), read_events(path), [] if lean else read_trace(path), kept=True)
        else:
            game = Played(i, host.engine.result(), list(host.engine.events), trace_of(host))
        if lean:  # kept, about 0.9 MB a game of a cognitive table: a 1,000-game batch's memory grew without end
            game = replace(game, records=[], trace=path) if path else replace(
                game, records=[_lean(r) for r in game.records])
        played.append(game)
        if on_game:
            on_game(game)
        await asyncio.sleep(0)  # a game of bots never suspends: let Ctrl-C's cancellation in between games
    return played


def _lean(record: Record) -> Record:
    return record.model_copy(update={"messages": (), "reply": None}) if isinstance(record, LLMCall) else record


def batch_summary(jobs: Sequence[GameJob], played: Sequence[Played], order: dict[str, str] | None = None,
                  out: Path | None = None) -> dict[str, Any]:
    """The batch's summary: its rules, seats and first seed, wins and end reasons, and with LLM seats the model,
    the usage figures and the health (`problems` over the default limits: not a result)."""
    job = jobs[0]
    summary: dict[str, Any] = {"rules": job.rules.name, "lady_of_the_lake": job.rules.lady_of_the_lake,
                               "players": job.rules.players, "seats": list(job.kinds),
                               "seed": job.seed, **summarize([p.result for p in played])}
    if order:
        summary["order"] = order
    if any(needs_llm(k) for k in job.kinds):
        setup = job.seat_setups()[0]
        ledger = (_lean(r) for p in played for r in p.ledger())  # one game's records at a time; no texts
        summary["model"] = setup.clients.resolve(setup.settings).spec
        summary["usage"] = usage(ledger)
        problems = HealthLimits().problems(summary["usage"])
        summary["health"] = {"healthy": not problems, "problems": problems}
    if out:
        summary["out"] = str(out)
    return summary


async def play_games(rules: RuleSet, kinds: Sequence[str], seed: int, games: int, out: Path | None = None,
                     setups: AgentSetup | None = None, probes: bool = False,
                     order: dict[str, str] | None = None) -> list[GameResult]:
    """Play `games` games with seeds seed, seed+1, ... (see `batch`, `play_batch`); returns their results."""
    return [p.result for p in await play_batch(batch(rules, kinds, seed, games, setups, probes, order), out)]
