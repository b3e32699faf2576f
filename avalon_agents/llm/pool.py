"""The client pool: one place builds every LLM client (for `play`, `run`, `bench cost`, the probes).

A client is made once per complete settings and shared; all clients of one model spec share one limit of
calls in flight (the agents', the extractor's, the modules' own settings), so one model server sees at most
`limit` calls at a time. An `override` (the CLI's `--model` on `avalon run`) is laid over every settings
asked for, modules' own included. `for_game(tracer)` hands out the same clients recording to one game's
trace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from avalon_agents.llm.health import ModelHealth
from avalon_agents.llm.settings import ModelSettings
from avalon_agents.records.trace import Tracer

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from avalon_agents.llm.client import LLMClient


class ClientPool:
    """Builds and shares LLM clients.

    Args:
        limit: calls in flight at once per model spec (None: no limit).
        override: settings laid over every request (fields it sets win everywhere).
        slots: makes the admission context of a spec (default: an asyncio.Semaphore(limit)); the Ray backend
            passes one that spans the cluster.
        models: chat model instances to use for a spec instead of building one (tests: a ScriptedChatModel
            with its own answering function under "scripted").
    """

    def __init__(self, *, limit: int | None = None, override: ModelSettings | None = None,
                 slots: Callable[[str], AbstractAsyncContextManager] | None = None,
                 models: Mapping[str, BaseChatModel] | None = None) -> None:
        self.limit = limit
        self.override = override
        self.models = dict(models or {})
        self._new_slots = slots or ((lambda spec: asyncio.Semaphore(limit)) if limit else (lambda spec: None))
        self._slots: dict[str, AbstractAsyncContextManager | None] = {}
        self.health: dict[str, ModelHealth] = {}
        """Per model spec: its calls and failures across the run (see llm.health)."""
        self._made: dict[str, LLMClient] = {}

    def resolve(self, settings: ModelSettings | None) -> ModelSettings:
        """The complete settings a request for `settings` gets (the override laid over it)."""
        settings = settings or ModelSettings()
        if self.override is not None:
            settings = self.override.over(settings)
        return settings.complete()

    def get(self, settings: ModelSettings | None = None, tracer: Tracer | None = None) -> LLMClient:
        """The shared client for these settings (recording to `tracer` if given)."""
        settings = self.resolve(settings)
        key = settings.key()
        client = self._made.get(key)
        if client is None:
            if settings.spec not in self._slots:
                self._slots[settings.spec] = self._new_slots(settings.spec)
                self.health[settings.spec] = ModelHealth(settings.spec)
            from avalon_agents.llm.client import LLMClient  # the model client's packages load with the first client

            client = self._made[key] = LLMClient(settings=settings, model=self.models.get(settings.spec),
                                                 slots=self._slots[settings.spec], health=self.health[settings.spec])
        return client.with_tracer(tracer) if tracer is not None else client

    def for_game(self, tracer: Tracer | None) -> GameClients:
        return GameClients(self, tracer)


class GameClients:
    """The pool's clients for one game: every client records to the game's tracer."""

    def __init__(self, pool: ClientPool, tracer: Tracer | None) -> None:
        self.pool = pool
        self.tracer = tracer

    def get(self, settings: ModelSettings | None = None) -> LLMClient:
        return self.pool.get(settings, self.tracer)
