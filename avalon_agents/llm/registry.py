"""Model providers by name: each registration says, once, how to build the provider's model and what the
framework needs to know about it (constrained output, default answer cap and timeout, the history budget of a
one-call prompt, what its rate limits belong to, a measured pace). `ModelSettings`, the client, the pacer and
`avalon run --check` read it here; a provider nobody registered goes through langchain's `init_chat_model`
with the defaults of `OTHER`.

This module imports nothing of the package but `registry` and `prices` (floor 1), so `llm.settings` can read it
(`llm.builtin` registers the built-in providers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from avalon_agents.prices import FREE, FREE_PROVIDERS, REPLAYED
from avalon_agents.registry import Registry, package_code

SchemaStyle = Literal["json_schema", "llama_cpp", "none"]
"""How decisions ask for constrained output: OpenAI's json_schema, llama-cpp-python's json_object+schema, or not
at all."""

DEFAULT_MAX_TOKENS = 256
DEFAULT_TIMEOUT = 60.0
HISTORY_TOKENS = 2500
"""How much of what a seat has seen goes into a one-call prompt (the vanilla agent's, a probe's)."""

ProviderFactory = Callable[[str, Any], Any]
"""(the spec's part after "provider:", complete ModelSettings) -> a langchain BaseChatModel."""
ChatFactory = Callable[[str, Any], Any]
"""The same -> an llm.chat.Chat that skips langchain (a provider's fast path for LLMClient)."""


@dataclass(frozen=True)
class Provider:
    """A registered provider.

    Attributes:
        factory: builds its langchain chat model (None: langchain's init_chat_model).
        check: checks the spec's model part, raising ModelSpecError.
        reachable: a reachability check run before a run starts.
        chat: a Chat factory LLMClient uses instead of wrapping the langchain model.
        constrained: how it takes constrained decisions (where `constrained` is unset; `constrained: true`
            asks for json_schema from a provider registered with "none").
        max_tokens, timeout: the defaults of an answer's cap and a request's seconds.
        history_tokens: the budget of a seat's view of the game in a one-call prompt.
        endpoint: (spec, settings) -> what its rate limits belong to, None: nothing to pace (default: the spec).
        seconds_per_call: its measured pace, one call at a time, where its rate limits cannot say how long a run
            takes (0: no time worth saying); None: the limits say it.
        profile: how its seats' prompts and answers are shaped where `profile` is unset (avalon_agents.profiles):
            "small" for a model of a few hundred million parameters.
        key_env: the environment variable holding its key where the settings' `api_key_env` is unset (None: it
            needs a key only if `api_key_env` names one); checked before anything heavy is loaded.
        free: its calls cost nothing (priced at $0: prices.FREE_PROVIDERS holds it once registered).
        canned: its answers are canned, not a model's (scripted): a judgment by it is the chance floor, and
            reports and figures say so.
        local: the embedded model, run on this machine by the framework (its server starts when a run does; a
            command on it prints the smoke-run notice).
        replays: it answers every call from the recorded run its spec names (`replay:RUN_DIR`): that run's
            plugins are loaded before it plays (records.run_plugins).
        cache_breakpoints: its prompt cache serves a prefix only up to a block marked for it (Anthropic's
            `cache_control`): its calls go as content blocks with breakpoints where the prompt's stable parts end
            (llm.stable). Others find a repeated prefix themselves.
    """

    factory: ProviderFactory | None = None
    check: Callable[[str], None] | None = None
    reachable: Callable[[str, float], None] | None = None
    chat: ChatFactory | None = None
    constrained: SchemaStyle = "none"
    max_tokens: int = DEFAULT_MAX_TOKENS
    timeout: float = DEFAULT_TIMEOUT
    history_tokens: int = HISTORY_TOKENS
    endpoint: Callable[[str, Any], str | None] | None = None
    seconds_per_call: float | None = None
    profile: str = "standard"
    key_env: str | None = None
    free: bool = False
    canned: bool = False
    local: bool = False
    replays: bool = False
    cache_breakpoints: bool = False


PROVIDERS: Registry[Provider] = Registry("provider")

OTHER = Provider()
"""What the framework assumes of a provider nobody registered (langchain's init_chat_model builds it)."""


def register_provider(name: str, factory: ProviderFactory | None = None, **declared: Any) -> None:
    """Make `name:MODEL` specs build their chat model with `factory(MODEL, settings)`; `declared`: the other
    fields of `Provider` (check, reachable, chat, constrained, max_tokens, timeout, history_tokens, endpoint,
    seconds_per_call, profile, key_env, free, canned, local, replays, cache_breakpoints). Raises ValueError
    (plugins.NameTaken) for a built-in provider's name, or one another plugin registered."""
    builtin = package_code(factory)
    registered = PROVIDERS.register(name, Provider(factory, **declared), builtin=builtin)
    if registered.free:  # what a run of it cost is priced below the model layer (prices), which cannot read this
        FREE_PROVIDERS.register(name, REPLAYED if registered.replays else FREE, builtin=builtin)


def provider(name: str) -> Provider:
    """A provider's registration (`OTHER` for one nobody registered)."""
    return PROVIDERS.get(name, OTHER)


def provider_of_spec(spec: str | None) -> Provider:
    """The registration of a spec's provider (`local:smollm2` -> local's; `scripted` -> scripted's)."""
    return provider((spec or "").partition(":")[0])
