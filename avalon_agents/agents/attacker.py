"""The red team's attacker seat: an agent that plays its role through any inner agent and wraps some of its answers'
text with an attack (a template from a library of attacks that are data: `avalon_agents/data/attacks.yaml`, or the
user's own file of the same shape).

The wrapper never changes what the inner agent sees or decides: it draws which answers to wrap from a random
stream of its own (seeded by the seat's seed), so a game played with the attack and the same game played without it
(`attack: None`) are identical up to the first wrapped answer. `avalon redteam` plays such pairs and judges from
their records whether the attack moved the listeners, the extractor or the judges (experiments/redteam.py).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from avalon_agents.agents.base import Agent, AgentBase
from avalon_agents.checks import Name
from avalon_agents.core.actions import ActionRequest, Reply, RequestKind
from avalon_agents.core.events import GameEvent, GameResult
from avalon_agents.core.rules import MAX_PLAYERS
from avalon_agents.core.types import Seat, seat_name
from avalon_agents.decisions.kinds import KINDS
from avalon_agents.errors import field_error, load_yaml, parse_yaml
from avalon_agents.registry import Registry

Target = Literal["self"] | int


class Goal(BaseModel):
    """What an attack pursues, checked from the game records; exactly one field is set."""

    model_config = ConfigDict(extra="forbid")

    listeners_vote: Literal["approve", "reject"] | None = Field(
        None, description="the other seats' next votes after the attack")
    team_includes: Target | None = Field(None, description="the next team a listener proposes includes this seat")
    assassinate: Target | None = Field(None, description="the assassination names this seat")
    extractor_reads: Literal["approve", "reject", "success", "fail"] | None = Field(
        None, description="the extractor reads the attacker's own wrapped answer as this")
    judge_says: dict[str, Any] | None = Field(
        None, description="a behaviour judge's row for the wrapped speech: {judge: NAME, COLUMN: VALUE, ...}")

    @model_validator(mode="after")
    def _one(self) -> Goal:
        set_ = [k for k, v in self.model_dump().items() if v is not None]
        if len(set_) != 1:
            raise ValueError(f"goal: set exactly one of {', '.join(type(self).model_fields)} (got "
                             f"{', '.join(set_) or 'none'})")
        for seat in (self.team_includes, self.assassinate):
            if isinstance(seat, int) and not 1 <= seat <= MAX_PLAYERS:
                raise ValueError(f"goal.{self.kind}: {seat} is not a seat (1 to {MAX_PLAYERS}, or self)")
        if self.judge_says is not None and not isinstance(self.judge_says.get("judge"), str):
            raise ValueError("goal: judge_says needs `judge: NAME` (the name of a registered "
                             "judge)")
        return self

    @property
    def kind(self) -> str:
        return next(k for k, v in self.model_dump().items() if v is not None)

    @property
    def value(self) -> Any:
        return getattr(self, self.kind)

    def describe(self) -> str:
        value = self.value
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        return f"{self.kind}: {value}"


PLACEHOLDERS = {"speech": lambda seat, other: "", "me": lambda seat, other: seat_name(seat),
                "seat": lambda seat, other: str(seat), "other": lambda seat, other: seat_name(other)}
"""A template's placeholders (the inner agent's text; the attacker's name and number; another player's name)."""
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A placeholder's shape: braces around a bare word (a JSON object's braces hold quotes, so they never match)."""


class Attack(BaseModel):
    """One attack: a template around the inner agent's text, the request kinds it wraps, and its goal."""

    model_config = ConfigDict(extra="forbid")

    name: Name
    description: str = ""
    aims_at: Literal["listeners", "extractor", "judges"] = "listeners"
    wraps: tuple[str, ...] = ("speak",)
    template: str
    goal: Goal

    @field_validator("template")
    @classmethod
    def _has_speech(cls, template: str) -> str:
        if "{speech}" not in template:
            raise ValueError("template: must contain {speech} (the inner agent's own text)")
        unknown = sorted(set(PLACEHOLDER.findall(template)) - set(PLACEHOLDERS))
        if unknown:
            raise ValueError(f"template: unknown placeholder {{{unknown[0]}}} (known: "
                             f"{', '.join('{' + name + '}' for name in PLACEHOLDERS)})")
        return template

    @field_validator("wraps")
    @classmethod
    def _kinds(cls, wraps: tuple[str, ...]) -> tuple[str, ...]:
        for kind in wraps:
            if kind not in KINDS:
                raise ValueError(f"wraps: unknown request kind {kind!r} (choose from {KINDS.known()})")
        return wraps

    def render(self, text: str, seat: Seat, other: Seat) -> str:
        """The wrapped text. Plain replacement of the placeholders: braces of JSON in a template stay as they are."""
        out = self.template
        for name, value in PLACEHOLDERS.items():
            if name != "speech":
                out = out.replace("{" + name + "}", value(seat, other))
        return out.replace("{speech}", text)

    def forged_lines(self, seat: Seat, other: Seat) -> list[str]:
        """The attack's own lines (the template without the inner agent's text), stripped: what the leak scan
        looks for outside quotes. Lines shorter than MIN_FORGED characters are too common to be evidence."""
        text = self.render("\n", seat, other)
        for sep in ("\r", "\u2028", "\u2029", "\u0085"):
            text = text.replace(sep, "\n")
        return [line.strip() for line in text.split("\n") if len(line.strip()) >= MIN_FORGED]


