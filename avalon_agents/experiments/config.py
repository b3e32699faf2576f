"""Experiment configs: who plays whom, under which rules and models, in how many series of consecutive games.

    name: quickstart
    rules: official            # preset
    players: 6
    model: local:smollm2       # every agent's model settings (a spec or a mapping); --model etc. override all
    extractor: {model: null}   # the extractor's settings over its agent's (temperature 0, 64 tokens)
    plugins: [my_modules.py]   # the user's code (paths relative to this file, or module names), imported first
    agents:                    # named agents: a kind plus, for cognitive agents, the module config
      ours: {kind: cognitive, modules: {analysis: {options: {scope: all}}}}
      baseline: {kind: baseline, model: {temperature: 0.7}, cards: improved}   # role cards: paper (default)
    sides: {good: ours, evil: baseline}           # or roles: {Merlin: ours, ...}, or lineup: {ours: 3, ...}
    # roles: [merlin, percival, loyal_servant, loyal_servant, morgana, mordred, minion]   # a role set (a list;
    # players: as many); seat it with sides or lineup
    # assassin: mordred          # the evil role that carries the assassination (default: the Assassin)
    variants: {full: {}, wo_analysis: {agents: {ours: {modules: {analysis: {enabled: false}}}}}}
    series: 2
    games_per_series: 10       # consecutive games that carry experience forward
    learn_after_last: false    # true: also learn after a series' last game (which no later game reads)
    seed: 0
    schedule: balanced         # lineup seats: every agent in every seat and role equally often (or random)
    order: {players: shuffled, options: shuffled, speeches: fixed}   # listing orders in prompts (default fixed)
    concurrency: {games: 2}    # llm_calls: calls in flight per model (default 4 per game in flight, at least 16)
    probes: false              # true: belief probes after each quest (trace only; beyond the paper)

A variant is a partial config merged over the base; `grid` crosses toggles instead
(`grid: {agents.ours.modules.analysis.enabled: [true, false]}`). Unknown keys and bad values are errors that
name the field and the file line.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from avalon_agents.agents.registry import AGENT_KINDS, check_options, needs_llm, needs_terminal
from avalon_agents.checks import Count, Name, Seed, check_name, no_bool_number
from avalon_agents.core import make_rules
from avalon_agents.core.rules import PRESETS, RuleSet
from avalon_agents.core.types import Role, Team
from avalon_agents.errors import did_you_mean, near, parse_yaml, unknown_key
from avalon_agents.experiments.config_lines import BASE, config_error, line_of
from avalon_agents.extract.extractor import EXTRACTOR_SETTINGS, extractor_settings
from avalon_agents.llm.settings import ModelSettings, check_spec, key_of
from avalon_agents.modules import AgentConfig
from avalon_agents.narrate import DEFAULT_CARDS, Cards
from avalon_agents.orders import Mode
from avalon_agents.plugins import load_plugins
from avalon_agents.registry import Registry
from avalon_agents.prices import Price
from avalon_agents.records.health import HealthLimits

SERIES_STRIDE = 10_000
"""Seeds: game (or a tournament's block) g of series s uses seed + SERIES_STRIDE * (s - 1) + (g - 1)."""


class Strict(BaseModel):
    """A config mapping: an unknown key is refused, naming its near spelling ("agnets: unknown key (did you mean
    agents?)") before anything else is checked."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in data:
                if key not in cls.model_fields:
                    raise unknown_key(key, cls.model_fields)
        return data

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return no_bool_number(value, cls.model_fields[info.field_name].annotation)


class AgentSpec(Strict):
    """One named agent: its kind, its modules (cognitive agents), its model settings."""

    kind: str
    modules: AgentConfig | None = None
    model: ModelSettings | None = Field(None, description="a spec or settings; unset fields: the experiment's")
    temperature: float | None = Field(None, ge=0, le=2, description="shorthand for model: {temperature: ...}")
    learn: bool = Field(True, description="carry experience to the next game of the series (false: every game "
                                          "starts fresh, the paper's 'without learning from experience')")
    cards: Cards = Field(DEFAULT_CARDS, description="role cards in its seats' system prompts: `paper` (the "
                                                    "paper's goals and initial strategies) or `improved`")
    options: dict[str, Any] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="keyword options of the kind's factory, e.g. {blunder: 0.3} for a rule bot that plays at "
                    "random 30% of the time")

    @field_validator("kind")
    @classmethod
    def _known(cls, kind: str) -> str:
        if kind not in AGENT_KINDS:
            raise ValueError(f"unknown agent kind {kind!r} (known: {', '.join(sorted(AGENT_KINDS))})"
                             f"{did_you_mean(kind, AGENT_KINDS)}")
        if needs_terminal(kind):
            raise ValueError(f"agent kind {kind!r} is a person: it plays in `avalon play --human SEAT`, not in runs")
        return kind

    @model_validator(mode="after")
    def _modules_for_cognitive(self) -> AgentSpec:
        if self.modules is not None and self.kind != "cognitive":
            raise ValueError(f"modules: agent kind {self.kind!r} has no modules (only cognitive agents do)")
        if (self.model is not None or self.temperature is not None) and not needs_llm(self.kind):
            raise ValueError(f"model: agent kind {self.kind!r} calls no model")
        if "cards" in self.model_fields_set and not needs_llm(self.kind):
            raise ValueError(f"cards: agent kind {self.kind!r} reads no role cards")
        try:
            check_options(self.kind, self.options)
        except ValueError as exc:
            raise ValueError(f"options: {exc}") from None
        return self

    def settings(self, base: ModelSettings | None) -> ModelSettings:
        """This agent's model settings over the experiment's `base`."""
        own = self.model or ModelSettings()
        if self.temperature is not None:
            own = own.model_copy(update={"temperature": self.temperature})
        return own.over(base)

    def setup(self, base: ModelSettings | None, extractor: ModelSettings | None, clients: Any, *,
              experience_dir: Path | None = None, fresh: bool = False, options: dict | None = None) -> Any:
        """Its seats' setup (host.play.agent_setup, the one builder): its model over `base`, the `extractor`'s
        settings (None: no LLM stage), its modules, cards and options (`options`: instead of its own, the red
        team's attacker's). An experiment's agent (`fresh` False) keeps what it learns in a store in
        `experience_dir`; a paired study's (`fresh`) starts every game from nothing and learns nothing, so the two
        games of a pair start alike."""
        from avalon_agents.host.play import agent_setup

        return agent_setup(clients, self.settings(base), llm=fresh or needs_llm(self.kind), extractor=extractor,
                           modules=self.modules, cards=self.cards,
                           options=self.options if options is None else options,
                           learn=self.learn and not fresh, end_learning=not fresh,
                           experience_dir=None if fresh else experience_dir, run=1)


class ExtractorSpec(Strict):
    model: ModelSettings = Field(default_factory=lambda: EXTRACTOR_SETTINGS,
                                 description="laid over the agent's settings (a spec replaces its model)")



class Table(Strict):
    """The table every study's games are dealt at, one config shape under every study (`avalon run` and its
    tournaments' `Experiment`, the red team's and the bias study's `PairedStudy`): the rule preset, the players,
    the role set and who carries the assassination, the Lady of the Lake."""

    name: Name
    rules: str = "official"
    players: int = Field(6, ge=5, le=10)
    roles: list[Role] | None = Field(None, description="the role set, one role per seat (players: as many)")
    assassin: Role | None = Field(None, description="the evil role that carries the assassination (default: the "
                                                    "Assassin); a role set without Merlin has none")
    lady_of_the_lake: bool = Field(False, exclude_if=lambda v: not v, description="play with the Lady of the "
                                   "Lake (7+ players): after quests 2-4 its holder learns a player's loyalty")

    @model_validator(mode="before")
    @classmethod
    def _players_of_the_role_set(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("roles"), list) and "players" not in data:
            return {**data, "players": len(data["roles"])}
        return data

    @field_validator("roles", mode="before")
    @classmethod
    def _role_names(cls, roles: Any) -> Any:
        if isinstance(roles, list):
            return [Role.parse(r) if isinstance(r, str) else r for r in roles]
        if isinstance(roles, dict):
            return {Role.parse(r) if isinstance(r, str) else r: name for r, name in roles.items()}
        return roles

    @field_validator("assassin", mode="before")
    @classmethod
    def _assassin_name(cls, role: Any) -> Any:
        return Role.parse(role) if isinstance(role, str) else role

    @field_validator("rules")
    @classmethod
    def _preset(cls, rules: str) -> str:
        if rules not in PRESETS:
            raise ValueError(f"unknown rules preset {rules!r} (known: {', '.join(PRESETS)})"
                             f"{did_you_mean(rules, PRESETS)}")
        return rules

    @property
    def role_set(self) -> tuple[Role, ...] | None:
        """The config's own role set (`roles:` as a list); None: the preset's."""
        return tuple(self.roles) if isinstance(self.roles, list) else None

    def game_rules(self) -> RuleSet:
        """The rules every game is played by: the preset, its players, the role set, the holder, the Lady."""
        return make_rules(self.rules, self.players, self.role_set, self.assassin, self.lady_of_the_lake)


class PairedStudy(Table):
    """What the studies of paired games (`avalon redteam`, `avalon bias`) share: the table (`Table`), the models,
    the seeds and the health limits."""

    model: ModelSettings | None = None
    extractor: ExtractorSpec = Field(default_factory=ExtractorSpec)
    plugins: list[str] = Field(default_factory=list)
    seed: Seed = 0
    health: HealthLimits = Field(default_factory=HealthLimits)

    @model_validator(mode="after")
    def _table(self) -> PairedStudy:
        self.game_rules()  # a role set, assassin or Lady the rules refuse: one line naming the field
        return self

class Concurrency(Strict):
    games: int = Field(1, ge=1, le=256, description="games (series) played at once")
    llm_calls: int | None = Field(None, ge=1, le=1024, description="LLM calls in flight at once per model "
                                  "(default: 4 per game in flight, at least 16, so neither a game's 6-seat steps nor "
                                  "the games in flight wait for a slot; the embedded model's server queues the rest)")

    @model_validator(mode="after")
    def _scaled(self) -> Concurrency:
        if self.llm_calls is None:
            self.llm_calls = max(16, 4 * self.games)
        return self


class OrderSpec(Strict):
    """Which listing orders of the host's wording are drawn from each game's seed (avalon_agents/orders.py)."""

    players: Mode = Field("fixed", description="seats in prose (other players, night information, teams, votes, "
                          "roles at the end): fixed by seat number, shuffled per game, or reversed")
    options: Mode = Field("fixed", description="the answers a request offers (approve/reject, success/fail, the "
                          "seats to choose from) in instructions and JSON-schema enums")
    speeches: Mode = Field("fixed", description="a proposal's speeches as the summary module lists them (the "
                           "speaking order itself is a rule and stays)")

    def modes(self) -> dict[str, Mode]:
        return self.model_dump()

    @property
    def fixed(self) -> bool:
        return all(m == "fixed" for m in self.modes().values())


class Experiment(Table):
    """One variant, fully resolved: everything a runner needs (its table: `Table`)."""

    model: ModelSettings | None = None
    extractor: ExtractorSpec = Field(default_factory=ExtractorSpec)
    plugins: list[str] = Field(default_factory=list, description="the user's code to import before agents are "
                               "built: file paths (relative to the config file) or module names")
    agents: dict[Name, AgentSpec]
    sides: dict[Team, str] | None = None
    roles: list[Role] | dict[Role, str] | None = Field(None, description="a list: the role set (players: as many; "
                                                       "seated by sides or lineup); a mapping: the agent of each "
                                                       "of the preset's roles (seating by role)")
    lineup: dict[str, Count] | None = None
    rotation: list[str] | None = Field(None, exclude_if=lambda v: v is None, description="a tournament's "
                                       "entrants: blocks of len(rotation) games sharing one deal, every entrant "
                                       "in every role once per block (experiments/tournament.py)")
    series: int = Field(1, ge=1, le=10_000)
    games_per_series: int = Field(1, ge=1, le=100_000)
    learn_after_last: bool = Field(False, description="learn from experience after a series' last game too (off:"
                                                      " no later game reads it, and it costs the cognitive agent "
                                                      "about three LLM calls per seat)")
    seed: Seed = 0
    schedule: Literal["balanced", "roles", "random"] = Field("balanced", description="lineup seating: "
                                                             "balanced (blocks of `players` games on one deal, "
                                                             "every agent in every seat, role and first-round "
                                                             "speaking position once per block), roles (a new "
                                                             "deal every game, agents rotating through the "
                                                             "roles), random (shuffled from each game's seed)")
    order: OrderSpec = Field(default_factory=OrderSpec, exclude_if=lambda v: v.fixed,
                             description="listing orders shuffled per game from its seed (default: all fixed)")
    concurrency: Concurrency = Field(default_factory=Concurrency)
    paper: dict[str, float] | None = Field(None, description="the paper's figures for this variant, shown "
                                                             "beside ours (e.g. {good_win_rate: 0.9})")
    probes: bool = Field(False, description="belief probes: after each quest every LLM seat is asked privately "
                                            "who is Merlin and who is evil (trace records of type 'probe')")
    watchdog_s: float | None = Field(1800, gt=0, description="seconds a game step (a batch of requests, a round's "
                                     "preparation, the learning at game end) may take before the game is aborted "
                                     "(not counted, replayed on resume); null: no limit")
    health: HealthLimits = Field(default_factory=HealthLimits, description="above these shares of failed calls "
                                 "or fallbacks a variant is not a result: marked, and the run exits 3")
    prices: dict[str, Price] | None = Field(None, description="USD per 1M tokens of a model, laid over the "
                                            "shipped table (avalon_agents/data/prices.yaml): {MODEL: {input: ..., "
                                            "output: ..., cached_input: ...}}")

    @property
    def role_seating(self) -> dict[Role, str] | None:
        """The agent of each role (`roles:` as a mapping); None: seated by sides or lineup."""
        return self.roles if isinstance(self.roles, dict) else None

    @model_validator(mode="after")
    def _seating(self) -> Experiment:
        if not self.agents:
            raise ValueError("agents: name at least one agent")
        rules = self.game_rules()
        ways = [w for w in ("sides", "roles", "lineup", "rotation") if (self.role_seating if w == "roles" else
                                                                         getattr(self, w)) is not None]
        if not ways:
            raise ValueError("sides: say who plays which side (sides, roles or lineup)")
        for alone in ("lineup", "rotation"):
            if alone in ways and len(ways) > 1:
                raise ValueError(f"{alone}: use {alone} alone, not with {', '.join(w for w in ways if w != alone)}")
        if self.rotation is not None:
            if len(self.rotation) < 2 or len(set(self.rotation)) < len(self.rotation):
                raise ValueError("rotation: at least two agents, each named once")
            if self.games_per_series % len(self.rotation):
                raise ValueError(f"games_per_series: whole blocks of {len(self.rotation)} games (one per entrant)")
            if self.games_per_series // len(self.rotation) > SERIES_STRIDE:
                raise ValueError(f"games_per_series: at most {SERIES_STRIDE} blocks per series")
        for way in ways:
            for key, name in (getattr(self, way).items() if way not in ("lineup", "rotation") else
                              ((k, k) for k in getattr(self, way))):
                if name not in self.agents:
                    raise ValueError(f"{way}.{getattr(key, 'value', key)}: no agent named {name!r} "
                                     f"(agents: {', '.join(self.agents)})")
        if self.lineup is not None and sum(self.lineup.values()) != self.players:
            raise ValueError(f"lineup: {sum(self.lineup.values())} seats for a {self.players}-player game")
        if self.sides is None and self.role_seating is not None:
            missing = sorted({r.value for r in rules.roles} - {r.value for r in self.role_seating})
            if missing:
                raise ValueError(f"roles: no agent for {', '.join(missing)} (or give sides)")
        elif self.sides is not None and len(self.sides) < 2 and self.role_seating is None:
            raise ValueError("sides: give an agent for both good and evil")
        return self

    @model_validator(mode="after")
    def _specs(self) -> Experiment:
        """Every model spec the config names is well formed (keys and servers are checked when the run starts)."""
        for where, settings in self.model_settings():
            if settings.spec is not None:
                try:
                    check_spec(settings.spec)
                except ValueError as exc:
                    raise ValueError(f"{where}.spec: {str(exc).removeprefix('model: ')}") from None
        return self

    def model_settings(self) -> list[tuple[str, ModelSettings]]:
        """(where, settings) of every model settings the config gives: the run's, each agent's and module's, the
        extractor's."""
        found = [("model", self.model)] if self.model else []
        found.append(("extractor.model", self.extractor.model))
        for name, agent in self.agents.items():
            if agent.model is not None:
                found.append((f"agents.{name}.model", agent.model))
            for slot in (agent.modules.enabled() if agent.modules else ()):
                module = agent.modules.settings(slot).model
                if module is not None:
                    found.append((f"agents.{name}.modules.{slot}.model", module))
        return found

    def used_settings(self, override: ModelSettings | None = None) -> list[ModelSettings]:
        """The complete settings of every model its games call (each LLM agent's, its modules' and its
        extractor's, `override` laid over each), once each."""
        found: dict[str, ModelSettings] = {}
        for agent in self.agents.values():
            if not needs_llm(agent.kind):
                continue
            base = agent.settings(self.model)
            wanted = [base, extractor_settings(self.extractor.model, base)]
            if agent.modules is not None:
                wanted += [agent.modules.model_for(slot, base) for slot in agent.modules.enabled()]
            for settings in wanted:
                if settings is not None:
                    settings = (override.over(settings) if override is not None else settings).complete()
                    found.setdefault(settings.key(), settings)
        return list(found.values())

    def check_keys(self, override: ModelSettings | None = None) -> None:
        """Raise ModelSpecError (one line) if a model its games call needs a key the environment lacks: checked
        before anything heavy (a provider's package, the scheduler) is imported."""
        for settings in self.used_settings(override):
            key_of(settings)

    @property
    def games(self) -> int:
        return self.series * self.games_per_series

    def agent_for_role(self, role: Role) -> str:
        if self.role_seating and role in self.role_seating:
            return self.role_seating[role]
        return self.sides[role.side]


class ExperimentFile(Strict):
    """A config file: the base experiment plus variants (or a grid of toggles)."""

    base: dict[str, Any]
    variants: dict[Name, dict[str, Any]] | None = None
    grid: dict[str, Annotated[list[Any], Field(min_length=1)]] | None = None

    def expand(self) -> dict[str, dict[str, Any]]:
        """Variant name -> raw config (base merged with the variant's overrides)."""
        if self.variants and self.grid:
            raise ValueError("grid: give variants or a grid, not both")
        if self.grid:
            keys = list(self.grid)
            out = {}
            for values in itertools.product(*self.grid.values()):
                parts = [f"{k.split('.')[-2] if k.endswith('.enabled') else k.split('.')[-1]}-{_part(v)}"
                         for k, v in zip(keys, values)]
                overrides: dict[str, Any] = {}
                for key, value in zip(keys, values):
                    _set(overrides, key.split("."), value)
                name = "_".join(parts)
                try:
                    check_name(name)
                except ValueError as exc:
                    raise ValueError(f"grid: {exc}") from None
                if name in out:
                    raise ValueError(f"grid: two variants would be named {name!r} (a folder each); give them as "
                                     "variants")
                out[name] = merge(self.base, overrides)
            return out
        return {name: merge(self.base, over or {}) for name, over in (self.variants or {"main": {}}).items()}


def _part(value: Any) -> str:
    """A grid value in its variant's name (a folder name): any character a name may not hold becomes `-`."""
    return re.sub(r"\.{2,}", ".", re.sub(r"[^a-z0-9_.-]+", "-", str(value).lower())).strip("-") or "-"


def _set(target: dict, path: list[str], value: Any) -> None:
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value


def merge(base: Any, over: Any) -> Any:
    """`over` merged into `base` (dicts recursively; anything else replaced)."""
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: merge(base[k], v) if k in base else v for k, v in over.items()}}
    return over


