"""LLM access: model specs, the embedded local model, the scripted model, and the recording client."""

from avalon_agents.llm.client import LLMCallFailed, LLMClient, MemoryTracer, Tracer
from avalon_agents.llm.scripted import ScriptedChatModel, UnexpectedCall
from avalon_agents.llm.specs import DEFAULT_SPEC, ModelConfig, ModelSpecError, check_reachable, make_model, parse_spec

__all__ = [
    "DEFAULT_SPEC",
    "LLMCallFailed",
    "LLMClient",
    "MemoryTracer",
    "ModelConfig",
    "ModelSpecError",
    "ScriptedChatModel",
    "Tracer",
    "UnexpectedCall",
    "check_reachable",
    "make_model",
    "parse_spec",
]
