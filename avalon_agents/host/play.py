"""Play many games between agent kinds named per seat (what `avalon play` runs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from avalon_agents.agents.base import Agent
from avalon_agents.agents.context import SeatContext
from avalon_agents.agents.human import Terminal
from avalon_agents.agents.registry import make_agent, needs_llm
from avalon_agents.core.events import GameResult
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat
from avalon_agents.extract.extractor import EXTRACTOR_SETTINGS, Extractor, extractor_settings
from avalon_agents.host.host import GameHost, typed_action
from avalon_agents.host.probe import BeliefProbe
from avalon_agents.llm.pool import ClientPool, GameClients
from avalon_agents.llm.replay import Recording
from avalon_agents.llm.settings import ModelSettings
from avalon_agents.modules import AgentConfig, ExperienceBook
from avalon_agents.narrate import DEFAULT_CARDS
from avalon_agents.orders import FIXED, Orders
from avalon_agents.records import GameRecorder, MemoryTracer, Record
from avalon_agents.records.run_dir import Seating

if TYPE_CHECKING:
    from avalon_agents.stores.experience import ExperienceStore


NO_MODEL = {"model": None, "extractor_model": None, "agent_config": None}
"""What meta.json says of the models of a game no seat of which asks a model (rule bots, people, programs)."""


def agent_seed(game_seed: int, seat: Seat) -> int:
    """Each seat's agent gets its own seed, derived from the game's."""
    return game_seed * 1009 + seat


@dataclass
class AgentSetup:
    """What the seats of one agent share across the games of a batch: the client pool every client comes from,
    the agent's model settings, the extractor's, its module config and the experience it carries.

    Attributes:
        clients: the run's client pool (one for `play`, `run`, `bench cost`).
        settings: the agent's model settings (unset fields: defaults; the pool's override wins).
        extractor: the LLM extractor's own settings (extract.extractor.extractor_settings lays them over the
            agent's model: temperature 0, constrained where the provider can, short answers); None skips the
            LLM stage of the extractor.
        agent_config: the cognitive agent's modules.
        experience: what the agent's seats carry from game to game, by role (a chromadb store on disk, or memory).
        experience_dir: where the baseline's experience pool lives (None: in memory).
        learn: False gives baseline seats no experience pool.
        end_learning: False: nothing is learned at game end (the runner's last game of a series).
        cards: the set of role cards its seats' system prompts start from (prompts/cards/).
        terminal: where a human seat reads and writes (`avalon play --human`; None: no human seat).
        options: keyword options for the agent kind's factory (e.g. a rule bot's `blunder`).
    """

    clients: ClientPool = field(default_factory=ClientPool)
    settings: ModelSettings = field(default_factory=ModelSettings)
    extractor: ModelSettings | None = EXTRACTOR_SETTINGS
    agent_config: AgentConfig | None = None
    experience: ExperienceBook | ExperienceStore = field(default_factory=ExperienceBook)
    experience_dir: Path | None = None
    learn: bool = True
    end_learning: bool = True
    cards: str = DEFAULT_CARDS
    terminal: Terminal | None = None
    options: dict = field(default_factory=dict)
    _pool: ExperienceStore | None = None

    def pool(self) -> ExperienceStore:
        """The baseline agents' experience pool (in the experience folder, or in memory), made once."""
        if self._pool is None:
            from avalon_agents.stores.experience import ExperienceStore

            # the pool beside a store counts runs as the store does
            self._pool = ExperienceStore(self.experience_dir, collection="baseline_pool", run=self.experience.run)
        self._pool.game = self.experience.game
        return self._pool

    def context(self, clients: GameClients) -> SeatContext:
        """What one of this agent's seats is built with in a game."""
        return SeatContext(clients=clients, settings=self.settings, config=self.agent_config,
                           experience=self.experience, pool=self.pool if self.learn else None,
                           end_learning=self.end_learning, cards=self.cards)

    def extractor_settings(self) -> ModelSettings | None:
        return extractor_settings(self.extractor, self.settings)

    def meta(self) -> dict:
        """The complete settings used, as meta.json records them (never a key)."""
        extractor = self.extractor_settings()
        return {
            "model": self.clients.resolve(self.settings).public(),
            "extractor_model": self.clients.resolve(extractor).public() if extractor else None,
            "agent_config": self.agent_config.model_dump(mode="json") if self.agent_config else None,
            "cards": self.cards,
        }