def read_config(path: str | Path) -> tuple[dict[str, Any], yaml.Node | None]:
    """A config file's mapping and its YAML node (for line numbers), after importing its plugins (the config may
    name their kinds). Raises ValueError naming the file and the line."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not text (UTF-8)") from None
    raw, node = parse_yaml(text, str(path))
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: the file must be a mapping of settings")
    plugins = raw.get("plugins") or []
    if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
        raise ValueError(f"{path}:{line_of(node, ('plugins',))}: plugins: a list of file paths or module names")
    load_plugins(plugins, base=path.parent)
    return raw, node


COMMAND_KEYS: Registry[tuple[str, ...]] = Registry("study command", [
    ("run", ("variants", "sides", "roles", "lineup", "grid", "games_per_series", "agents")),
    ("tournament", ("entrants", "blocks")),
    ("redteam", ("defended", "attacker", "attacks", "attack_files")),
    ("bias", ("lists", "treatment", "seats")),
], follows="study")
"""Per study command, the keys only its configs have (`agents` is the experiment's, but a bias study names agents
too): each study type's `config_keys` (experiments/study.py); `register_study` adds a plugin's."""


def _keys_of(raw: dict[str, Any], command: str) -> list[str]:
    """The keys of `raw` only `command`'s configs have."""
    return [k for k in COMMAND_KEYS[command] if k in raw and k != "agents"]


