"""The built-in providers' registrations (openai, openai-compatible, local, anthropic, scripted, replay), light:
the checks of a spec are here, and every other part is `llm.providers`' own function, imported when first called. So
reading a config, checking a spec or printing `--help` loads no provider package. `avalon_agents.llm` imports
this module, so the registrations are there as soon as any part of `llm` is.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from avalon_agents.llm.registry import register_provider
from avalon_agents.llm.settings import ModelSpecError, compatible_parts

LOCAL_SECONDS_PER_CALL = 3.9
"""The embedded model's measured pace on 2 cores, one call at a time: the quickstart game, 135 calls in 527 s
(docs/benchmarks.md, "Quickstart timings"); its prompt cache makes a call cheaper than its tokens suggest."""


def late(name: str) -> Callable[..., Any]:
    """`llm.providers.<name>`, imported when first called (the provider's factories load langchain)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module("avalon_agents.llm.providers"), name)(*args, **kwargs)

    call.__qualname__ = call.__name__ = name
    return call


def _compatible_check(rest: str) -> None:
    compatible_parts(rest)


def _local_check(name: str) -> None:
    from avalon_agents.llm.local import MODELS

    if name not in MODELS:
        raise ModelSpecError(f"model: no embedded model {name!r} (available: {', '.join(MODELS)})")


def _replay_check(run_dir: str) -> None:
    if not Path(run_dir).is_dir():
        raise ModelSpecError(f"model: replay:{run_dir}: no such run directory")


def _unpaced(spec: str, settings: Any) -> str | None:
    return None


def _openai_endpoint(spec: str, settings: Any) -> str | None:
    return f"{spec}@{os.environ.get('OPENAI_BASE_URL') or 'https://api.openai.com/v1'}"


def _scripted_endpoint(spec: str, settings: Any) -> str | None:
    return spec if any(settings.limits) else None


register_provider("openai", late("_openai"), constrained="json_schema", endpoint=_openai_endpoint,
                  key_env="OPENAI_API_KEY")
register_provider("openai-compatible", late("_compatible"), check=_compatible_check,
                  reachable=late("_compatible_reachable"), chat=late("_compatible_chat"), constrained="json_schema")
register_provider("local", late("_local"), check=_local_check, chat=late("_local_chat"), constrained="llama_cpp",
                  # 96 tokens is about 70 words: the small model's speeches otherwise run on; its server answers
                  # one call at a time, so a call's time includes waiting behind the others; on 2 CPU cores every
                  # prompt token costs about 3.5 ms
                  max_tokens=96, timeout=900.0, history_tokens=900, endpoint=_unpaced,
                  seconds_per_call=LOCAL_SECONDS_PER_CALL, profile="small",  # SmolLM2-135M (profiles.py)
                  free=True, local=True)
# langchain-anthropic through init_chat_model, registered for its prompt cache: breakpoints where the stable parts end
register_provider("anthropic", late("_anthropic"), cache_breakpoints=True)
register_provider("scripted", late("_scripted"), constrained="json_schema", endpoint=_scripted_endpoint,
                  seconds_per_call=0.0, free=True, canned=True)
register_provider("replay", late("_replay"), check=_replay_check, constrained="json_schema", endpoint=_unpaced,
                  seconds_per_call=0.0, free=True, replays=True)  # answered from the records: no time worth saying
