"""Agent kinds by name, so configs and the CLI can say `rulebot` or `random`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from avalon_agents.agents.base import Agent
from avalon_agents.agents.baseline import BaselineAgent
from avalon_agents.agents.cognitive import CognitiveAgent
from avalon_agents.agents.llm_agent import LLMAgent
from avalon_agents.agents.random_agent import RandomAgent
from avalon_agents.agents.rulebot import RuleBot
from avalon_agents.core.types import Seat
from avalon_agents.llm.client import LLMClient

AgentFactory = Callable[..., Agent]
"""Called with keywords `seat` and `seed`; if it has `needs_llm = True` also `llm` (an LLMClient), and
`config`, `llm_for`, `experience`, `pool` where its signature takes them (cognitive and baseline do)."""

AGENT_KINDS: dict[str, AgentFactory] = {"random": RandomAgent, "rulebot": RuleBot, "llm": LLMAgent,
                                        "cognitive": CognitiveAgent, "baseline": BaselineAgent}


def register_agent(name: str, factory: AgentFactory) -> None:
    """Make an agent kind available by name (e.g. in `avalon play --seats`)."""
    AGENT_KINDS[name] = factory


def needs_llm(kind: str) -> bool:
    return getattr(AGENT_KINDS.get(kind), "needs_llm", False)


def make_agent(kind: str, *, seat: Seat, seed: int, llm: LLMClient | None = None, **extra: Any) -> Agent:
    """Build one seat's agent. `extra` (config, llm_for, experience, ...) reaches factories that take it.
    Raises ValueError naming the unknown kind."""
    if kind not in AGENT_KINDS:
        raise ValueError(f"seats: unknown seat kind {kind!r} (choose from {', '.join(sorted(AGENT_KINDS))})")
    factory = AGENT_KINDS[kind]
    if not needs_llm(kind):
        return factory(seat=seat, seed=seed)
    if llm is None:
        raise ValueError(f"seats: {kind!r} seats need a model (--model)")
    accepted = inspect.signature(factory).parameters
    return factory(seat=seat, seed=seed, llm=llm, **{k: v for k, v in extra.items() if k in accepted})
