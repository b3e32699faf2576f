"""The cognitive agent's config: which modules are on, which class fills each slot, their options and models.

In YAML (every key optional; unknown keys are errors naming the field):

    model: openai:gpt-4o-mini        # every module's model (else the agent's); a spec or full settings
    temperature: 0.3                 # shorthand for model: {temperature: ...}; unset inherits the agent's
    analysis: {options: {cadence: per_turn, scope: adversaries}}
    plan: {enabled: false}           # `planning:` is accepted as an alias
    action: {use: my_action}         # a module class registered as "my_action"
    summary: {model: local:smollm2}  # one module on another model
    response: {model: {temperature: 0.7, kwargs: {top_p: 0.9}}}

A module's model settings are laid over the config's, and those over the agent's, field by field: a module
without settings of its own runs with its agent's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from avalon_agents.errors import field_error
from avalon_agents.llm.settings import ModelSettings

if TYPE_CHECKING:
    from avalon_agents.llm.pool import GameClients

from avalon_agents.modules.base import MODULES, SLOTS, Module

SLOT_ORDER = SLOTS
ALIASES = {"planning": "plan"}
"""Config keys accepted for a slot under an older name."""


class ModuleSettings(BaseModel):
    """One slot: on or off, which registered module fills it, its model settings and its options."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    use: str | None = None
    model: ModelSettings | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _yaml_on(cls, data: Any) -> Any:
        if isinstance(data, dict) and (True in data or False in data):
            raise ValueError("YAML reads the key `on` as true; write `enabled: false` to switch a module off")
        return data


class _AgentConfig(BaseModel):
    """The modules of a cognitive agent: one `ModuleSettings` per slot (see modules.base.SLOTS); each slot's
    default module is the one registered under the slot's own name. A slot added with `register_slot` is a key
    like the built-in ones (kept as an extra field)."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, ModuleSettings] = Field(init=False)

    model: ModelSettings | None = None
    temperature: float | None = Field(None, ge=0, le=2)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for old, new in ALIASES.items():
                if old in data:
                    if new in data:
                        raise ValueError(f"{old}: give `{new}` or its old name `{old}`, not both")
                    data = {**{k: v for k, v in data.items() if k != old}, new: data[old]}
        return data

    @model_validator(mode="after")
    def _check(self):
        for key in self.__pydantic_extra__ or {}:
            if key not in SLOTS:
                raise ValueError(f"{key}: no such slot or setting (slots: {', '.join(SLOTS)}; and model, "
                                 "temperature)")
        if not self.response.enabled:
            raise ValueError("response.enabled: the response module is always on (it writes the answer)")
        for slot in SLOTS:
            self.options_of(slot)  # unknown module or bad options: a ValueError naming the field
        return self

    def settings(self, slot: str) -> ModuleSettings:
        if slot in type(self).model_fields:
            return getattr(self, slot)
        if slot not in SLOTS:
            raise ValueError(f"no slot {slot!r} (slots: {', '.join(SLOTS)})")
        return (self.__pydantic_extra__ or {}).get(slot) or ModuleSettings()

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
            raise ValueError(field_error(exc, prefix=(slot, "options"))) from None

    def enabled(self) -> list[str]:
        return [slot for slot in SLOTS if self.settings(slot).enabled]

    def own_settings(self) -> ModelSettings:
        """The model settings this config sets for all its modules (model, then the temperature shorthand)."""
        own = self.model or ModelSettings()
        return own.model_copy(update={"temperature": self.temperature}) if self.temperature is not None else own

    def model_for(self, slot: str, agent: ModelSettings | None) -> ModelSettings:
        """A slot's model settings: the module's own over the config's over the agent's."""
        base = self.own_settings().over(agent)
        module = self.settings(slot).model
        return module.over(base) if module is not None else base

    def build(self, clients: GameClients | None, agent: ModelSettings | None) -> dict[str, Module]:
        """The enabled modules, each with its client from `clients` (None: modules without a model)."""
        modules = {}
        for slot in self.enabled():
            llm = clients.get(self.model_for(slot, agent)) if clients is not None else None
            modules[slot] = self.module_class(slot)(llm=llm, options=self.options_of(slot))
        return modules

    def without(self, *slots: str):
        """The same config with these modules off (ablations)."""
        return self.model_copy(update={s: self.settings(s).model_copy(update={"enabled": False}) for s in slots})


AgentConfig = create_model(
    "AgentConfig", __base__=_AgentConfig, __doc__=_AgentConfig.__doc__,
    **{slot: (ModuleSettings, Field(default_factory=ModuleSettings)) for slot in SLOTS},
)


def load_agent_config(path: str | Path) -> AgentConfig:
    """Read an agent config from YAML. Raises ValueError naming the file and the bad field."""
    from avalon_agents.errors import load_yaml

    path = Path(path)
    raw = load_yaml(path, "agent-config") or {}
    try:
        return AgentConfig.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(f"agent-config {path}: {field_error(exc)}") from None
