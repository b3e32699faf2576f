"""Model providers: a registry that turns a spec string into a langchain BaseChatModel.

    openai:MODEL                     ChatOpenAI, key from OPENAI_API_KEY
    openai-compatible:MODEL@URL      ChatOpenAI with base_url (vLLM, Ollama, llama.cpp server, ...); the OpenAI
                                     key is never sent there, only the variable `api_key_env` names, and never
                                     over plain http to another machine unless `key_over_http`
    local:smollm2                    the embedded model, served by llama-cpp-python on 127.0.0.1
    scripted                         ScriptedChatModel (plausible canned replies; tests and smoke runs)
    replay:RUN_DIR                   every call answered from a finished run's records (llm.replay): a run
                                     re-executed offline, a regression test
    PROVIDER:MODEL                   anything else goes through langchain's init_chat_model (anthropic,
                                     google_genai, ollama, mistralai, ... when its integration is installed)

Providers are registered like agents and modules (`register_provider`, llm.registry), each with what the
framework needs to know about it (constrained output, default answer cap and timeout, history budget, what its
rate limits belong to). Only this package imports
langchain_openai. Retries are not done by the chat model (max_retries=0) but by `LLMClient` (tenacity), so
that every attempt is visible in the trace. `openai-compatible:` and `local:` calls go through llm.http's thin
client (`make_chat`); `make_model` still gives a ChatOpenAI for them, for use with langchain.
"""

from __future__ import annotations

import re

import httpx
from langchain_core.caches import InMemoryCache
from langchain_core.language_models import BaseChatModel

from avalon_agents.llm.chat import Chat, LangchainChat, capture_headers
from avalon_agents.llm.http import OpenAIHTTP
from avalon_agents.llm.registry import PROVIDERS, provider
from avalon_agents.llm.scripted import ScriptedChatModel
from avalon_agents.llm.settings import (
    COLD_START, ModelSettings, ModelSpecError, check_spec, compatible_parts, key_of, split,
)
from avalon_agents.llm.tls import tls


def make_model(settings: ModelSettings | str) -> BaseChatModel:
    """Build the chat model for complete settings (starting the embedded server for local:...)."""
    if isinstance(settings, str):
        settings = ModelSettings(spec=settings)
    settings = settings.complete()
    provider, rest = split(settings.spec)
    check_spec(settings.spec)
    registered = PROVIDERS.get(provider)
    if registered is None or registered.factory is None:
        return _init_chat_model(settings)
    return registered.factory(rest, settings)


def make_chat(settings: ModelSettings) -> Chat:
    """What LLMClient calls for complete settings: the provider's own Chat (OpenAI-compatible servers and the
    embedded model: llm.http), else its langchain model wrapped."""
    provider_name, rest = split(settings.spec)
    registered = PROVIDERS.get(provider_name)
    if registered is not None and registered.chat is not None:
        check_spec(settings.spec)
        return registered.chat(rest, settings)
    return LangchainChat(make_model(settings), breakpoints=provider(provider_name).cache_breakpoints)


# --------------------------------------------------------------------------- built-in providers


def _limits(settings: ModelSettings) -> dict:
    """Rate limits are not the chat model's business: LLMClient paces every call through the endpoint's pacer
    (llm.pacer), whatever the provider."""
    return {"cache": InMemoryCache() if settings.cache else None}


def endpoint_of(settings: ModelSettings) -> str | None:
    """What a provider's rate limits belong to: the model at its server (None: nothing to pace, the embedded
    model, whose server takes one call at a time, and the scripted model unless a limit is set)."""
    spec = settings.spec or ""
    endpoint = provider(spec.partition(":")[0]).endpoint
    return spec if endpoint is None else endpoint(spec, settings)


def _chat_openai(model: str, settings: ModelSettings, *, url: str | None, key: str,
                 http_client: httpx.AsyncClient | None = None, server: bool = True) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    kwargs = dict(settings.kwargs)
    return ChatOpenAI(
        model=model,
        base_url=url,
        api_key=key,
        temperature=settings.temperature,
        max_completion_tokens=settings.max_tokens,
        timeout=settings.timeout * COLD_START,  # LLMClient holds each call to the timeout; this is the outer bound
        max_retries=0,
        use_responses_api=False,
        # ChatOpenAI sends only max_completion_tokens, which llama.cpp's server ignores: say both to servers
        extra_body={"max_tokens": settings.max_tokens} if server else None,
        # its own connections (langchain-openai shares one cached client, bound to the first event loop)
        # (and every answer's headers, 429s included, reach the pacer through capture_headers)
        http_async_client=http_client or httpx.AsyncClient(timeout=settings.timeout * COLD_START, verify=tls(),
                                                            event_hooks={"response": [capture_headers]}),
        **_limits(settings),
        **kwargs,
    )


