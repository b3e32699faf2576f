"""Agent kinds by name, so configs and the CLI can say `rulebot` or `random`."""

from __future__ import annotations

from collections.abc import Callable

from avalon_agents.agents.base import Agent
from avalon_agents.agents.llm_agent import LLMAgent
from avalon_agents.agents.random_agent import RandomAgent
from avalon_agents.agents.rulebot import RuleBot
from avalon_agents.core.types import Seat
from avalon_agents.llm.client import LLMClient

AgentFactory = Callable[..., Agent]
"""Called with keywords `seat` and `seed`, and `llm` (an LLMClient) if it has `needs_llm = True`."""

AGENT_KINDS: dict[str, AgentFactory] = {"random": RandomAgent, "rulebot": RuleBot, "llm": LLMAgent}


def register_agent(name: str, factory: AgentFactory) -> None:
    """Make an agent kind available by name (e.g. in `avalon play --seats`)."""
    AGENT_KINDS[name] = factory


def needs_llm(kind: str) -> bool:
    return getattr(AGENT_KINDS.get(kind), "needs_llm", False)


def make_agent(kind: str, *, seat: Seat, seed: int, llm: LLMClient | None = None) -> Agent:
    """Build one seat's agent. Raises ValueError naming the unknown kind."""
    if kind not in AGENT_KINDS:
        raise ValueError(f"seats: unknown seat kind {kind!r} (choose from {', '.join(sorted(AGENT_KINDS))})")
    if needs_llm(kind):
        if llm is None:
            raise ValueError(f"seats: {kind!r} seats need a model (--model)")
        return AGENT_KINDS[kind](seat=seat, seed=seed, llm=llm)
    return AGENT_KINDS[kind](seat=seat, seed=seed)
