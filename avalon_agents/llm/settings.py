"""Model settings: one pydantic model for which model to call and how, settable per agent and per module.

Every field may be left unset (None, or no `kwargs`), which means "inherit": a module's settings are laid
over its agent's, an agent's over the run's, field by field (`over`), and `complete()` fills what is still
unset with the defaults. In YAML and on the CLI a bare string is a spec: `model: openai:gpt-4o-mini` is
`model: {spec: openai:gpt-4o-mini}`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from avalon_agents.checks import no_bool_number
from avalon_agents.llm.registry import PROVIDERS, Provider, SchemaStyle, provider
from avalon_agents.profiles import Profile, ProfileName
from avalon_agents.profiles import profile as profile_named

DEFAULT_SPEC = "local:smollm2"
DEFAULT_TEMPERATURE = 0.3
"""The paper's agent temperature (its 5.1); the extractor and the judges use 0."""
COLD_START = 3.0
"""A model's first call may take this many times the timeout (a server that loads its model on first use)."""
DEFAULT_RETRIES = 2
ANSWER_CHARS_PER_TOKEN = 16
"""An answer is cut at max_tokens x this many characters (at least MIN_ANSWER_CHARS) before it reaches a prompt
or a file: a server that ignores max_tokens cannot grow the prompts, the trace or the bill."""
MIN_ANSWER_CHARS = 2000
NOT_MEASURED = ("timeout", "retries", "requests_per_second", "rpm", "tpm")
"""Settings that change how a call is made, not what it measures: a resume may change them."""


class ModelSpecError(ValueError):
    """A model spec that cannot work: unknown, missing a key or a package, unreachable. One line."""


def provider_of(spec: str) -> str:
    """The provider part of a spec ("scripted" for "scripted")."""
    return spec.partition(":")[0]


