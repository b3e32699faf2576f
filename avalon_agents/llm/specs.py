"""Model specs: one function turns a spec string into a langchain BaseChatModel.

    openai:MODEL                     ChatOpenAI, key from OPENAI_API_KEY
    openai-compatible:MODEL@URL      ChatOpenAI with base_url (vLLM, Ollama, llama.cpp server, ...)
    local:smollm2                    the embedded model, served by llama-cpp-python on 127.0.0.1
    scripted                         ScriptedChatModel (plausible canned replies; tests and smoke runs)

Only this package imports langchain_openai. Retries are not done here (max_retries=0) but in
`LLMClient`, with langchain's own retry runnable, so that every attempt is visible in the trace.
"""

from __future__ import annotations

import os
from typing import Literal

import httpx
from langchain_core.caches import InMemoryCache
from langchain_core.language_models import BaseChatModel
from langchain_core.rate_limiters import InMemoryRateLimiter
from pydantic import BaseModel, ConfigDict, Field

from avalon_agents.llm.scripted import ScriptedChatModel

PROVIDERS = ("openai", "openai-compatible", "local", "scripted")
LOCAL_MODELS = ("smollm2",)
DEFAULT_SPEC = "local:smollm2"
DEFAULT_MAX_TOKENS = 256
LOCAL_MAX_TOKENS = 96
DEFAULT_TIMEOUT = 120.0
LOCAL_TIMEOUT = 900.0


class ModelSpecError(ValueError):
    """A model spec that cannot work: unknown, missing a key, unreachable. The message is one line."""


class ModelConfig(BaseModel):
    """A model spec and how to call it.

    Attributes:
        spec: see the module docstring.
        temperature: sampling temperature (paper: 0.3 for agents, 0 for the extractor).
        max_tokens: cap on each answer; None picks 256, or 96 for the embedded model, whose speeches
            otherwise run on (96 tokens is about 70 words, inside the 100-word speech limit).
        timeout: seconds per HTTP request; None picks 120, or 900 for the embedded model, whose server
            answers one call at a time, so a call's time includes waiting behind the others (a call that
            gives up is still computed by the server and then asked again: pure waste).
        retries: extra attempts after a failed call (exponential backoff with jitter).
        requests_per_second: client-side rate limit (langchain's InMemoryRateLimiter); None for none.
        cache: reuse answers to identical prompts within the process (langchain's InMemoryCache).
        constrained: decisions use JSON-schema constrained output; None means "where the provider
            supports it" (local and OpenAI-compatible servers, OpenAI).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: str = DEFAULT_SPEC
    temperature: float = Field(0.3, ge=0, le=2)
    max_tokens: int | None = Field(None, ge=1)
    timeout: float | None = Field(None, gt=0)
    retries: int = Field(2, ge=0, le=10)
    requests_per_second: float | None = Field(None, gt=0)
    cache: bool = False
    constrained: bool | None = None

    @property
    def token_cap(self) -> int:
        if self.max_tokens is not None:
            return self.max_tokens
        return LOCAL_MAX_TOKENS if self.provider == "local" else DEFAULT_MAX_TOKENS

    @property
    def wait_cap(self) -> float:
        if self.timeout is not None:
            return self.timeout
        return LOCAL_TIMEOUT if self.provider == "local" else DEFAULT_TIMEOUT

    @property
    def provider(self) -> str:
        return parse_spec(self.spec)[0]

    @property
    def schema_style(self) -> Literal["json_schema", "llama_cpp", "none"]:
        """How decisions ask for constrained output: OpenAI's json_schema, llama-cpp-python's
        json_object+schema, or not at all."""
        if self.constrained is False:
            return "none"
        return "llama_cpp" if self.provider == "local" else "json_schema"


def default_spec() -> str:
    """OpenAI's small model when OPENAI_API_KEY is set, else the embedded local model."""
    return "openai:gpt-4o-mini" if os.environ.get("OPENAI_API_KEY") else DEFAULT_SPEC


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """Split a spec into (provider, model, base_url). Raises ModelSpecError naming the problem."""
    if spec == "scripted":
        return "scripted", "scripted", None
    provider, sep, rest = spec.partition(":")
    if not sep or provider not in PROVIDERS or not rest:
        raise ModelSpecError(
            f"model: unknown spec {spec!r} (use openai:MODEL, openai-compatible:MODEL@URL, local:smollm2 or scripted)"
        )
    if provider == "openai-compatible":
        model, at, url = rest.rpartition("@")
        if not at or not model or not url.startswith(("http://", "https://")):
            raise ModelSpecError(f"model: {spec!r} needs the form openai-compatible:MODEL@http://host:port/v1")
        return provider, model, url.rstrip("/")
    if provider == "local" and rest not in LOCAL_MODELS:
        raise ModelSpecError(f"model: no embedded model {rest!r} (available: {', '.join(LOCAL_MODELS)})")
    return provider, rest, None


def make_model(config: ModelConfig | str) -> BaseChatModel:
    """Build the chat model for a spec (starting the embedded server for local:...)."""
    if isinstance(config, str):
        config = ModelConfig(spec=config)
    provider, model, url = parse_spec(config.spec)
    if provider == "scripted":
        return ScriptedChatModel(cache=InMemoryCache() if config.cache else None)
    from langchain_openai import ChatOpenAI

    if provider == "openai":
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ModelSpecError(f"model: {config.spec} needs OPENAI_API_KEY in the environment")
    elif provider == "openai-compatible":
        key = os.environ.get("OPENAI_API_KEY") or "not-needed"
    else:
        from avalon_agents.llm.local import local_server

        server = local_server(model)
        url, key = server.base_url, "local"
    return ChatOpenAI(
        model=model,
        base_url=url,
        api_key=key,
        temperature=config.temperature,
        max_completion_tokens=config.token_cap,
        timeout=config.wait_cap,
        max_retries=0,
        use_responses_api=False,
        rate_limiter=InMemoryRateLimiter(requests_per_second=config.requests_per_second)
        if config.requests_per_second
        else None,
        cache=InMemoryCache() if config.cache else None,
        # ChatOpenAI sends only max_completion_tokens, which llama.cpp's server ignores: say both to servers
        extra_body={"max_tokens": config.token_cap} if provider != "openai" else None,
        # its own connections (langchain-openai shares one cached client, bound to the first event loop)
        # (the embedded server's is shared by every model of the loop: one request at a time, see local.py)
        http_async_client=server.http_client() if provider == "local" else httpx.AsyncClient(timeout=config.wait_cap),
    )


def check_reachable(config: ModelConfig | str, timeout: float = 5.0) -> None:
    """Fail early, in one line, when an OpenAI-compatible server does not answer."""
    if isinstance(config, str):
        config = ModelConfig(spec=config)
    provider, _, url = parse_spec(config.spec)
    if provider != "openai-compatible":
        return
    try:
        httpx.get(f"{url}/models", timeout=timeout)
    except httpx.HTTPError as exc:
        raise ModelSpecError(f"model: cannot reach {url} ({type(exc).__name__}: {exc})") from None
