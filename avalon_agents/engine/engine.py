"""AvalonEngine: a pure, seeded state machine. No I/O, no LLM, no logging."""

from __future__ import annotations

import random
from collections.abc import Sequence

from avalon_agents.core.actions import (
    Action,
    ActionRequest,
    Assassinate,
    Examine,
    IllegalAction,
    ProposeTeam,
    QuestCard,
    RequestKind,
    Speak,
    Vote,
)
from avalon_agents.core.events import (
    AssassinationAttempted,
    AssassinationDeclined,
    GameEnded,
    GameEvent,
    GameResult,
    GameStarted,
    LadyExamined,
    LadyGiven,
    LadyRevealed,
    LeaderChosen,
    NightInfoRevealed,
    QuestCardPlayed,
    QuestCompleted,
    QuestOutcome,
    RoleAssigned,
    SpeechGiven,
    TeamProposed,
    VoteCast,
    VotesRevealed,
)
from avalon_agents.core.rules import LADY_QUESTS, RuleSet, lady_first_holder
from avalon_agents.core.types import EndReason, Phase, Role, Seat, Team

# Roles each kind of night information hides from.
HIDDEN_FROM_MERLIN = frozenset({Role.MORDRED})
UNSEEN_BY_EVIL = frozenset({Role.OBERON})


def deal(rules: RuleSet, seed: int) -> dict[Seat, Role]:
    """The role at each seat the seed deals (what `AvalonEngine(rules, seed)` plays), without playing."""
    roles = list(rules.roles)
    random.Random(seed).shuffle(roles)
    return dict(zip(rules.seats, roles))


