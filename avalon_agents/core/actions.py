"""Actions (a discriminated union on `kind`) and the ActionRequest that asks for one."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal, Union

from pydantic import Field, TypeAdapter

from avalon_agents.core.types import Seat


class IllegalAction(ValueError):
    """An action that the rules do not allow. The message names the rule."""


class RequestKind(str, Enum):
    SPEAK = "speak"
    PROPOSE = "propose"
    VOTE = "vote"
    QUEST = "quest"
    ASSASSINATE = "assassinate"
    LADY = "lady"


def DATA(cls: type) -> type:
    """A frozen, slotted, keyword-only dataclass.

    Actions, requests and events are these rather than pydantic models: a game makes hundreds of them and
    they are built several times faster (pydantic TypeAdapters (de)serialize them).
    """
    return dataclass(frozen=True, slots=True, kw_only=True)(cls)


@DATA
class Speak:
    kind: Literal["speak"] = "speak"
    text: str


@DATA
class ProposeTeam:
    kind: Literal["propose"] = "propose"
    team: tuple[Seat, ...]


@DATA
class Vote:
    kind: Literal["vote"] = "vote"
    approve: bool


@DATA
class QuestCard:
    kind: Literal["quest"] = "quest"
    success: bool


@DATA
class Assassinate:
    kind: Literal["assassinate"] = "assassinate"
    target: Seat | None
    """None holds off (only where the rules let the Assassin pass)."""


@DATA
class Examine:
    """The Lady of the Lake's holder names a player whose loyalty it learns (the token passes to them)."""

    kind: Literal["lady"] = "lady"
    target: Seat


Action = Annotated[Union[Speak, ProposeTeam, Vote, QuestCard, Assassinate, Examine], Field(discriminator="kind")]
ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)


@DATA
class ActionRequest:
    """What the engine needs from one seat now.

    Attributes:
        seat: who must answer.
        kind: what sort of action is expected.
        quest: quest number (1-5); attempt: proposal number within the quest (1-5).
        options: seats that may be named (team members, assassination targets, or the players the Lady of the
            Lake may examine: those who never held it).
        team_size: how many seats a proposal must name.
        team: the team being discussed, voted on, or sent on the quest.
        leader: the current leader.
        may_pass: the Assassin may hold off (paper rules).
        can_fail: this seat may play a fail card.
        final: this is the last proposal of the quest (a rejection has consequences).
    """

    seat: Seat
    kind: RequestKind
    quest: int
    attempt: int
    options: tuple[Seat, ...] = ()
    team_size: int | None = None
    team: tuple[Seat, ...] = ()
    leader: Seat | None = None
    may_pass: bool = False
    can_fail: bool = False
    final: bool = False

    def validate(self, action: Action) -> Action:
        """Return the action if it answers this request legally; raise IllegalAction naming the rule (or the
        field whose value has the wrong type: `Vote(approve="no")` is no approval)."""
        fields = TYPES.get(type(action))
        if fields is None:
            raise IllegalAction(f"action: {type(action).__name__} is not an action")
        for name, check in fields:
            if not check(getattr(action, name)):
                raise IllegalAction(f"{action.kind}.{name}: {getattr(action, name)!r} has the wrong type")
        if action.kind != self.kind:  # a str enum: equal to its value
            raise IllegalAction(f"request kind: seat {self.seat} was asked to {self.kind.value}, not to {action.kind}")
        if isinstance(action, ProposeTeam):
            if len(action.team) != self.team_size:
                raise IllegalAction(
                    f"team size: quest {self.quest} needs exactly {self.team_size} players, got {len(action.team)}"
                )
            if len(set(action.team)) != len(action.team):
                raise IllegalAction(f"distinct members: team {list(action.team)} names a player twice")
            unknown = [s for s in action.team if s not in self.options]
            if unknown:
                raise IllegalAction(f"team members: {unknown} are not seats in this game")
        elif isinstance(action, QuestCard):
            if not action.success and not self.can_fail:
                raise IllegalAction(f"good cannot fail: seat {self.seat} may only play a success card")
        elif isinstance(action, Assassinate):
            if action.target is None and not self.may_pass:
                raise IllegalAction("assassination: the Assassin must name a player now")
            if action.target is not None and action.target not in self.options:
                raise IllegalAction(f"assassination target: seat {action.target} cannot be named")
        elif isinstance(action, Examine) and action.target not in self.options:
            raise IllegalAction(f"lady of the lake: seat {action.target} cannot be examined (name a player who "
                                f"has never held the Lady: {list(self.options)})")
        return action


REQUEST_ADAPTER: TypeAdapter[ActionRequest] = TypeAdapter(ActionRequest)


def _is_seat(value: object) -> bool:
    return type(value) is int


def _is_text(value: object) -> bool:
    """A string that can be written down: UTF-8 has no lone surrogate (a JSON "\\ud800" reads as one), and a record
    holding one could not be written."""
    if type(value) is not str:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


TYPES: dict[type, tuple[tuple[str, Any], ...]] = {
    Speak: (("text", _is_text),),
    ProposeTeam: (("team", lambda v: type(v) is tuple and all(_is_seat(s) for s in v)),),
    Vote: (("approve", lambda v: type(v) is bool),),
    QuestCard: (("success", lambda v: type(v) is bool),),
    Assassinate: (("target", lambda v: v is None or _is_seat(v)),),
    Examine: (("target", _is_seat),),
}
"""Each action's fields and the check of their type (exact: a bool is no seat, a string no vote)."""


@DATA
class Reply:
    """An agent's answer to a request: the text the host receives and, if the agent knows it, the typed
    action. A rule bot returns both (`source` "typed"); an LLM agent returns text, and with constrained
    output also the action its JSON answer names (`source` "json"); a human seat returns its line and the action
    the rule parse read from it (`source` "rule"), so the extractor records how it was read. An LLM seat also
    says what prompt the answer was written to and its profile's name (avalon_agents.profiles): the extractor's
    speech guard reads a speech against its prompt.
    """

    text: str = ""
    action: Action | None = None
    source: Literal["typed", "json", "rule"] = "typed"
    prompt: str = ""
    profile: str = ""
