"""Game events: one discriminated union on `type`, each carrying seq, quest, attempt and visible_to.

A seat may see an event only if `visible_to` is "all" or contains the seat. Simultaneous choices (votes,
quest cards) appear only once everyone has chosen; quest cards reach the public only as counts, and each
seat's own card is a private `QuestCardPlayed` record.

Each type declares the rows it gives the analysis tables beside its fields (`rows`, core/rows.py); a type in the
union without is refused at import.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from avalon_agents.core.actions import DATA
from avalon_agents.core.rows import GameRows, Rows, check_declared, no_rows
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import EndReason, Role, Seat, Team

Visibility = Union[Literal["all"], tuple[Seat, ...]]


@DATA
class _Event:
    seq: int
    """The event's number in the game, from 0, one more each event (the events a seat sees skip the others')."""
    quest: int
    """The quest (1-5) under way."""
    attempt: int
    """The proposal (1-5) of the quest under way."""
    visible_to: Visibility = "all"
    """Who may see the event: "all", or the seats that may."""

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
    """The rules the game is played by."""

    rows = no_rows


@DATA
class RoleAssigned(_Event):
    type: Literal["role_assigned"] = "role_assigned"
    seat: Seat
    """The seat dealt the role (private to it)."""
    role: Role
    """The role dealt to it."""

    rows = no_rows


@DATA
class NightInfoRevealed(_Event):
    """What a role card lets a seat see at night. `seats` is sorted: order carries no information.

    Every seat gets exactly one, in seat order, so its number and its existence say nothing about the deal.
    `known_as`: "evil" (Merlin: the evil seats but Mordred's, which is hidden from Merlin; not which is which),
    "merlin_or_morgana" (Percival), "evil_teammates" (evil roles other than Oberon: each other, not which is
    which, Mordred included; Oberon is hidden from them), "nothing" (Loyal Servants, Oberon: `seats` is empty).
    """

    type: Literal["night_info"] = "night_info"
    seat: Seat
    """The seat that sees it (private to it)."""
    seats: tuple[Seat, ...]
    """The seats its role card shows it, sorted."""
    known_as: Literal["evil", "merlin_or_morgana", "evil_teammates", "nothing"]
    """What `seats` are to it."""

    rows = no_rows


@DATA
class LeaderChosen(_Event):
    type: Literal["leader_chosen"] = "leader_chosen"
    leader: Seat
    """The seat that proposes the team of this proposal."""
    team_size: int
    """How many players the quest's team takes."""
    fails_required: int
    """How many fail cards fail the quest."""
    final: bool
    """This is the last proposal of the quest."""

    rows = no_rows


@DATA
class SpeechGiven(_Event):
    type: Literal["speech"] = "speech"
    seat: Seat
    """The seat that spoke."""
    text: str
    """What it said, as it said it."""

    def rows(self, game: GameRows) -> Rows:
        return {"speeches": [game.seat_row(self.seat, {"seq": self.seq, "quest": self.quest, "attempt": self.attempt,
                                                       "text": self.text})]}


@DATA
class TeamProposed(_Event):
    type: Literal["team_proposed"] = "team_proposed"
    leader: Seat
    """The seat that named the team."""
    team: tuple[Seat, ...]
    """The seats it named."""
    assigned: bool = False
    """True when the rules send this team without a vote (paper: after the 5th rejection)."""

    def rows(self, game: GameRows) -> Rows:
        """Its proposals row, which the vote on it completes (`game.pending`)."""
        team = tuple(self.team)
        game.pending = game.seat_row(self.leader, {
            "seq": self.seq, "quest": self.quest, "attempt": self.attempt, "leader": self.leader, "team": team,
            "team_size": len(team), "assigned": self.assigned, "self_included": self.leader in team,
            "clean": game.clean(team), "approved": None, "approvals": None, "votes": None, "went": self.assigned})
        return {"proposals": [game.pending]}


@DATA
class VoteCast(_Event):
    """A seat's own vote, private to it; emitted only when votes are secret."""

    type: Literal["vote_cast"] = "vote_cast"
    seat: Seat
    """The seat that voted (private to it)."""
    approve: bool
    """True: it approved the team; False: it rejected it."""

    rows = no_rows


@DATA
class VotesRevealed(_Event):
    type: Literal["votes_revealed"] = "votes_revealed"
    team: tuple[Seat, ...]
    """The team voted on."""
    approvals: tuple[Seat, ...]
    """Seats that approved (empty when votes are secret; see the counts)."""
    rejections: tuple[Seat, ...]
    """Seats that rejected (empty when votes are secret)."""
    approve_count: int
    """How many seats approved."""
    reject_count: int
    """How many seats rejected."""
    approved: bool
    """True: the team goes on the quest."""

    def rows(self, game: GameRows) -> Rows:
        """A votes row per seat whose vote is shown; the proposal voted on gets its outcome."""
        pending, game.pending = game.pending, None
        leader = pending["leader"] if pending else None
        if pending is not None:
            pending.update(approved=self.approved, approvals=self.approve_count,
                           votes=self.approve_count + self.reject_count, went=self.approved)
        return {"votes": [game.seat_row(seat, {
            "seq": self.seq, "quest": self.quest, "attempt": self.attempt, "vote": vote, "team": tuple(self.team),
            "leader": leader, "leader_role": game.column(leader, "role"), "leader_side": game.column(leader, "side"),
            "leader_agent": game.column(leader, "agent"), "clean": game.clean(self.team), "approved": self.approved})
            for vote, seats in (("approve", self.approvals), ("reject", self.rejections)) for seat in seats]}


@DATA
class QuestCardPlayed(_Event):
    """A seat's own quest card, private to it (the ground truth for failure-vote rates)."""

    type: Literal["quest_card"] = "quest_card"
    seat: Seat
    """The seat that played the card (private to it)."""
    success: bool
    """True: a success card; False: a fail card."""

    def rows(self, game: GameRows) -> Rows:
        """Its cards row; `could_fail`: the rules let this seat fail the quest (evil, or under `good_may_fail`)."""
        could = bool(game.rules.get("good_may_fail")) or game.column(self.seat, "side") == "evil"
        return {"cards": [game.seat_row(self.seat, {"seq": self.seq, "quest": self.quest, "attempt": self.attempt,
                                                    "success": self.success, "could_fail": could})]}


@DATA
class QuestCompleted(_Event):
    type: Literal["quest_completed"] = "quest_completed"
    team: tuple[Seat, ...]
    """The seats that went on the quest."""
    fails: int
    """How many fail cards were played (never who played them)."""
    success: bool
    """True: the quest succeeded (fewer fail cards than it takes to fail it)."""
    good_points: int
    """Quests good has won so far."""
    evil_points: int
    """Quests evil has won so far."""

    def rows(self, game: GameRows) -> Rows:
        return {"quests": [{**game.place, "seq": self.seq, "quest": self.quest, "attempt": self.attempt,
                            "team": tuple(self.team), "fails": self.fails, "success": self.success}]}


@DATA
class AssassinationDeclined(_Event):
    type: Literal["assassination_declined"] = "assassination_declined"
    seat: Seat
    """The seat that holds off its strike (it may strike after a later quest)."""

    rows = no_rows


@DATA
class AssassinationAttempted(_Event):
    type: Literal["assassination"] = "assassination"
    assassin: Seat
    """The seat that struck."""
    target: Seat
    """The seat it named as Merlin."""
    hit: bool
    """True: the target was Merlin (evil wins)."""

    rows = no_rows


@DATA
class LadyGiven(_Event):
    """Who holds the Lady of the Lake first (the seat before the first leader), emitted once before the first
    leader is chosen, only when the rules use the Lady. Later holders follow from `lady_examined`."""

    type: Literal["lady_given"] = "lady_given"
    holder: Seat
    """The seat that holds the Lady first."""

    rows = no_rows


@DATA
class LadyExamined(_Event):
    """The holder of the Lady of the Lake examined `target`, who now holds it. Public; what the holder learned is
    the private `lady_result` that follows. Its `quest` and `attempt` are the quest just finished and its last
    proposal (the Lady is used after a quest, before the next quest's leader is chosen)."""

    type: Literal["lady_examined"] = "lady_examined"
    holder: Seat
    """The seat that held the Lady and examined."""
    target: Seat
    """The seat examined, who holds the Lady now."""

    rows = no_rows


@DATA
class LadyRevealed(_Event):
    """What the Lady of the Lake showed its holder: the target's loyalty (its side, never its role); visible to
    the holder alone."""

    type: Literal["lady_result"] = "lady_result"
    holder: Seat
    """The seat that examined (the only one that sees this)."""
    target: Seat
    """The seat examined."""
    loyalty: Team
    """The target's side."""

    rows = no_rows


@DATA
class GameEnded(_Event):
    type: Literal["game_ended"] = "game_ended"
    winner: Team
    """The side that won."""
    reason: EndReason
    """Why the game ended: good's three quests and no strike left (`three_successes`), the strike missed Merlin
    (`assassin_missed`), evil's three quests (`three_fails`), Merlin struck (`merlin_assassinated`), or the last
    proposal of a quest rejected (`five_rejections`)."""
    roles: dict[Seat, Role]
    """Every seat's role, revealed."""

    rows = no_rows


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
check_declared(get_args(get_args(GameEvent)[0]), "event")


class QuestOutcome(BaseModel):
    """One quest played: result.json's `quests`, in order."""

    model_config = ConfigDict(frozen=True)

    quest: int
    """The quest's number (1-5)."""
    team: tuple[Seat, ...]
    """The seats that went on it."""
    fails: int
    """How many fail cards were played (never who played them)."""
    success: bool
    """True: the quest succeeded."""


class GameResult(BaseModel):
    """How a game ended; written as result.json."""

    model_config = ConfigDict(frozen=True)

    winner: Team
    """The side that won."""
    reason: EndReason
    """Why the game ended (as `game_ended`'s `reason`)."""
    roles: dict[Seat, Role]
    """Every seat's role."""
    quests: tuple[QuestOutcome, ...]
    """Each quest played, in order (fewer than 5 when the game ended early): its fields below."""
    proposals: int
    """How many teams were named in the whole game, every quest's (the rejected ones and an assigned one too)."""
    assassination_target: Seat | None = None
    """The seat the assassination named; null when none was made."""
    assassin: Seat | None = None
    """The seat that carried the assassination (None: no Merlin, so no assassination)."""