def command_line(command: str, path: str | Path) -> str:
    """The command line that plays a config of study `command`: `avalon COMMAND CONFIG` for a built-in study,
    `avalon study COMMAND CONFIG` for a plugin's (the generic command of every registered study)."""
    return f"avalon {command} {path}" if COMMAND_KEYS.is_builtin(command) else f"avalon study {command} {path}"


def check_command(raw: dict[str, Any], path: Path, command: str) -> None:
    """Refuse a config written for another command, naming the command it is for and the line that plays it."""
    own = _keys_of(raw, command)
    for other in COMMAND_KEYS:
        theirs = _keys_of(raw, other)
        if other != command and theirs and not own:
            raise ValueError(f"{path}: an `avalon {other}` config (it has `{theirs[0]}`), not one for `avalon "
                             f"{command}`: run `{command_line(other, path)}`")


def command_of(path: str | Path) -> str | None:
    """The study command that plays the YAML file at `path` (by the keys only its configs have; `run` for one
    with agents), or None if it is no study config (no such file, not YAML, an agent config)."""
    path = Path(path)
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        return None
    try:
        raw = parse_yaml(path.read_text(), str(path))[0]
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    return next((c for c in COMMAND_KEYS if _keys_of(raw, c)), "run" if "agents" in raw else None)


