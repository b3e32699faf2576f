"""LLM access: model settings, the provider registry, the client pool, the embedded local model, the scripted
model, and the recording client."""

from avalon_agents.llm.client import LLMCallFailed, LLMClient
from avalon_agents.llm.health import ModelHealth, ModelUnusable
from avalon_agents.llm.pool import ClientPool, GameClients
from avalon_agents.llm.providers import check_reachable, check_spec, make_model
from avalon_agents.llm.registry import Provider, register_provider
from avalon_agents.llm.scripted import ScriptedChatModel, UnexpectedCall
from avalon_agents.llm.settings import DEFAULT_SPEC, ModelSettings, ModelSpecError, default_spec

__all__ = [
    "DEFAULT_SPEC",
    "ClientPool",
    "GameClients",
    "LLMCallFailed",
    "LLMClient",
    "ModelHealth",
    "ModelUnusable",
    "ModelSettings",
    "Provider",
    "ModelSpecError",
    "ScriptedChatModel",
    "UnexpectedCall",
    "check_reachable",
    "check_spec",
    "default_spec",
    "make_model",
    "register_provider",
]
