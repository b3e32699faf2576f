"""Game events: one discriminated union on `type`, each carrying seq, quest, attempt and visible_to.

A seat may see an event only if `visible_to` is "all" or contains the seat. Simultaneous choices (votes,
quest cards) appear only once everyone has chosen; quest cards reach the public only as counts, and each
seat's own card is a private `QuestCardPlayed` record.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from avalon_agents.core.actions import DATA
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import EndReason, Role, Seat, Team

Visibility = Union[Literal["all"], tuple[Seat, ...]]


@DATA
class _Event:
    seq: int
    quest: int
    attempt: int
    visible_to: Visibility = "all"

    def visible(self, seat: Seat) -> bool:
        """True if `seat` may see this event."""
        return self.visible_to == "all" or seat in self.visible_to

    def to_json(self) -> str:
        """One JSON line, as in events.jsonl."""
        return EVENT_ADAPTER.dump_json(self).decode()


@DATA
class GameStarted(_Event):
    type: Literal["game_started"] = "game_started"
    rules: RuleSet


@DATA
class RoleAssigned(_Event):
    type: Literal["role_assigned"] = "role_assigned"
    seat: Seat
    role: Role


@DATA
class NightInfoRevealed(_Event):
    """What a role card lets a seat see at night. `seats` is sorted: order carries no information.

    Every seat gets exactly one, in seat order, so its number and its existence say nothing about the deal.
    `known_as`: "evil" (Merlin: evil seats, not which is which), "merlin_or_morgana" (Percival),
    "evil_teammates" (evil roles other than Oberon: each other, not which is which), "nothing" (Loyal
    Servants, Oberon: `seats` is empty).
    """

    type: Literal["night_info"] = "night_info"
    seat: Seat
    seats: tuple[Seat, ...]
    known_as: Literal["evil", "merlin_or_morgana", "evil_teammates", "nothing"]


@DATA
class LeaderChosen(_Event):
    type: Literal["leader_chosen"] = "leader_chosen"
    leader: Seat
    team_size: int
    fails_required: int
    final: bool
    """This is the last proposal of the quest."""


@DATA
class SpeechGiven(_Event):
    type: Literal["speech"] = "speech"
    seat: Seat
    text: str


@DATA
class TeamProposed(_Event):
    type: Literal["team_proposed"] = "team_proposed"
    leader: Seat
    team: tuple[Seat, ...]
    assigned: bool = False
    """True when the rules send this team without a vote (paper: after the 5th rejection)."""


@DATA
class VoteCast(_Event):
    """A seat's own vote, private to it; emitted only when votes are secret."""

    type: Literal["vote_cast"] = "vote_cast"
    seat: Seat
    approve: bool


@DATA
class VotesRevealed(_Event):
    type: Literal["votes_revealed"] = "votes_revealed"
    team: tuple[Seat, ...]
    approvals: tuple[Seat, ...]
    """Seats that approved (empty when votes are secret; see the counts)."""
    rejections: tuple[Seat, ...]
    approve_count: int
    reject_count: int
    approved: bool


@DATA
class QuestCardPlayed(_Event):
    """A seat's own quest card, private to it (the ground truth for failure-vote rates)."""

    type: Literal["quest_card"] = "quest_card"
    seat: Seat
    success: bool


@DATA
class QuestCompleted(_Event):
    type: Literal["quest_completed"] = "quest_completed"
    team: tuple[Seat, ...]
    fails: int
    success: bool
    good_points: int
    evil_points: int


@DATA
class AssassinationDeclined(_Event):
    type: Literal["assassination_declined"] = "assassination_declined"
    seat: Seat


@DATA
class AssassinationAttempted(_Event):
    type: Literal["assassination"] = "assassination"
    assassin: Seat
    target: Seat
    hit: bool


@DATA
class LadyGiven(_Event):
    """Who holds the Lady of the Lake first (the seat before the first leader), emitted once before the first
    leader is chosen, only when the rules use the Lady. Later holders follow from `lady_examined`."""

    type: Literal["lady_given"] = "lady_given"
    holder: Seat


@DATA
class LadyExamined(_Event):
    """The holder of the Lady of the Lake examined `target`, who now holds it. Public; what the holder learned is
    the private `lady_result` that follows."""

    type: Literal["lady_examined"] = "lady_examined"
    holder: Seat
    target: Seat


@DATA
class LadyRevealed(_Event):
    """What the Lady of the Lake showed its holder: the target's loyalty (its side, never its role); visible to
    the holder alone."""

    type: Literal["lady_result"] = "lady_result"
    holder: Seat
    target: Seat
    loyalty: Team


@DATA
class GameEnded(_Event):
    type: Literal["game_ended"] = "game_ended"
    winner: Team
    reason: EndReason
    roles: dict[Seat, Role]


GameEvent = Annotated[
    Union[
        GameStarted,
        RoleAssigned,
        NightInfoRevealed,
        LeaderChosen,
        SpeechGiven,
        TeamProposed,
        VoteCast,
        VotesRevealed,
        QuestCardPlayed,
        QuestCompleted,
        AssassinationDeclined,
        AssassinationAttempted,
        LadyGiven,
        LadyExamined,
        LadyRevealed,
        GameEnded,
    ],
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[GameEvent] = TypeAdapter(GameEvent)


class QuestOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    quest: int
    team: tuple[Seat, ...]
    fails: int
    success: bool


class GameResult(BaseModel):
    """How a game ended; written as result.json."""

    model_config = ConfigDict(frozen=True)

    winner: Team
    reason: EndReason
    roles: dict[Seat, Role]
    quests: tuple[QuestOutcome, ...]
    proposals: int
    assassination_target: Seat | None = None
    assassin: Seat | None = None
    """The seat that carried the assassination (None: no Merlin, so no assassination)."""
