"""The cognitive agent's config: which modules are on, which class fills each slot, their options and models.

In YAML (every key optional; unknown keys are errors naming the field):

    model: openai:gpt-4o-mini        # default model of every module (else the run's model)
    temperature: 0.3
    analysis: {options: {cadence: per_turn, scope: adversaries}}
    planning: {enabled: false}
    action: {use: my_action}        # a module class registered as "my_action"
    summary: {model: local:smollm2}  # one module on another model
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from avalon_agents.llm.client import LLMClient
from avalon_agents.modules.base import MODULES, Module

SLOT_ORDER = ("summary", "analysis", "planning", "action", "response", "experience")
"""The order modules run in; also the config keys."""


class ModuleSettings(BaseModel):
    """One slot: on or off, which registered module fills it, its model and its options."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    use: str | None = None
    model: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _yaml_on(cls, data: Any) -> Any:
        if isinstance(data, dict) and (True in data or False in data):
            raise ValueError("YAML reads the key `on` as true; write `enabled: false` to switch a module off")
        return data


class AgentConfig(BaseModel):
    """The modules of a cognitive agent. `SLOT_ORDER` names the slots; each slot's default module is the
    one registered under the slot's own name."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    temperature: float = Field(0.3, ge=0, le=2)
    summary: ModuleSettings = Field(default_factory=ModuleSettings)
    analysis: ModuleSettings = Field(default_factory=ModuleSettings)
    planning: ModuleSettings = Field(default_factory=ModuleSettings)
    action: ModuleSettings = Field(default_factory=ModuleSettings)
    response: ModuleSettings = Field(default_factory=ModuleSettings)
    experience: ModuleSettings = Field(default_factory=ModuleSettings)

    @model_validator(mode="after")
    def _check(self) -> AgentConfig:
        if not self.response.enabled:
            raise ValueError("response.enabled: the response module is always on (it writes the answer)")
        for slot in SLOT_ORDER:
            self.options_of(slot)  # unknown module or bad options: a ValueError naming the field
        return self

    def settings(self, slot: str) -> ModuleSettings:
        return getattr(self, slot)

    def module_class(self, slot: str) -> type[Module]:
        name = self.settings(slot).use or slot
        if name not in MODULES:
            raise ValueError(f"{slot}.use: no module registered as {name!r} (known: {', '.join(sorted(MODULES))})")
        return MODULES[name]

    def options_of(self, slot: str) -> BaseModel:
        cls = self.module_class(slot)
        try:
            return cls.Options(**self.settings(slot).options)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise ValueError(f"{slot}.options.{field}: {err['msg']}") from None

    def enabled(self) -> list[str]:
        return [slot for slot in SLOT_ORDER if self.settings(slot).enabled]

    def build(self, llm_for: Callable[[str | None, float], LLMClient | None]) -> dict[str, Module]:
        """The enabled modules, each with its client: `llm_for(spec or None, temperature)`."""
        modules = {}
        for slot in self.enabled():
            settings = self.settings(slot)
            llm = llm_for(settings.model or self.model, self.temperature)
            modules[slot] = self.module_class(slot)(llm=llm, options=self.options_of(slot))
        return modules

    def without(self, *slots: str) -> AgentConfig:
        """The same config with these modules off (ablations)."""
        return self.model_copy(update={s: self.settings(s).model_copy(update={"enabled": False}) for s in slots})


def load_agent_config(path: str | Path) -> AgentConfig:
    """Read an agent config from YAML. Raises ValueError naming the file and the bad field."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise ValueError(f"agent-config: cannot read {path} ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"agent-config: {path} is not valid YAML ({str(exc).splitlines()[0]})") from None
    try:
        return AgentConfig.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        where = f"{field}: " if field and not message.startswith(tuple(SLOT_ORDER)) else ""
        raise ValueError(f"agent-config {path}: {where}{message}") from None
