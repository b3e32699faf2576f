"""The module protocol: small classes with no-op hooks that each fill one typed slot of a seat's context.

A `CognitiveAgent` holds one `Mind` per game (what the seat knows: rules, role, memory, strategy, what it
learned in earlier games) and `Slots` (summary, analysis, plan, action, response). It runs its enabled
modules in a fixed order; a disabled module leaves its slot empty and prompts that read the slot leave that
section out. Modules are registered by name, so a subclass under a new name can be chosen in YAML.

Hooks (all optional):
    observe(mind, entries)   new memory entries arrived (cheap: never an LLM call)
    run(turn)                do this module's work for a turn, filling `turn.slots.<slot>`
    game_end(turn, result)   the game is over (experience learning); `turn.request` is None
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from avalon_agents.core.actions import Action, ActionRequest
from avalon_agents.core.events import GameResult
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role, Seat, Team
from avalon_agents.llm.health import LLMCallFailed
from avalon_agents.modules.memory import Entry, Memory
from avalon_agents.narrate import DEFAULT_CARDS, role_card, system_prompt
from avalon_agents.prices import Cost
from avalon_agents.profiles import Profile
from avalon_agents.profiles import profile as profile_named
from avalon_agents.prompting import template
from avalon_agents.records.trace import Purpose
from avalon_agents.registry import Registry
from avalon_agents.stores.book import Experience

if TYPE_CHECKING:
    from avalon_agents.llm.client import LLMClient

Timing = Literal["round", "turn"]
"""When a module runs: once when the round (quest) changes, or at every request the seat answers (not the
game's `core.types.Phase`)."""


@dataclass
class Mind:
    """What one seat knows in one game. Modules read it; memory grows by observing."""

    seat: Seat
    rules: RuleSet | None = None
    role: Role | None = None
    memory: Memory = field(init=False)
    experience: Experience = field(default_factory=Experience)
    cards: str = DEFAULT_CARDS  # the set of role cards (prompts/cards/)
    profile: Profile = field(default_factory=lambda: profile_named(None))  # its model's (avalon_agents.profiles)
    layout: str = "cache"  # how its prompts are laid out (narrate.LAYOUTS: cache, paper)
    prompt: str = ""  # the last prompt a module sent (the speech guard reads a speech against it)
    stable: str = ""
    """The stable start of the last context rendered in the `cache` layout (`modules.sections.game_so_far`): the
    next prompt marks it for a provider that caches only where told (llm.stable)."""
    steps: str = ""
    """The standing instructions of the seat's steps, said once at the end of its system message (the `cache`
    layout with a profile that keeps them there: modules.sections.standing); "": each prompt carries its whole
    task."""
    summarized: int = 0  # rounds 1..summarized are folded into the summary
    round: int = 0  # the round the round-phase modules last ran for

    def __post_init__(self) -> None:
        self.memory = Memory(self.seat)

    @property
    def card(self) -> dict[str, str]:
        return role_card(self.role, self.cards)

    @property
    def strategy(self) -> str:
        return self.experience.strategy or self.card["strategy"]

    @property
    def current_round(self) -> int:
        return max((e.quest for e in self.memory.entries), default=1)

    def system(self) -> str:
        system = system_prompt(self.rules, self.seat, self.role, strategy=self.strategy, cards=self.cards,
                               rules_text=self.profile.rules)
        return system + "\n\n" + self.steps if self.steps else system

    def known_evil(self) -> set[Seat]:
        """Seats this seat knows to be evil (its evil teammates, or Merlin's sight)."""
        seen = self.memory.night_seats
        return set(seen.get("evil", ())) | set(seen.get("evil_teammates", ()))

    def teammates(self) -> list[Seat]:
        """Players this seat believes are on its side, from what it knows."""
        others = [s for s in self.rules.seats if s != self.seat]
        evil = self.known_evil()
        if self.role.side is Team.EVIL:
            return [s for s in others if s in evil]
        return [s for s in others if s not in evil]

    def adversaries(self) -> list[Seat]:
        """Players who may be against this seat: the known evil for Merlin, else everyone not known friendly."""
        others = [s for s in self.rules.seats if s != self.seat]
        evil = self.known_evil()
        if self.role.side is Team.EVIL:
            return [s for s in others if s not in evil]
        return [s for s in others if s in evil] or others


@dataclass(frozen=True)
class Slot:
    """A slot of the per-turn context: its name (a config key, `turn.slots.<name>`), the title its text goes under
    in every later module's prompt (`section`; None: it reaches no prompt, as the response and experience do),
    whether it belongs to one turn (cleared before each request) and whether its section comes after the recent
    history (`late`: it changes within a round, so a server's prompt cache keeps what comes before it)."""

    name: str
    section: str | None
    per_turn: bool = False
    late: bool = True
    summarizes: bool = False
    """Its text stands for the rounds it folded in (`Mind.summarized`): prompts then show only the later rounds'
    entries, and experience learning reads it as the game's log (the summary)."""


def _check_slot(name: str, slot: Slot) -> None:
    if name in ("model", "temperature") or not name.isidentifier():
        raise ValueError(f"slot: {name!r} cannot be a slot's name")
    if not isinstance(slot, Slot) or slot.name != name:
        raise ValueError(f"slot {name}: register it with register_slot({name!r}, before=...)")


SLOTS: Registry[Slot] = Registry("slot", [(s.name, s) for s in (
    Slot("summary", "Summary of the earlier rounds", late=False, summarizes=True),
    Slot("analysis", "Your analysis of the other players", late=False),
    Slot("plan", "Your current plan", late=False),
    Slot("action", "The action you chose (private, only you know it)", per_turn=True),
    Slot("response", None, per_turn=True),
    Slot("experience", None),
)], check=_check_slot)
"""Every slot, in the order its module runs; the agent config's keys are these names. A new slot is added with
`register_slot` (and its default module registered under the slot's name); its text reaches every later
module's prompt under its own section (modules/sections.py reads this registry)."""


def register_slot(name: str, *, before: str = "action", section: str | None = None, per_turn: bool = False) -> None:
    """Add a slot (in YAML: a key of the cognitive agent's config; in code: `turn.slots.<name>`), run before the
    slot `before`. Its text reaches the prompt of every module that runs after it, under `section` (default: the
    slot's name, "mood" -> "Mood"); `per_turn`: it belongs to one request and is cleared before the next.
    Register its default module under the same name (`@register_module(name)`)."""
    if name in SLOTS:
        return
    title = section or name.replace("_", " ").capitalize()
    SLOTS.register(name, Slot(name, title, per_turn=per_turn), before=before)


class Slots:
    """The typed slots modules fill (text, or None when the module is off or wrote nothing). summary, analysis
    and plan carry over between turns; action and response belong to one turn; experience is the text of what
    the seat learned at game end. A slot added with `register_slot` is an attribute likewise."""

    summary: str | None
    analysis: str | None
    plan: str | None
    action: str | None
    response: str | None
    experience: str | None

    def __init__(self, **texts: str | None) -> None:
        unknown = set(texts) - set(SLOTS)
        if unknown:
            raise TypeError(f"Slots: no slot {sorted(unknown)[0]!r}")
        for slot in SLOTS:
            setattr(self, slot, texts.get(slot))

    def summaries(self) -> str | None:
        """The text of the slots that summarize the earlier rounds (`Slot.summarizes`), None if they are empty."""
        texts = [getattr(self, name, None) for name, slot in SLOTS.items() if slot.summarizes]
        return "\n".join(t for t in texts if t) or None

    def clear_turn(self) -> None:
        """Empty the slots that belong to one request (`Slot.per_turn`: the action and the response)."""
        for name, slot in SLOTS.items():
            if slot.per_turn:
                setattr(self, name, None)

    def texts(self) -> dict[str, str | None]:
        """Every slot's text, in the slots' order."""
        return {slot: getattr(self, slot, None) for slot in SLOTS}

    def __repr__(self) -> str:
        return "Slots(" + ", ".join(f"{k}={v!r}" for k, v in self.texts().items()) + ")"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Slots) and self.texts() == other.texts()