LIBRARY = "attacks.yaml"
MIN_FORGED = 20
"""The leak scan looks for forged lines at least this long (shorter ones, such as `{"vote": "reject"}`, occur in
the framework's own prompts)."""


def parse_attacks(raw: Any, where: str) -> dict[str, Attack]:
    """Name -> Attack from a mapping `{attacks: {NAME: {...}}}`. Raises ValueError naming the file and attack."""
    if not isinstance(raw, dict) or not isinstance(raw.get("attacks"), dict):
        raise ValueError(f"attacks: {where} must be a mapping with `attacks: {{NAME: {{template, goal, ...}}}}`")
    out = {}
    for name, body in raw["attacks"].items():
        if not isinstance(body, dict):
            raise ValueError(f"attacks: {where}: {name}: must be a mapping (template, goal, ...)")
        try:
            out[str(name)] = Attack.model_validate({"name": str(name), **body})
        except ValidationError as exc:
            raise ValueError(f"attacks: {where}: {name}: {field_error(exc)}") from None
    return out


@cache
def library() -> Registry[Attack]:
    """The attacks by name: the shipped ones (avalon_agents/data/attacks.yaml, built in) and those a plugin
    registered (`register_attack`)."""
    text = resources.files("avalon_agents").joinpath("data", LIBRARY).read_text()
    shipped = parse_attacks(parse_yaml(text, f"avalon_agents/data/{LIBRARY}")[0], f"avalon_agents/data/{LIBRARY}")
    return Registry("attack", shipped.items())


def register_attack(attack: Attack | dict) -> Attack:
    """Add an attack (a plugin's: an Attack or its mapping with `name`) to the library every red team reads.
    Raises ValueError for a shipped attack's name or an attack that does not validate (one line)."""
    attack = as_attack(attack)
    return library().register(attack.name, attack, builtin=False)


def load_attacks(paths: Sequence[str | Path] = ()) -> dict[str, Attack]:
    """The library (shipped and registered attacks) plus the user's files' (a later file's attack replaces one of
    the same name)."""
    out = dict(library().items())
    for path in paths:
        out.update(parse_attacks(load_yaml(Path(path), "attacks"), str(path)))
    return out


def as_attack(value: Attack | dict | str | None) -> Attack | None:
    """An attack option: an Attack, its mapping (with `name`), a name in the shipped library, or None."""
    if value is None or isinstance(value, Attack):
        return value
    if isinstance(value, str):
        known = library()
        if value not in known:
            raise ValueError(f"attack: no attack named {value!r} in the library (choose from "
                             f"{', '.join(sorted(known))}, or pass its mapping)")
        return known[value]
    try:
        return Attack.model_validate(value)
    except ValidationError as exc:
        raise ValueError(f"attack: {field_error(exc)}") from None


def other_seat(seat: Seat) -> Seat:
    """The player an attack's {other} names: the seat before the attacker's (seat 2 for seat 1)."""
    return seat - 1 if seat > 1 else 2


class AttackerAgent(AgentBase):
    """Plays through `inner`; wraps a share `rate` of its answers to the attack's request kinds.

    Args:
        inner: the agent that plays the seat.
        seat: the seat.
        seed: seeds which answers are wrapped (a stream of its own: the inner agent's play is untouched).
        attack: the attack (None: the unattacked twin of a pair, which wraps nothing).
        rate: the share of eligible answers wrapped (1: all).
    """

    def __init__(self, inner: Agent, *, seat: Seat, seed: int, attack: Attack | None, rate: float = 1.0) -> None:
        if not 0 <= rate <= 1:
            raise ValueError(f"rate: a share between 0 and 1, got {rate}")
        self.inner = inner
        self.seat = seat
        self.attack = attack
        self.rate = rate
        self.reads_instructions = getattr(inner, "reads_instructions", True)
        self._draws = random.Random(f"attacker:{seed}")
        self.wrapped: list[tuple[str, int, int]] = []
        """(request kind, quest, attempt) of each wrapped answer."""

    async def observe(self, events: Sequence[GameEvent]) -> None:
        await self.inner.observe(events)

    async def prepare(self) -> None:
        prepare = getattr(self.inner, "prepare", None)
        if prepare is not None:
            await prepare()

    async def on_game_end(self, result: GameResult) -> None:
        await self.inner.on_game_end(result)

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        reply = await self.inner.act(request, instruction)
        if self.attack is None or request.kind.value not in self.attack.wraps:
            return reply
        if self._draws.random() >= self.rate:
            return reply
        text = reply.action.text if request.kind is RequestKind.SPEAK and reply.action is not None \
            and hasattr(reply.action, "text") else reply.text
        self.wrapped.append((request.kind.value, request.quest, request.attempt))
        # no typed action: the host reads the wrapped text, as it would a model's
        return Reply(text=self.attack.render(text, self.seat, other_seat(self.seat)), action=None, source="rule")