def _openai(model: str, settings: ModelSettings) -> BaseChatModel:
    return _chat_openai(model, settings, url=None, key=key_of(settings), server=False)


LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def server_key(url: str, settings: ModelSettings) -> str:
    """The key an OpenAI-compatible server gets: only from the variable the user named (the OpenAI key is for
    OpenAI), and over plain http only to this machine unless `key_over_http` says so."""
    key = key_of(settings)
    if key is None:
        return "not-needed"
    parts = httpx.URL(url)
    if parts.scheme == "http" and parts.host not in LOOPBACK and not settings.key_over_http:
        raise ModelSpecError(f"model: refusing to send {settings.api_key_env} over plain http to {parts.host} "
                             "(use https, or set key_over_http: true / --key-over-http)")
    return key


def _compatible(rest: str, settings: ModelSettings) -> BaseChatModel:
    model, url = compatible_parts(rest)
    return _chat_openai(model, settings, url=url, key=server_key(url, settings))


def _compatible_chat(rest: str, settings: ModelSettings) -> Chat:
    model, url = compatible_parts(rest)
    return OpenAIHTTP(model, url, server_key(url, settings), settings)


def _compatible_reachable(rest: str, timeout: float) -> None:
    _, url = compatible_parts(rest)
    try:
        httpx.get(f"{url}/models", timeout=timeout)
    except httpx.HTTPError as exc:
        raise ModelSpecError(f"model: cannot reach {url} ({type(exc).__name__}: {exc})") from None


def _local(name: str, settings: ModelSettings) -> BaseChatModel:
    from avalon_agents.llm.local import local_server

    server = local_server(name)
    # the embedded server's client is shared by every model of the loop: one request at a time (local.py)
    return _chat_openai(name, settings, url=server.base_url, key="local", http_client=server.http_client())


def _local_chat(name: str, settings: ModelSettings) -> Chat:
    from avalon_agents.llm.local import local_server

    # one connection per event loop: the server answers one call at a time, and waiting there costs it a core
    return OpenAIHTTP(name, local_server(name).base_url, "local", settings, connections=1)


def _anthropic(_: str, settings: ModelSettings) -> BaseChatModel:
    """`anthropic:MODEL`: langchain-anthropic's ChatAnthropic through init_chat_model (the integration must be
    installed); registered for its prompt cache, which serves a prefix only at a breakpoint (llm.stable)."""
    return _init_chat_model(settings)


def _scripted(_: str, settings: ModelSettings) -> BaseChatModel:
    """Canned replies; of the extra arguments only `seed` means something to it."""
    return ScriptedChatModel(cache=InMemoryCache() if settings.cache else None, seed=settings.kwargs.get("seed", 0))


def _replay(run_dir: str, settings: ModelSettings) -> BaseChatModel:
    """`replay:RUN_DIR`: every call is answered from RUN_DIR's records by LLMClient (llm.replay) before any model
    is asked; this model only ever answers a call that no game of RUN_DIR recorded, and it refuses."""
    def refuse(messages, kwargs):
        return None  # ScriptedChatModel raises UnexpectedCall

    return ScriptedChatModel(respond=refuse)


def _init_chat_model(settings: ModelSettings) -> BaseChatModel:
    """Any other provider:model, through langchain's init_chat_model (the integration must be installed)."""
    from langchain.chat_models import init_chat_model

    provider, model = split(settings.spec)
    key = key_of(settings)  # None: the integration reads its own variable (ANTHROPIC_API_KEY, ...)
    key = {"api_key": key} if key else {}
    try:
        return init_chat_model(model, model_provider=provider, temperature=settings.temperature,
                               max_tokens=settings.max_tokens, timeout=settings.timeout, max_retries=0,
                               **_limits(settings), **key, **settings.kwargs)
    except ImportError as exc:
        found = re.search(r"pip install (?:-U )?([\w.\-\[\]]+)", str(exc))
        package = found.group(1) if found else f"langchain-{provider.replace('_', '-')}"
        raise ModelSpecError(f"model: {settings.spec} needs the package {package} (pip install {package})") from None
    except ValueError as exc:
        raise ModelSpecError(f"model: {settings.spec}: {str(exc).splitlines()[0]}") from None