class ModelSettings(BaseModel):
    """Which model to call and how.

    Attributes:
        spec: `openai:MODEL`, `openai-compatible:MODEL@URL`, `local:smollm2`, `scripted`, or any other
            `provider:model` that langchain's `init_chat_model` knows (see llm.providers).
        temperature: sampling temperature (paper: 0.3 for agents, 0 for the extractor).
        max_tokens: cap on each answer; unset picks the provider's default (its registration, llm.registry):
            256, or 96 for the embedded model, whose speeches
            otherwise run on (96 tokens is about 70 words, inside the 100-word speech limit).
        timeout: seconds per request; unset picks the provider's default: 60 (the first call of a model: three
            times as long, for a server that loads the model then), or 900 for the embedded model, whose server
            answers one call at a time, so a call's time includes waiting behind the others. A server that answers
            nothing while calls wait for it is found hung after five timeouts, at most 5 minutes, from the first
            call on, and the command ends (llm.health.hang_limit).
        retries: extra attempts after a failed call (exponential backoff with jitter).
        requests_per_second: the endpoint's request limit, per second (the same as `rpm` / 60; kept for older
            configs).
        rpm: the endpoint's limit of requests per minute; unset: learned from the provider's answers (its
            `x-ratelimit-*` headers and 429s). Every caller of the endpoint in the process shares one pacer
            (llm.pacer); a limit is not part of what a run measured, so a resume may change it.
        tpm: the endpoint's limit of tokens (prompt and answer) per minute; unset: learned likewise.
        cache: reuse answers to identical prompts within the process (langchain's InMemoryCache).
        constrained: decisions use JSON-schema constrained output; unset means "where the provider supports
            it" (the embedded model, OpenAI and OpenAI-compatible servers).
        kwargs: extra keyword arguments for the chat model (`seed`, `top_p`, `reasoning_effort`, ...). Never a
            key: keys come from the environment only, so no key lands in a config, a trace or meta.json.
        api_key_env: the environment variable holding this model's key (`openai:` reads OPENAI_API_KEY
            unless this names another; an `openai-compatible:` server gets a key only from the variable named
            here).
        key_over_http: send the key over plain http to a host that is not this machine (off: refused).
        profile: how the seats' prompts and answers are shaped for the model's size (avalon_agents.profiles):
            "standard" (the paper's protocol) or "small" (the decision first, a shorter rules text, stop
            sequences, speeches capped in words and guarded against echoing the prompt); unset: the provider's
            (small for `local:`, standard for the others).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: str | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, ge=1)
    timeout: float | None = Field(None, gt=0)
    retries: int | None = Field(None, ge=0, le=10)
    requests_per_second: float | None = Field(None, gt=0)
    rpm: float | None = Field(None, gt=0)
    tpm: float | None = Field(None, gt=0)
    cache: bool | None = None
    constrained: bool | None = None
    kwargs: dict[str, Any] = Field(default_factory=dict)
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    key_over_http: bool | None = None
    profile: ProfileName | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return no_bool_number(value, cls.model_fields[info.field_name].annotation)

    @model_validator(mode="before")
    @classmethod
    def _spec_string(cls, data: Any) -> Any:
        return {"spec": data} if isinstance(data, str) else data

    def over(self, base: ModelSettings | None) -> ModelSettings:
        """These settings laid over `base`: every field set here wins, the rest come from `base`; `kwargs`
        are merged (these win)."""
        if base is None:
            return self
        mine = {k: v for k, v in self if v is not None and k != "kwargs"}
        return base.model_copy(update={**mine, "kwargs": {**base.kwargs, **self.kwargs}})

    def complete(self) -> ModelSettings:
        """Every unset field filled with its default (the spec: `default_spec()`)."""
        spec = self.spec or default_spec()
        registered = provider(provider_of(spec))  # its defaults
        shape = profile_named(self.profile or registered.profile)
        kwargs = {"stop": list(shape.stop), **self.kwargs} if shape.stop else self.kwargs
        return self.model_copy(update={
            "profile": shape.name,
            "kwargs": kwargs,
            "spec": spec,
            "temperature": DEFAULT_TEMPERATURE if self.temperature is None else self.temperature,
            "max_tokens": self.max_tokens or registered.max_tokens,
            "timeout": self.timeout or registered.timeout,
            "retries": DEFAULT_RETRIES if self.retries is None else self.retries,
            "cache": bool(self.cache),
        })

    @property
    def provider(self) -> str:
        return provider_of(self.spec or default_spec())

    @property
    def declared(self) -> Provider:
        """What this model's provider declares (llm.registry.Provider: free, canned, local, replays, ...)."""
        return provider(self.provider)

    @property
    def schema_style(self) -> SchemaStyle:
        """How decisions ask for constrained output: OpenAI's json_schema, llama-cpp-python's
        json_object+schema, or not at all (off, or a provider not registered as supporting it and not told
        `constrained: true`)."""
        if self.constrained is False:
            return "none"
        style = provider(self.provider).constrained
        return "json_schema" if style == "none" and self.constrained else style

    @property
    def shape(self) -> Profile:
        """The profile these settings' seats are shaped by (the provider's where `profile` is unset)."""
        return profile_named(self.profile or provider(self.provider).profile)

    @property
    def history_tokens(self) -> int:
        """The budget for a seat's view of the game in a one-call prompt on this model."""
        return provider(self.provider).history_tokens

    @property
    def limits(self) -> tuple[float | None, float | None]:
        """(requests, tokens) per minute the user set for this model's endpoint (None: learn it)."""
        rpm = self.rpm or (self.requests_per_second * 60 if self.requests_per_second else None)
        return rpm, self.tpm

    def key(self) -> str:
        """A stable identity of these settings (clients are shared per key)."""
        return self.model_dump_json()

    @model_validator(mode="after")
    def _no_key_in_kwargs(self) -> ModelSettings:
        keys = [k for k in self.kwargs if "key" in k.lower() or "token" in k.lower() or "secret" in k.lower()]
        if keys:
            raise ValueError(f"kwargs.{keys[0]}: keys come from the environment only; name the variable with "
                             "api_key_env (--api-key-env)")
        return self

    def public(self) -> dict[str, Any]:
        """The settings as recorded in traces and meta.json (they never hold a key, only its variable's name)."""
        return self.model_dump()


