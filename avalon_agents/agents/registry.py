"""Agent kinds by name, so configs and the CLI can say `rulebot` or `random`."""

from __future__ import annotations

from collections.abc import Callable

from avalon_agents.agents.base import Agent
from avalon_agents.agents.random_agent import RandomAgent
from avalon_agents.agents.rulebot import RuleBot
from avalon_agents.core.types import Seat

AgentFactory = Callable[..., Agent]
"""Called with keywords `seat` and `seed`."""

AGENT_KINDS: dict[str, AgentFactory] = {"random": RandomAgent, "rulebot": RuleBot}


def register_agent(name: str, factory: AgentFactory) -> None:
    """Make an agent kind available by name (e.g. in `avalon play --seats`)."""
    AGENT_KINDS[name] = factory


def make_agent(kind: str, *, seat: Seat, seed: int) -> Agent:
    """Build one seat's agent. Raises ValueError naming the unknown kind."""
    if kind not in AGENT_KINDS:
        raise ValueError(f"seats: unknown seat kind {kind!r} (choose from {', '.join(sorted(AGENT_KINDS))})")
    return AGENT_KINDS[kind](seat=seat, seed=seed)
