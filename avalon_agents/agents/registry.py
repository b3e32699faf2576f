"""Agent kinds by name, so configs and the CLI can say `rulebot` or `cognitive`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from avalon_agents.agents.attacker import AttackerAgent, as_attack
from avalon_agents.agents.base import Agent
from avalon_agents.agents.baseline import BaselineAgent
from avalon_agents.agents.cognitive import CognitiveAgent
from avalon_agents.agents.context import SeatContext
from avalon_agents.agents.external import ExternalAgent
from avalon_agents.agents.human import HumanAgent, Terminal
from avalon_agents.agents.llm_agent import LLMAgent
from avalon_agents.agents.random_agent import RandomAgent
from avalon_agents.agents.rulebot import RuleBot
from avalon_agents.core.types import Seat
from avalon_agents.prices import Cost
from avalon_agents.records.trace import Tracer
from avalon_agents.registry import Registry

AgentFactory = Callable[..., Agent]
"""Called with keywords `seat` and `seed`, `context` (a SeatContext) if it has `needs_llm = True`, and `terminal`
(where a person reads and types) if it has `needs_terminal = True`, and `tracer` (where the game's trace records
go) if it has `needs_tracer = True`."""



def attacker(*, seat: Seat, seed: int, inner: dict[str, Any], attack: Any = None, rate: float = 1.0,
             context: SeatContext | None = None) -> Agent:
    """The red team's seat (agents/attacker.py): plays through `inner` (`{kind: NAME, ...its options}`, built
    with this seat's context) and wraps a share `rate` of its answers with `attack` (a library name, an attack's
    mapping, or None: wraps nothing)."""
    if not isinstance(inner, dict) or not isinstance(inner.get("kind"), str):
        raise ValueError("inner: the inner agent as {kind: NAME, ...its options}")
    options = dict(inner)
    kind = options.pop("kind")
    if kind in ("attacker", "external") or needs_terminal(kind):
        raise ValueError(f"inner: an attacker cannot play through a {kind!r} seat")
    agent = make_agent(kind, seat=seat, seed=seed, context=context if needs_llm(kind) else None, **options)
    return AttackerAgent(agent, seat=seat, seed=seed, attack=as_attack(attack), rate=rate)


attacker.needs_llm = True  # its context goes to an inner agent that needs a model

AGENT_KINDS: Registry[AgentFactory] = Registry("agent kind", [
    ("random", RandomAgent), ("rulebot", RuleBot), ("llm", LLMAgent), ("cognitive", CognitiveAgent),
    ("baseline", BaselineAgent), ("human", HumanAgent), ("attacker", attacker), ("external", ExternalAgent)])


def register_agent(name: str, factory: AgentFactory) -> None:
    """Make an agent kind available by name (e.g. in `avalon play --seats`). Raises ValueError for a built-in
    kind's name."""
    AGENT_KINDS.register(name, factory)


def needs_llm(kind: str) -> bool:
    return getattr(AGENT_KINDS.get(kind), "needs_llm", False)


def expected_cost(kind: str) -> Cost | None:
    """The calls and tokens per game of six seats a kind declares (its factory's `expected`), None if it
    declares none (`avalon run --check` counts it as none). The cognitive agent's are its modules'."""
    return getattr(AGENT_KINDS.get(kind), "expected", None)


def learning_cost(kind: str) -> Cost:
    """The part of `expected_cost` a kind spends learning at game end (its factory's `learning`), which a series'
    last game does not spend; none if it declares none."""
    return getattr(AGENT_KINDS.get(kind), "learning", None) or Cost()


def needs_tracer(kind: str) -> bool:
    """This kind of seat records trace records of its own (a program's protocol errors: `external`)."""
    return getattr(AGENT_KINDS.get(kind), "needs_tracer", False)


def needs_terminal(kind: str) -> bool:
    """A person plays this kind of seat (`avalon play --human SEAT`), not a program."""
    return getattr(AGENT_KINDS.get(kind), "needs_terminal", False)


def _check_names(kind: str, options: dict[str, Any], reserved: tuple[str, ...] = ()) -> None:
    """Raise ValueError naming an option the kind's factory does not take (or one the framework passes)."""
    accepted = inspect.signature(AGENT_KINDS[kind]).parameters
    open_ended = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
    for name in options:
        if name in reserved or not (open_ended or name in accepted):
            raise ValueError(f"agent kind {kind!r} takes no option {name!r}")


def check_options(kind: str, options: dict[str, Any]) -> None:
    """Raise ValueError naming an option the kind's factory does not take (`seat`, `seed` and `context` are the
    framework's), or an option value its factory refuses: a kind that needs no model is built to see; one that
    needs a model is asked through its `check_options(options)`, if it has one."""
    factory = AGENT_KINDS[kind]
    _check_names(kind, options, reserved=("seat", "seed", "context", "terminal", "tracer"))
    if (check := getattr(factory, "check_options", None)) is not None:  # a model seat's own check of its values
        check(options)
    if options and not needs_llm(kind):
        try:
            factory(seat=1, seed=0, **options)  # a bot is cheap to build: its values are checked now, not mid-run
        except (TypeError, ValueError) as exc:
            raise ValueError(str(exc).splitlines()[0]) from None


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
        if needs_terminal(kind):
            raise ValueError(f"seats: a {kind!r} seat is taken with --human SEAT, not named in --seats")
    return kinds


def take_seat(kinds: list[str], seat: int, games: int) -> list[str]:
    """The seat kinds with a person at `seat`. Raises ValueError naming `human`."""
    if not 1 <= seat <= len(kinds):
        raise ValueError(f"human: seat {seat} is not a seat of a {len(kinds)}-player game")
    if games != 1:
        raise ValueError(f"human: a person plays one game at a time (--games 1), not {games}")
    return [*kinds[:seat - 1], "human", *kinds[seat:]]


def make_agent(kind: str, *, seat: Seat, seed: int, context: SeatContext | None = None,
               terminal: Terminal | None = None, tracer: Tracer | None = None, **options: Any) -> Agent:
    """Build one seat's agent. Raises ValueError naming an unknown kind, a missing model or terminal, or an
    option the kind's factory does not take."""
    if kind not in AGENT_KINDS:
        raise ValueError(f"seats: unknown seat kind {kind!r} (choose from {', '.join(sorted(AGENT_KINDS))})")
    factory = AGENT_KINDS[kind]
    try:
        _check_names(kind, options)
    except ValueError as exc:
        raise ValueError(f"seats: {exc}") from None
    if needs_llm(kind):
        if context is None:
            raise ValueError(f"seats: {kind!r} seats need a model (--model)")
        options["context"] = context
    if needs_terminal(kind):
        if terminal is None:
            raise ValueError(f"seats: a {kind!r} seat needs a terminal: take it with `avalon play --human SEAT`")
        options["terminal"] = terminal
    if needs_tracer(kind):
        options["tracer"] = tracer
    return factory(seat=seat, seed=seed, **options)
