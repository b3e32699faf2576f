"""Players: the Agent protocol, rule bots, a random agent, the vanilla LLM agent."""

from avalon_agents.agents.base import Agent, AgentBase
from avalon_agents.agents.llm_agent import LLMAgent
from avalon_agents.agents.random_agent import RandomAgent
from avalon_agents.agents.registry import AGENT_KINDS, make_agent, register_agent
from avalon_agents.agents.rulebot import RuleBot
from avalon_agents.core.actions import Reply

__all__ = ["AGENT_KINDS", "Agent", "AgentBase", "LLMAgent", "RandomAgent", "Reply", "RuleBot", "make_agent",
           "register_agent"]