@dataclass(frozen=True)
class Expected:
    """A module's LLM calls and tokens per game of six seats (`avalon bench cost --games 5`, 6 players, official
    rules, the scripted model), in the two pipelines `avalon run --check` prices: analysis and plan once per
    round (`per_round`), or either of them before every answer (`per_turn`)."""

    per_round: Cost
    per_turn: Cost

    def of(self, per_turn: bool) -> Cost:
        return self.per_turn if per_turn else self.per_round


@dataclass
class Turn:
    """One moment of work for the modules: a request to answer, or (request None) a new round."""

    mind: Mind
    slots: Slots
    request: ActionRequest | None = None
    instruction: str = ""
    decision_schema: dict[str, Any] | None = None  # constrained output for the response, where supported
    decision: Action | None = None
    """The action a constrained JSON answer named, decoded once by the module that wrote the response."""

    @property
    def quest(self) -> int:
        return self.request.quest if self.request else self.mind.current_round

    @property
    def attempt(self) -> int:
        return self.request.attempt if self.request else 0


class Module:
    """Base class: every hook is a no-op. Subclasses set `name`, `slot`, and `Options` if they take any.

    Args:
        llm: the client for this module's model calls (None for modules that call no model).
        options: validated `Options`.
        tracer: where module output records go (the game's trace).
    """

    name: ClassVar[str] = ""
    slot: ClassVar[str] = ""
    prompt: ClassVar[str | None] = None  # template id under prompts/
    standing: ClassVar[str | None] = None
    """Its step's standing instruction (a template id, prompts/modules/standing/): in the `cache` layout the seat's
    system message says it once (`Mind.steps`) and each of its prompts ends with a short line naming the step
    (`task_prompt`: prompts/modules/steps/). None: its prompts carry their whole task, as a plugin module's do
    unless it declares one."""
    expected: ClassVar[Expected | None] = None
    """Its calls and tokens per game (what `avalon run --check` counts); None: not declared, counted as none
    (and --check says so). A module that calls no model declares `Expected(Cost(), Cost())`."""

    @classmethod
    def expected_with(cls, options: dict[str, Any]) -> Expected | None:
        """Its calls and tokens per game with these options (a module whose options switch calls off says how
        many remain; by default the options change nothing)."""
        del options
        return cls.expected

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")

    def __init__(self, *, llm: LLMClient | None = None, options: BaseModel | None = None) -> None:
        self.llm = llm
        self.options = options if options is not None else self.Options()

    def standing_text(self) -> str | None:
        """Its step's standing instruction as the system message says it (None: it declares none)."""
        return template(self.standing).render() if self.standing else None

    def task_prompt(self, mind: Mind, name: str, full: str | None = None) -> str:
        """The template of this call's task: the short line naming the step (prompts/modules/steps/`name`) when
        the seat's system message holds the steps' standing instructions, else `full` (default: `prompt`). (The
        response's step line is whole: it answers alone only when a combined action wrote nothing.)"""
        return f"modules/steps/{name}" if mind.steps else (full or self.prompt or "")

    @property
    def phase(self) -> Timing:
        """Modules with a `cadence` option run once per round when it says so; the rest at every request."""
        return "round" if getattr(self.options, "cadence", None) == "per_round" else "turn"

    async def observe(self, mind: Mind, entries: Sequence[Entry]) -> None:
        return None

    async def run(self, turn: Turn) -> None:
        return None

    async def game_end(self, turn: Turn, result: GameResult) -> None:
        return None

    # ------------------------------------------------------------ helpers for LLM modules

    async def ask(self, mind: Mind, text: str, *, name: str | None = None, part: str | None = None,
                  request: ActionRequest | None = None, quest: int = 0, attempt: int = 0,
                  schema: dict[str, Any] | None = None, prompt: str | None = None) -> str | None:
        """One call with the seat's system prompt and `text`; None if the call failed (it is in the trace).
        The call is recorded as this module's (or `name`'s), with its `part` and the request it serves."""
        if self.llm is None:
            return None
        from langchain_core.messages import SystemMessage

        from avalon_agents.llm.stable import stable_message

        template_id = prompt or self.prompt
        found = template(template_id) if template_id else None
        system = mind.system()
        mind.prompt = system + "\n\n" + text
        try:
            return await self.llm.call(
                [SystemMessage(system), stable_message(text, mind.stable)],
                purpose=Purpose(stage="module", name=name or self.name, part=part,
                                request=request.kind.value if request else None),
                prompt_id=found.id if found else self.name,
                prompt_hash=found.hash if found else "",
                seat=mind.seat,
                schema=schema,
                quest=quest,
                attempt=attempt,
            )
        except LLMCallFailed:
            return None


MODULES: Registry[type[Module]] = Registry("module")
"""Every module class by name (and alias); a slot's default module is the one registered under the slot's name."""


def register_module(name: str, *aliases: str) -> Callable[[type[Module]], type[Module]]:
    """Class decorator: make a module available by `name` (in YAML: `use: name`), and by any `aliases`. A plugin
    never replaces a built-in module's name (plugins.NameTaken)."""

    def register(cls: type[Module]) -> type[Module]:
        MODULES.register_names((name, *aliases), cls)
        cls.name = name
        return cls

    return register