class Misplaced(ValueError):
    """A config error at `loc` (a path in the file, for its line)."""

    def __init__(self, message: str, loc: tuple) -> None:
        super().__init__(message)
        self.loc = loc


def check_keys(raw: dict[str, Any], path: Path, node: yaml.Node | None, known: list[str],
               refused_later: Iterable[str] = ()) -> None:
    """Refuse a top key of a config file that none of `known` is, on its line, naming the near spelling (the keys a
    file has beside its model's fields: a run's variants and grid, a tournament's entrants and blocks); the keys
    `refused_later` are left to the loader's own message."""
    for key in raw:
        if key not in known and key not in refused_later:
            raise ValueError(f"{path}:{line_of(node, (key,))}: {key}: unknown key{did_you_mean(key, known)}")


def check_variant_agents(spec: ExperimentFile) -> None:
    """Refuse a variant (or a grid key) that changes an agent the base does not have: it would be a new agent
    without a kind. Adding one takes its `kind`."""
    agents = spec.base.get("agents")
    if not isinstance(agents, dict):
        return

    def known(name: str) -> str:
        near_name = near(name, agents)
        return f"(agents: {', '.join(map(str, agents))}{f'; did you mean {near_name}?' if near_name else ''})"

    for name, over in (spec.variants or {}).items():
        for agent, given in ((over or {}).get("agents") or {}).items() if isinstance(over, dict) else ():
            if agent not in agents and not (isinstance(given, dict) and "kind" in given):
                raise ValueError(f"variants.{name}.agents.{agent}: no agent named {agent!r} in the base "
                                 f"{known(agent)}: a variant changes the base's agents, or adds one with its kind")
    for key in spec.grid or {}:
        parts = key.split(".")
        if parts[0] == "agents" and len(parts) > 1 and parts[1] not in agents:
            raise Misplaced(f"grid: {key}: no agent named {parts[1]!r} in the base {known(parts[1])}", ("grid", key))


def load_experiments(path: str | Path) -> dict[str, Experiment]:
    """Variant name -> Experiment. Raises ValueError naming the file, the line and the field."""
    path = Path(path)
    raw, node = read_config(path)
    check_command(raw, path, "run")
    check_keys(raw, path, node, [*Experiment.model_fields, "variants", "grid"])
    base = {k: v for k, v in raw.items() if k not in ("variants", "grid")}
    try:
        spec = ExperimentFile(base=base, variants=raw.get("variants"), grid=raw.get("grid"))
        check_variant_agents(spec)
        variants = spec.expand()
    except (ValidationError, ValueError) as exc:
        raise config_error(exc, path, node) from None
    out = {}
    for name, config in variants.items():
        try:
            out[name] = Experiment.model_validate(config)
        except ValidationError as exc:
            own = (((("variants", name), ()),) if spec.variants else  # the variant's own entry before the base's
                   tuple((("grid", key), tuple(key.split("."))) for key in spec.grid or ()))
            raise config_error(exc, path, node, variant=name if len(variants) > 1 else None,
                               roots=own + BASE) from None
    return out
