"""The cognitive agent's modules: one small protocol, typed slots, a registry, and the paper's modules."""

from avalon_agents.modules.base import MODULES, Expected, Mind, Module, Slots, Turn, register_module, register_slot
from avalon_agents.modules.config import SLOT_ORDER, AgentConfig, ModuleSettings, load_agent_config
from avalon_agents.modules.experience import ExperienceModule
from avalon_agents.modules.memory import Entry, Memory
from avalon_agents.modules.standard import (
    ActionModule,
    AnalysisModule,
    PlanningModule,
    ResponseModule,
    SummaryModule,
)
from avalon_agents.stores.book import Experience, ExperienceBook

__all__ = [
    "MODULES",
    "SLOT_ORDER",
    "ActionModule",
    "AgentConfig",
    "AnalysisModule",
    "Expected",
    "Entry",
    "Experience",
    "ExperienceBook",
    "ExperienceModule",
    "Memory",
    "Mind",
    "Module",
    "ModuleSettings",
    "PlanningModule",
    "ResponseModule",
    "Slots",
    "SummaryModule",
    "Turn",
    "load_agent_config",
    "register_module",
    "register_slot",
]