class AvalonEngine:
    """One game of Avalon under a RuleSet, driven by `pending()` and `submit()`.

    Args:
        rules: the rules to play by.
        seed: seeds this engine's own `random.Random` (role deal and first leader).
        deal: a fixed role per seat, in seat order (replays, imports); None deals from the seed. It must be
            the rules' roles in some order.
    """

    def __init__(self, rules: RuleSet, seed: int, deal: Sequence[Role] | None = None) -> None:
        self.rules = rules
        self.seed = seed
        if deal is not None and sorted(deal) != sorted(rules.roles):
            raise ValueError(f"deal: {[r.value for r in deal]} is not the roles of these rules")
        self.deal = tuple(deal) if deal is not None else None
        self.reset()

    # ----------------------------------------------------------------- public API

    def reset(self) -> list[GameEvent]:
        """Deal roles, choose the first leader, emit night information, and start quest 1."""
        rules = self.rules
        self._rng = random.Random(self.seed)
        deal = list(rules.roles)
        self._rng.shuffle(deal)  # drawn even for a fixed deal, so the first leader follows the seed alike
        self.roles: dict[Seat, Role] = dict(zip(rules.seats, self.deal or deal))
        first = rules.first_leader
        self.leader: Seat = self._rng.randint(1, rules.players) if first == "random" else first
        self.quest = 1
        self.attempt = 1
        self.good_points = 0
        self.evil_points = 0
        self.team: tuple[Seat, ...] = ()
        self.phase = Phase.NIGHT
        self.events: list[GameEvent] = []
        self._new: list[GameEvent] = []
        self._pending: dict[Seat, ActionRequest] = {}
        self._speakers: list[Seat] = []
        self._votes: dict[Seat, bool] = {}
        self._cards: dict[Seat, bool] = {}
        self._quests: list[QuestOutcome] = []
        self._proposals = 0
        self._assassin_used = False
        self._target: Seat | None = None
        self._result: GameResult | None = None
        self.lady: Seat | None = None
        """Who holds the Lady of the Lake (None: the rules do not use it)."""
        self.lady_held: list[Seat] = []
        """Every seat that has held the Lady, in order (none of them may be examined)."""

        self._emit(GameStarted, rules=rules)
        for seat, role in self.roles.items():
            self._emit(RoleAssigned, visible_to=(seat,), seat=seat, role=role)
        for seat, role in self.roles.items():
            self._night_info(seat, role)
        if rules.lady_of_the_lake:  # the leader's right: the seat the lead passes from to the first leader
            self._give_lady(lady_first_holder(self.leader, rules.players))
            self._emit(LadyGiven, holder=self.lady)
        self._start_attempt()
        return self._flush()

    def pending(self) -> list[ActionRequest]:
        """The requests that must be answered now, in seat order (several for votes and quest cards)."""
        return list(self._pending.values())

    def submit(self, seat: Seat, action: Action) -> list[GameEvent]:
        """Apply one seat's action and return the events it caused (none until a simultaneous step completes).

        Raises:
            IllegalAction: the seat is not asked to act, or the action breaks a rule (the message names it).
        """
        request = self._pending.get(seat)
        if request is None:
            if self.phase is Phase.OVER:
                raise IllegalAction("game over: no more actions are taken")
            raise IllegalAction(f"turn: seat {seat} is not asked to act now ({self.phase.value})")
        request.validate(action)
        del self._pending[seat]
        self._apply[type(action)](self, seat, action)
        return self._flush()

    @property
    def is_over(self) -> bool:
        return self.phase is Phase.OVER

    def result(self) -> GameResult:
        """The result of a finished game. Raises RuntimeError while the game is running."""
        if self._result is None:
            raise RuntimeError("the game is not over")
        return self._result

    @property
    def assassin(self) -> Seat | None:
        """The seat that carries the assassination (the rules' `assassin_role`); None in a game without Merlin."""
        token = self.rules.assassin_role
        return next((s for s, r in self.roles.items() if r is token), None)

    # ----------------------------------------------------------------- steps

    def _night_info(self, seat: Seat, role: Role) -> None:
        roles = self.roles
        if role is Role.MERLIN:
            seen = [s for s, r in roles.items() if r.side is Team.EVIL and r not in HIDDEN_FROM_MERLIN]
            known_as = "evil"
        elif role is Role.PERCIVAL:
            seen = [s for s, r in roles.items() if r in (Role.MERLIN, Role.MORGANA)]
            known_as = "merlin_or_morgana"
        elif role.side is Team.EVIL and role not in UNSEEN_BY_EVIL:
            seen = [s for s, r in roles.items() if r.side is Team.EVIL and r not in UNSEEN_BY_EVIL and s != seat]
            known_as = "evil_teammates"
        else:
            seen, known_as = [], "nothing"
        self._emit(NightInfoRevealed, visible_to=(seat,), seat=seat, seats=tuple(sorted(seen)), known_as=known_as)

    def _start_attempt(self) -> None:
        rules = self.rules
        q = self.quest - 1
        self.team = ()
        self._emit(
            LeaderChosen,
            leader=self.leader,
            team_size=rules.quest_sizes[q],
            fails_required=rules.fails_required[q],
            final=self.attempt >= rules.max_proposals,
        )
        if self._assigned or rules.proposal_order == "propose_then_discuss":
            self._ask_proposal()
        else:
            self._ask_discussion()

    @property
    def _assigned(self) -> bool:
        """The proposal after the last rejected one, under `leader_assigns`: no discussion, no vote."""
        return self.attempt > self.rules.max_proposals

    def _ask_proposal(self) -> None:
        self.phase = Phase.PROPOSAL
        self._ask(self.leader, RequestKind.PROPOSE, options=tuple(self.rules.seats),
                  team_size=self.rules.quest_sizes[self.quest - 1])

    def _ask_discussion(self) -> None:
        self.phase = Phase.DISCUSSION
        n = self.rules.players
        self._speakers = [(self.leader - 1 + i) % n + 1 for i in range(n)]
        self._ask_next_speaker()

    def _ask_next_speaker(self) -> None:
        self._ask(self._speakers.pop(0), RequestKind.SPEAK)

    def _ask_votes(self) -> None:
        self.phase = Phase.VOTE
        self._votes = {}
        for seat in self.rules.seats:
            self._ask(seat, RequestKind.VOTE)

    def _ask_cards(self) -> None:
        self.phase = Phase.QUEST
        self._cards = {}
        for seat in self.team:
            can_fail = self.rules.good_may_fail or self.roles[seat].side is Team.EVIL
            self._ask(seat, RequestKind.QUEST, can_fail=can_fail)

    def _ask_assassin(self, may_pass: bool) -> None:
        self.phase = Phase.ASSASSINATION
        assassin = self.assassin
        targets = tuple(s for s in self.rules.seats if s != assassin)
        self._ask(assassin, RequestKind.ASSASSINATE, options=targets, may_pass=may_pass)

    def _ask_lady(self) -> None:
        self.phase = Phase.LADY
        options = tuple(s for s in self.rules.seats if s not in self.lady_held)
        self._ask(self.lady, RequestKind.LADY, options=options)

    def _give_lady(self, seat: Seat) -> None:
        self.lady = seat
        self.lady_held.append(seat)

    def _on_speak(self, seat: Seat, action: Speak) -> None:
        self._emit(SpeechGiven, seat=seat, text=action.text)
        if self._speakers:
            self._ask_next_speaker()
        elif self.rules.proposal_order == "propose_then_discuss":
            self._ask_votes()
        else:
            self._ask_proposal()

    def _on_propose(self, seat: Seat, action: ProposeTeam) -> None:
        self.team = team = tuple(sorted(action.team))
        self._proposals += 1
        assigned = self._assigned
        self._emit(TeamProposed, leader=self.leader, team=team, assigned=assigned)
        if assigned:
            self._ask_cards()
        elif self.rules.proposal_order == "propose_then_discuss":
            self._ask_discussion()
        else:
            self._ask_votes()

    def _on_vote(self, seat: Seat, action: Vote) -> None:
        self._votes[seat] = action.approve
        if not self._pending:
            self._on_votes()

    def _on_card(self, seat: Seat, action: QuestCard) -> None:
        self._cards[seat] = action.success
        if not self._pending:
            self._on_cards()

    def _on_votes(self) -> None:
        rules = self.rules
        votes = dict(sorted(self._votes.items()))
        yes = [s for s, v in votes.items() if v]
        no = [s for s, v in votes.items() if not v]
        approved = 2 * len(yes) > rules.players or (rules.approve_on_tie and 2 * len(yes) == rules.players)
        if not rules.votes_public:
            for seat, vote in votes.items():
                self._emit(VoteCast, visible_to=(seat,), seat=seat, approve=vote)
        public = rules.votes_public
        self._emit(
            VotesRevealed,
            team=self.team,
            approvals=tuple(yes) if public else (),
            rejections=tuple(no) if public else (),
            approve_count=len(yes),
            reject_count=len(no),
            approved=approved,
        )
        if approved:
            self._ask_cards()
        elif self.attempt >= rules.max_proposals and rules.on_last_rejection == "evil_wins":
            self._end(EndReason.FIVE_REJECTIONS)
        else:
            self._rotate_leader()
            self.attempt += 1
            self._start_attempt()

    def _on_cards(self) -> None:
        for seat in self.team:
            self._emit(QuestCardPlayed, visible_to=(seat,), seat=seat, success=self._cards[seat])
        fails = sum(not c for c in self._cards.values())
        success = fails < self.rules.fails_required[self.quest - 1]
        if success:
            self.good_points += 1
        else:
            self.evil_points += 1
        self._quests.append(QuestOutcome(quest=self.quest, team=self.team, fails=fails, success=success))
        self._emit(QuestCompleted, team=self.team, fails=fails, success=success,
                   good_points=self.good_points, evil_points=self.evil_points)
        win = self.rules.points_to_win
        if self.evil_points >= win:
            self._end(EndReason.THREE_FAILS)
        elif self._assassin_used or self.rules.assassin_role is None:
            self._next_quest_or_end()
        elif self.rules.assassination == "after_any_quest":
            self._ask_assassin(may_pass=self.rules.assassin_may_pass and self.good_points < win)
        elif self.good_points >= win:
            self._ask_assassin(may_pass=False)
        else:
            self._next_quest_or_end()

    def _on_assassinate(self, seat: Seat, action: Assassinate) -> None:
        target = action.target
        if target is None:
            self._emit(AssassinationDeclined, visible_to=(seat,), seat=seat)
            self._next_quest_or_end()
            return
        self._assassin_used = True
        self._target = target
        hit = self.roles[target] is Role.MERLIN
        self._emit(AssassinationAttempted, assassin=seat, target=target, hit=hit)
        if hit:
            self._end(EndReason.MERLIN_ASSASSINATED)
        elif self.good_points >= self.rules.points_to_win:
            self._end(EndReason.ASSASSIN_MISSED)
        else:
            self._next_quest_or_end()

    def _on_examine(self, seat: Seat, action: Examine) -> None:
        target = action.target
        self._emit(LadyExamined, holder=seat, target=target)
        self._emit(LadyRevealed, visible_to=(seat,), holder=seat, target=target, loyalty=self.roles[target].side)
        self._give_lady(target)
        self._next_quest()

    def _next_quest_or_end(self) -> None:
        """After a quest (and the assassination chance after it, if any) that did not end the game otherwise:
        good's win, or the Lady of the Lake after quests 2-4, or the next quest."""
        if self.good_points >= self.rules.points_to_win:
            self._end(EndReason.THREE_SUCCESSES)
        elif self.lady is not None and self.quest in LADY_QUESTS:
            self._ask_lady()
        else:
            self._next_quest()

    def _next_quest(self) -> None:
        self.quest += 1
        self.attempt = 1
        self._rotate_leader()
        self._start_attempt()

    def _rotate_leader(self) -> None:
        self.leader = self.leader % self.rules.players + 1

    def _end(self, reason: EndReason) -> None:
        self.phase = Phase.OVER
        self._pending = {}
        self._emit(GameEnded, winner=reason.winner, reason=reason, roles=dict(self.roles))
        self._result = GameResult(
            winner=reason.winner,
            reason=reason,
            roles=dict(self.roles),
            quests=tuple(self._quests),
            proposals=self._proposals,
            assassination_target=self._target,
            assassin=self.assassin,
        )

    _apply = {Speak: _on_speak, ProposeTeam: _on_propose, Vote: _on_vote, QuestCard: _on_card,
              Assassinate: _on_assassinate, Examine: _on_examine}
    """What each kind of action does, by its type."""

    # ----------------------------------------------------------------- plumbing

    def _ask(self, seat: Seat, kind: RequestKind, **fields) -> None:
        self._pending[seat] = ActionRequest(
            seat=seat, kind=kind, quest=self.quest, attempt=self.attempt, team=self.team,
            leader=self.leader, final=self.attempt >= self.rules.max_proposals, **fields,
        )

    def _emit(self, event_type, **fields) -> None:
        event = event_type(seq=len(self.events), quest=self.quest, attempt=self.attempt, **fields)
        self.events.append(event)
        self._new.append(event)

    def _flush(self) -> list[GameEvent]:
        new, self._new = self._new, []
        return new
