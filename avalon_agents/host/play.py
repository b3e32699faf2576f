"""Play many games between agent kinds named per seat (what `avalon play` runs)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from avalon_agents.agents.base import Agent
from avalon_agents.agents.registry import AGENT_KINDS, make_agent, needs_llm
from avalon_agents.core.events import GameResult
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat
from avalon_agents.extract.extractor import Extractor
from avalon_agents.host.host import GameHost, typed_action
from avalon_agents.host.probe import BeliefProbe
from avalon_agents.llm.client import LLMClient, MemoryTracer
from avalon_agents.modules import AgentConfig, ExperienceBook
from avalon_agents.records import GameRecorder, read_trace

if TYPE_CHECKING:
    from avalon_agents.stores.experience import ExperienceStore


def parse_seats(spec: str, players: int) -> list[str]:
    """`rulebot` (every seat) or a comma list with one kind per seat. Raises ValueError naming `seats`."""
    kinds = [k.strip() for k in spec.split(",")]
    if len(kinds) == 1:
        kinds *= players
    if len(kinds) != players:
        raise ValueError(f"seats: {len(kinds)} kinds given for {players} players (give one, or one per seat)")
    for kind in kinds:
        if kind not in AGENT_KINDS:
            raise ValueError(f"seats: unknown seat kind {kind!r} (choose from {', '.join(sorted(AGENT_KINDS))})")
    return kinds


def agent_seed(game_seed: int, seat: Seat) -> int:
    """Each seat's agent gets its own seed, derived from the game's."""
    return game_seed * 1009 + seat


def game_dir(out: Path, index: int) -> Path:
    return out / f"game-{index:05d}"


@dataclass
class Models:
    """What the LLM seats of a batch of games share: the agents' client, the extractor's (temperature 0),
    the cognitive agents' config, and the experience they carry from game to game."""

    agents: LLMClient | None = None
    extractor: LLMClient | None = None
    agent_config: AgentConfig | None = None
    experience: ExperienceBook | ExperienceStore = field(default_factory=ExperienceBook)
    experience_dir: Path | None = None
    learn: bool = True  # False: baseline seats get no experience pool
    end_learning: bool = True
    """False: nothing is learned at the end of the game (the runner's last game of a series: no later game
    would read it, and the cognitive agent's experience learning is a dozen LLM calls)."""
    make_client: Callable[[str, float], LLMClient] | None = None
    """Makes the client of a module with its own model or temperature (an experiment's shared clients, under
    the per-model limit); None: a client of its own, without a limit."""
    _pool: ExperienceStore | None = None
    _clients: dict[tuple[str, float], LLMClient] = field(default_factory=dict)

    def pool(self) -> ExperienceStore:
        """The baseline agents' experience pool (in the experience folder, or in memory), made once."""
        if self._pool is None:
            from avalon_agents.stores.experience import ExperienceStore

            self._pool = ExperienceStore(self.experience_dir, collection="baseline_pool")
        self._pool.game = self.experience.game
        return self._pool

    def client(self, spec: str | None, temperature: float) -> LLMClient | None:
        """A client for a module's model: the agents' own, or one per (spec, temperature), made once."""
        base = self.agents
        if base is None or (spec in (None, base.config.spec) and temperature == base.config.temperature):
            return base
        key = (spec or base.config.spec, temperature)
        if self.make_client is not None:
            return self.make_client(*key)
        if key not in self._clients:
            self._clients[key] = LLMClient(config=base.config.model_copy(update={"spec": key[0],
                                                                                "temperature": temperature}))
        return self._clients[key]

    def meta(self) -> dict:
        return {
            "model": self.agents.config.model_dump() if self.agents else None,
            "extractor_model": self.extractor.config.model_dump() if self.extractor else None,
            "agent_config": self.agent_config.model_dump() if self.agent_config else None,
        }


async def play_one(rules: RuleSet, kinds: Sequence[str], seed: int, out: Path | None = None,
                   models: Models | Sequence[Models] | None = None, probes: bool = False) -> GameHost:
    """Play one game; return its host (engine events and result inside).

    `models` is what the LLM seats share, or one `Models` per seat (seats with different agent configs,
    models or experience, as experiments place them); the extractor is the first seat's. With `probes`,
    every LLM seat is asked at the end of each quest, with its own model, what it believes (who is Merlin,
    who is evil); the answers go to the trace (see host.probe). Rule-bot and random seats are not probed.
    """
    per_seat = list(models) if isinstance(models, Sequence) else [models or Models()] * rules.players
    if len(per_seat) != rules.players:
        raise ValueError(f"models: {len(per_seat)} given for {rules.players} seats")
    recorder = GameRecorder(out) if out else None
    tracer = recorder or MemoryTracer()

    llms = {seat: m.agents.with_tracer(tracer) if m.agents else None for seat, m in zip(rules.seats, per_seat)}

    def make(seat: int, kind: str, seat_models: Models) -> Agent:
        def llm_for(spec: str | None, temperature: float) -> LLMClient | None:
            client = seat_models.client(spec, temperature)
            return client.with_tracer(tracer) if client else None

        return make_agent(kind, seat=seat, seed=agent_seed(seed, seat), llm=llms[seat],
                          config=seat_models.agent_config, llm_for=llm_for, experience=seat_models.experience,
                          end_learning=seat_models.end_learning,
                          pool=seat_models.pool() if kind == "baseline" and seat_models.learn else None)

    agents = {seat: make(seat, kind, m) for seat, kind, m in zip(rules.seats, kinds, per_seat)}
    probed = {seat: llms[seat] for seat, kind in zip(rules.seats, kinds) if needs_llm(kind) and llms[seat]}
    probe = BeliefProbe(clients=probed) if probes and probed else None
    first = per_seat[0]
    extract = typed_action
    if any(needs_llm(k) for k in kinds):
        extractor_llm = first.extractor.with_tracer(tracer) if first.extractor else None
        extract = Extractor(llm=extractor_llm, tracer=tracer, seed=seed)
    host = GameHost(
        rules=rules,
        agents=agents,
        seed=seed,
        extract=extract,
        recorder=recorder,
        tracer=tracer,
        meta={"seats": dict(zip(rules.seats, kinds)), **first.meta(), "probes": probe is not None,
              **({"seat_models": {s: m.meta() for s, m in zip(rules.seats, per_seat)}}
                 if isinstance(models, Sequence) else {})},
        probe=probe,
    )
    await host.run()
    return host


async def play_games(
    rules: RuleSet,
    kinds: Sequence[str],
    seed: int,
    games: int,
    out: Path | None = None,
    on_game: Callable[[int, GameHost], None] | None = None,
    models: Models | None = None,
    probes: bool = False,
) -> list[GameResult]:
    """Play `games` games with seeds seed, seed+1, ...; write game-NNNNN/ under `out` if given (`probes`: see
    `play_one`)."""
    results = []
    for i in range(games):
        if models is not None:
            models.experience.game = i + 1
        host = await play_one(rules, kinds, seed + i, game_dir(out, i + 1) if out else None, models, probes)
        results.append(host.engine.result())
        if on_game:
            on_game(i, host)
        await asyncio.sleep(0)  # a game of bots never suspends: let Ctrl-C's cancellation in between games
    return results


def trace_of(host: GameHost) -> list[dict]:
    """The trace records of a finished game (from memory, or from its trace.jsonl)."""
    if isinstance(host.tracer, MemoryTracer):
        return host.tracer.records
    return read_trace(host.recorder.path) if host.recorder else []


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