def default_spec() -> str:
    """OpenAI's small model when OPENAI_API_KEY is set, else the embedded local model."""
    return "openai:gpt-4o-mini" if os.environ.get("OPENAI_API_KEY") else DEFAULT_SPEC


def parse_kwarg(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` from the CLI; VALUE is read as a YAML scalar (numbers, true/false, null, strings)."""
    from avalon_agents.errors import parse_yaml

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"model-kwarg: expected KEY=VALUE, got {text!r}")
    return key.strip(), parse_yaml(value, f"model-kwarg {key.strip()}")[0] if value.strip() else ""


def parse_kwargs(texts: Iterable[str]) -> dict[str, Any]:
    """Repeated `--model-kwarg KEY=VALUE` options as one mapping; a key given twice is refused (ValueError)."""
    out: dict[str, Any] = {}
    for text in texts:
        key, value = parse_kwarg(text)
        if key in out:
            raise ValueError(f"model-kwarg: {key} given twice; give each key once")
        out[key] = value
    return out


def split(spec: str) -> tuple[str, str]:
    """(provider, the rest) of a spec. Raises ModelSpecError for a spec without a model part."""
    if spec in PROVIDERS:  # a provider that needs no model name ("scripted")
        return spec, ""
    name, sep, rest = spec.partition(":")
    if not sep or not name or not rest:
        known = ", ".join(f"{p}:MODEL" for p in PROVIDERS if p != "scripted")
        raise ModelSpecError(f"model: unknown spec {spec!r} (use {known}, scripted, or any provider:model that "
                             "langchain's init_chat_model knows)")
    return name, rest


def check_spec(spec: str) -> None:
    """Raise ModelSpecError (one line) if the spec cannot name a model (the provider's own check, if it has one),
    or names a provider in another case or a letter off one of ours (`Local:smollm2`: did you mean local:?), which
    would otherwise go to langchain as a provider of its own."""
    from avalon_agents.errors import near

    name, rest = split(spec)
    registered = PROVIDERS.get(name)
    meant = near(name, PROVIDERS) if registered is None else None
    if meant is not None:
        raise ModelSpecError(f"model: no provider {name!r} in {spec!r} (did you mean {meant}:{rest}?)")
    if registered is not None and registered.check is not None:
        registered.check(rest)


def key_of(settings: ModelSettings) -> str | None:
    """The key these (complete) settings' model is called with: from `api_key_env`, else the provider's `key_env`
    (None: it needs none). Raises ModelSpecError naming the variable when it is not set. Light: a run checks
    every model's key with it before it loads a provider's package."""
    variable = settings.api_key_env or provider(settings.provider).key_env
    if variable is None:
        return None
    key = os.environ.get(variable)
    if not key:
        raise ModelSpecError(f"model: api_key_env names {variable}, which is not set" if settings.api_key_env else
                             f"model: {settings.spec} needs {variable} in the environment")
    return key


def check_reachable(settings: ModelSettings | str, timeout: float = 5.0) -> None:
    """Fail early, in one line, when a spec is malformed or its server does not answer (the provider's own
    `reachable` check, if it has one)."""
    spec = settings if isinstance(settings, str) else settings.complete().spec
    check_spec(spec)
    name, rest = split(spec)
    registered = PROVIDERS.get(name)
    if registered is not None and registered.reachable is not None:
        registered.reachable(rest, timeout)


def compatible_parts(rest: str) -> tuple[str, str]:
    """(model, base URL) of an `openai-compatible:MODEL@URL` spec. Raises ModelSpecError naming the form."""
    import httpx

    model, at, url = rest.rpartition("@")
    if not at or not model or not url.startswith(("http://", "https://")):
        raise ModelSpecError(f"model: 'openai-compatible:{rest}' needs the form "
                             "openai-compatible:MODEL@http://host:port/v1")
    try:
        httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise ModelSpecError(f"model: {url!r} is not a valid URL ({exc})") from None
    return model, url.rstrip("/")