def agent_setup(clients: ClientPool, settings: ModelSettings | None = None, *, llm: bool = True,
                extractor: ModelSettings | None = EXTRACTOR_SETTINGS, modules: AgentConfig | None = None,
                cards: str | None = None, options: dict | None = None, learn: bool = True,
                end_learning: bool = True, experience_dir: Path | None = None, run: int | None = None,
                terminal: Terminal | None = None) -> AgentSetup:
    """The one builder of an agent's setup, every command's (`avalon run`'s agents per series, the red team's and
    the bias study's per game through experiments.config.AgentSpec.setup, `avalon play`'s shared one through
    host.batch.play_setup): `llm` False (no seat of it asks a model) keeps the clients and options alone; an
    `experience_dir` keeps what its seats learn in a chromadb store there (`run`: the store's run number, as the
    runner counts runs); `learn` False gives its seats no experience pool and `end_learning` False learns nothing
    at game end."""
    if not llm:
        return AgentSetup(clients=clients, options=dict(options or {}), terminal=terminal)
    extra: dict = {"cards": cards} if cards else {}
    if experience_dir is not None:
        from avalon_agents.stores.experience import ExperienceStore

        extra |= {"experience": ExperienceStore(experience_dir, run=run), "experience_dir": experience_dir}
    return AgentSetup(clients=clients, settings=settings or ModelSettings(), extractor=extractor,
                      agent_config=modules, learn=learn, end_learning=end_learning, terminal=terminal,
                      options=dict(options or {}), **extra)


