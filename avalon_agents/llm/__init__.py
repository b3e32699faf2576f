"""LLM access: model settings, the provider registry, the client pool, the embedded local model, the scripted
model, and the recording client.

The names below load their module when first used (PEP 562), so importing `avalon_agents.llm.settings` (what a
config or a command line needs) loads no provider package: `avalon --help` and a one-line error stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avalon_agents.lazy import lazy_exports
from avalon_agents.llm import builtin  # noqa: F401  (the built-in providers' registrations, light)

_WHERE = {
    "LLMCallFailed": "client", "LLMClient": "client",
    "ModelHealth": "health", "ModelUnusable": "health",
    "ClientPool": "pool", "GameClients": "pool",
    "check_reachable": "settings", "check_spec": "settings", "make_model": "providers",
    "Provider": "registry", "register_provider": "registry",
    "ScriptedChatModel": "scripted", "UnexpectedCall": "scripted",
    "DEFAULT_SPEC": "settings", "ModelSettings": "settings", "ModelSpecError": "settings", "default_spec": "settings",
}

__all__ = [
    "DEFAULT_SPEC",
    "ClientPool",
    "GameClients",
    "LLMCallFailed",
    "LLMClient",
    "ModelHealth",
    "ModelSettings",
    "ModelSpecError",
    "ModelUnusable",
    "Provider",
    "ScriptedChatModel",
    "UnexpectedCall",
    "check_reachable",
    "check_spec",
    "default_spec",
    "make_model",
    "register_provider",
]


__getattr__ = lazy_exports(__name__, _WHERE)

if TYPE_CHECKING:
    from avalon_agents.llm.client import LLMCallFailed, LLMClient
    from avalon_agents.llm.health import ModelHealth, ModelUnusable
    from avalon_agents.llm.pool import ClientPool, GameClients
    from avalon_agents.llm.providers import make_model
    from avalon_agents.llm.registry import Provider, register_provider
    from avalon_agents.llm.scripted import ScriptedChatModel, UnexpectedCall
    from avalon_agents.llm.settings import (
        DEFAULT_SPEC,
        ModelSettings,
        ModelSpecError,
        check_reachable,
        check_spec,
        default_spec,
    )