@dataclass(frozen=True)
class GameJob:
    """Everything one game is played from; made per game, never changed (host/job.py plays it into its game
    directory).

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
    setups: AgentSetup | tuple[AgentSetup, ...] = field(default_factory=AgentSetup)
    seating: Seating | None = None
    orders: Orders = FIXED
    probes: bool = False
    watchdog: float | None = None
    max_failed_calls: float | None = None
    experience_game: int | None = None

    def __post_init__(self) -> None:
        if len(self.kinds) != self.rules.players:
            raise ValueError(f"seats: {len(self.kinds)} kinds for {self.rules.players} seats")
        if isinstance(self.setups, tuple) and len(self.setups) != self.rules.players:
            raise ValueError(f"setups: {len(self.setups)} given for {self.rules.players} seats")

    @property
    def per_seat(self) -> bool:
        """Each seat has its own setup (meta.json then records each LLM seat's models)."""
        return isinstance(self.setups, tuple)

    def seat_setups(self) -> tuple[AgentSetup, ...]:
        return self.setups if isinstance(self.setups, tuple) else (self.setups,) * self.rules.players


async def play_one(rules: RuleSet, kinds: Sequence[str], seed: int, out: Path | None = None,
                   setups: AgentSetup | Sequence[AgentSetup] | None = None, probes: bool = False,
                   watchdog: float | None = None, orders: Orders = FIXED,
                   max_failed_calls: float | None = None, recording: Recording | None = None) -> GameHost:
    """Play one game; return its host (engine events and result inside): the `GameJob` of these arguments,
    played by `play_game` (into `out`, if given; `recording`: answers this game already paid for, an
    interrupted attempt's, llm.replay, taken before any model is asked).

    `setups` is what the LLM seats share, or one `AgentSetup` per seat (seats of different agents, as
    experiments place them); the extractor is the first LLM seat's. With `probes`, every LLM seat is asked
    at the end of each quest, with its own model, what it believes (who is Merlin, who is evil); the answers
    go to the trace (see host.probe). Rule-bot and random seats are not probed. `watchdog`: seconds a step may
    take before the game is aborted (GameHost). `orders`: the listing orders of the game's wording (GameHost;
    recorded in meta.json). `max_failed_calls`: the share of failed calls over which the game is aborted
    (GameHost).
    """
    shared = tuple(setups) if isinstance(setups, Sequence) else setups or AgentSetup()
    job = GameJob(rules=rules, seed=seed, kinds=tuple(kinds), setups=shared, orders=orders, probes=probes,
                  watchdog=watchdog, max_failed_calls=max_failed_calls)
    return await play_game(job, GameRecorder(out, recording) if out else None)


async def play_game(job: GameJob, recorder: GameRecorder | None = None) -> GameHost:
    """Play `job` (its recorder: the game directory's, None: in memory only); return its host."""
    rules, kinds, seed = job.rules, job.kinds, job.seed
    per_seat = job.seat_setups()
    if job.experience_game is not None:
        for experience in {id(s.experience): s.experience for s in per_seat}.values():
            experience.game = job.experience_game
    tracer = recorder or MemoryTracer()
    llm_seats = [seat for seat, kind in zip(rules.seats, kinds) if needs_llm(kind)]
    contexts = {seat: setup.context(setup.clients.for_game(tracer))
                for seat, kind, setup in zip(rules.seats, kinds, per_seat) if needs_llm(kind)}
    agents: dict[Seat, Agent] = {seat: make_agent(kind, seat=seat, seed=agent_seed(seed, seat),
                                                  context=contexts.get(seat), terminal=setup.terminal, tracer=tracer,
                                                  **setup.options)
                                 for seat, kind, setup in zip(rules.seats, kinds, per_seat)}
    probe = BeliefProbe(clients={seat: contexts[seat].llm for seat in llm_seats},
                        cards={seat: contexts[seat].cards for seat in llm_seats}) if job.probes and llm_seats else None
    first = per_seat[rules.seats.index(llm_seats[0])] if llm_seats else per_seat[0]
    extract = typed_action
    if llm_seats:
        settings = first.extractor_settings()
        extractor_llm = first.clients.get(settings, tracer) if settings is not None else None
        extract = Extractor(llm=extractor_llm, tracer=tracer, seed=seed, seats=llm_seats)
    host = GameHost(
        rules=rules,
        agents=agents,
        seed=seed,
        extract=extract,
        recorder=recorder,
        tracer=tracer,
        meta={"seats": dict(zip(rules.seats, kinds)),
              **(first.meta() if llm_seats else {**NO_MODEL, "cards": first.cards}), "probes": probe is not None,
              **({"seat_models": {s: per_seat[rules.seats.index(s)].meta() for s in llm_seats}}
                 if job.per_seat else {})},
        probe=probe,
        watchdog=job.watchdog,
        orders=job.orders,
        max_failed_calls=job.max_failed_calls,
    )
    await host.run()
    return host


def trace_of(host: GameHost) -> list[Record]:
    """The trace records of a finished game (its tracer keeps what it was given, on disk or not)."""
    return list(host.tracer.records) if host.tracer is not None else []


def summarize(results: Sequence[GameResult]) -> dict:
    """Counts for a batch of games: games, good_wins, evil_wins, reasons."""
    reasons: dict[str, int] = {}
    for r in results:
        reasons[r.reason.value] = reasons.get(r.reason.value, 0) + 1
    good = sum(r.winner.value == "good" for r in results)
    return {
        "games": len(results),
        "good_wins": good,
        "evil_wins": len(results) - good,
        "good_win_rate": round(good / len(results), 4) if results else None,
        "reasons": dict(sorted(reasons.items())),
    }

