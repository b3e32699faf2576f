"""Role-aware rule bots: the baseline an LLM agent must beat.

Good bots keep a Belief over which seats are evil (quest results, votes and proposals as evidence, their
night information as a mask), propose the team most likely clean with themselves on it, and approve
teams that are nearly as clean as the best they could name. Merlin knows the evil seats but proposes and
votes like a servant reading the public evidence, correcting only what would put evil on the quest.
Evil bots get onto teams, approve teams with evil on them, and fail when it matters, one failer per
quest. The Assassin names the good seat that steered away from evil most reliably.

`blunder` weakens a bot on purpose: that share of its decisions is a random legal action instead (a
tournament's yardstick between the rule bot and the random agent).
"""

from __future__ import annotations

from collections.abc import Sequence

from avalon_agents.agents.belief import Belief, mask_of, seats_of
from avalon_agents.agents.bot import Bot
from avalon_agents.agents.random_agent import random_action
from avalon_agents.core.actions import Action, ActionRequest
from avalon_agents.core.events import (
    GameEvent,
    GameStarted,
    LadyRevealed,
    NightInfoRevealed,
    QuestCompleted,
    RoleAssigned,
    TeamProposed,
    VotesRevealed,
)
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role, Seat, Team, seat_name
from avalon_agents.decisions.kinds import kind_of

APPROVE_RATIO = 0.75
"""A good bot approves a team whose clean chance is at least this share of its own best team's..."""
APPROVE_RATIO_STEP = 0.15
"""...lowered by this much for every rejected proposal in the quest."""
MERLIN_COVER = 0.35
"""Chance that Merlin goes against its knowledge where the table's evidence agrees, to stay hidden."""
EVIL_HIDE = 0.3
"""Chance that an evil failer plays success on the first quest, to build trust."""
EVIL_COVER_VOTE = 0.5
"""Chance that an evil bot approves a clean team that the table would accept."""


class RuleBot(Bot):
    """A rule-based player for any role. Its role comes from the events it observes.

    Args:
        seat: the seat it plays.
        seed: seeds its own random.Random.
        blunder: the share of its decisions (0 to 1) taken at random among the legal actions instead.
    """

    def __init__(self, *, seat: Seat, seed: int = 0, blunder: float = 0.0) -> None:
        if not 0.0 <= blunder <= 1.0:
            raise ValueError(f"blunder: a share from 0 to 1, got {blunder}")
        super().__init__(seat=seat, seed=seed)
        self.blunder = blunder
        self.rules: RuleSet | None = None
        self.role: Role | None = None
        self._is_evil = False
        self.belief: Belief | None = None
        self.evil: int = 0  # known evil seats, as a mask (Merlin, evil roles)
        self.fails_seen = 0
        self.good_points = 0
        self.evil_points = 0
        # For the Assassin: how Merlin-like each seat behaved.
        self.merlin_score: dict[Seat, float] = {}

    # ------------------------------------------------------------------ observing

    def see(self, events: Sequence[GameEvent]) -> None:
        for e in events:
            handler = self._handlers.get(type(e))
            if handler:
                handler(self, e)

    def _start(self, e: GameStarted) -> None:
        self.rules = e.rules
        self.belief = Belief(e.rules.players, e.rules.evil_count)
        self.merlin_score = {s: 0.0 for s in e.rules.seats}
        order = list(e.rules.seats)
        self.rng.shuffle(order)
        self.tiebreak = {s: i for i, s in enumerate(order)}
        self._tiebreak = [self.tiebreak[s] for s in e.rules.seats]
        self._ranks: dict[bool, tuple] = {}  # private -> (the view it was ranked from, the ranking)

    def _see_quest(self, e: QuestCompleted) -> None:
        self.belief.see_quest(mask_of(e.team), e.fails)
        self.fails_seen += e.fails > 0
        self.good_points, self.evil_points = e.good_points, e.evil_points

    def _learn_role(self, e: RoleAssigned) -> None:
        role = self.role = e.role
        self._is_evil = role.side is Team.EVIL
        me = 1 << (self.seat - 1)
        if role.side is Team.GOOD:
            self.belief.restrict(me, evil=0)
        else:
            self.evil |= me
            self.belief.restrict(me, evil=1)

    def _learn_night(self, e: NightInfoRevealed) -> None:
        if e.known_as == "nothing":
            return
        seen = mask_of(e.seats)
        if e.known_as == "merlin_or_morgana":
            if len(e.seats) == 2:  # exactly one of the pair is Morgana
                self.belief.restrict(seen, evil=1)
        else:  # Merlin sees evil; evil sees teammates
            self.evil |= seen
            self.belief.restrict(seen, at_least=len(e.seats))

    def _see_proposal(self, e: TeamProposed) -> None:
        team = mask_of(e.team)
        if not e.assigned:
            self.belief.see_proposal(e.leader, team)
        if self._is_evil:
            self._score_merlin(e.leader, team, weight=1.0, approve=True)

    def _see_votes(self, e: VotesRevealed) -> None:
        if not (e.approvals or e.rejections):
            return  # secret votes: nothing per seat to learn
        team = mask_of(e.team)
        self.belief.see_votes(team, mask_of(e.approvals), mask_of(e.rejections))
        if not self._is_evil:
            return
        weight = 2.0 if self.fails_seen == 0 else 1.0  # early steering can only come from knowledge
        for s in e.approvals:
            self._score_merlin(s, team, weight, approve=True)
        for s in e.rejections:
            self._score_merlin(s, team, weight, approve=False)

    def _score_merlin(self, seat: Seat, team: int, weight: float, approve: bool) -> None:
        """Evil's view: backing clean teams and opposing dirty ones looks like Merlin."""
        dirty = bool(team & self.evil)
        self.merlin_score[seat] += weight * (1.0 if approve != dirty else -1.0) * (1.0 if dirty else 0.5)

    def _learn_lady(self, e: LadyRevealed) -> None:
        """The Lady of the Lake showed this bot a player's loyalty: certain, like night information."""
        seen = mask_of((e.target,))
        if e.loyalty is Team.EVIL:
            self.evil |= seen
        self.belief.restrict(seen, evil=int(e.loyalty is Team.EVIL))

    _handlers = {
        GameStarted: _start,
        LadyRevealed: _learn_lady,
        RoleAssigned: _learn_role,
        NightInfoRevealed: _learn_night,
        TeamProposed: _see_proposal,
        VotesRevealed: _see_votes,
        QuestCompleted: _see_quest,
    }

    # ------------------------------------------------------------------ acting

    def decide(self, request: ActionRequest) -> Action:
        if self.blunder and self.rng.random() < self.blunder:  # no draw at 0: the full bot plays as before
            return random_action(request, self.rng)
        return kind_of(request).bot(self, request)

    def ranked(self, private: bool) -> list[Seat]:
        """Seats from least to most suspected, ties broken by this bot's own random order."""
        view = self.belief.view(private)
        cached = self._ranks.get(private)
        if cached is not None and cached[0] is view:
            return cached[1]
        ranked = [s for _, _, s in sorted(zip(view.by_seat, self._tiebreak, self.rules.seats))]
        self._ranks[private] = (view, ranked)
        return ranked

    def propose(self, request: ActionRequest) -> list[Seat]:
        if self._is_evil:
            return self._propose_evil(request)
        return self._best_team(request.team_size, private=self.role is not Role.MERLIN)

    def _best_team(self, size: int, private: bool) -> list[Seat]:
        """Self plus the least suspected seats (Merlin reads the table publicly, then drops known evil)."""
        ranked = self.ranked(private)
        team = [self.seat] + [s for s in ranked if s != self.seat and not self.evil >> (s - 1) & 1]
        return team[:size]

    def _propose_evil(self, request: ActionRequest) -> list[Seat]:
        need = self.rules.fails_required[request.quest - 1]
        mates = [s for s in seats_of(self.evil) if s != self.seat]
        self.rng.shuffle(mates)
        evil_on = [self.seat] + mates[: need - 1]
        clean_looking = [s for s in self.ranked(private=False) if s not in evil_on and not self.evil >> (s - 1) & 1]
        return (evil_on + clean_looking)[: request.team_size]

    def vote(self, request: ActionRequest) -> bool:
        team = mask_of(request.team)
        if self._is_evil:
            need = self.rules.fails_required[request.quest - 1]
            if (team & self.evil).bit_count() >= need:
                return True
            # A clean team: blend in by sometimes backing one the table likes, never the last one.
            if request.final:
                return False
            return self._acceptable(team, request.attempt, private=False) and self.rng.random() < EVIL_COVER_VOTE
        if request.final and self.rules.on_last_rejection == "evil_wins":
            return True  # rejecting the last proposal hands evil the game
        if self.role is Role.MERLIN:
            # Vote as the table's evidence suggests; overrule it only against evil, and not always.
            looks_fine = self._acceptable(team, request.attempt, private=False)
            if not team & self.evil:
                return looks_fine or self.rng.random() < MERLIN_COVER
            decisive = self.evil_points == self.rules.points_to_win - 1
            return looks_fine and not decisive and self.rng.random() < MERLIN_COVER
        if request.team and self.seat in request.team and request.leader == self.seat:
            return True
        return self._acceptable(team, request.attempt, private=True)

    def _acceptable(self, team: int, attempt: int, private: bool) -> bool:
        """Nearly as likely clean as the best team this seat could name (less picky after rejections)."""
        best = self.belief.p_clean(mask_of(self._best_team(team.bit_count(), private)), private)
        ratio = APPROVE_RATIO - APPROVE_RATIO_STEP * (attempt - 1)
        return self.belief.p_clean(team, private) >= ratio * best

    def fails(self, request: ActionRequest) -> bool:
        need = self.rules.fails_required[request.quest - 1]
        evil_on = sorted(s for s in request.team if self.evil >> (s - 1) & 1)
        if self.role is Role.OBERON:
            return True  # knows no teammates: always fails
        if len(evil_on) < need:
            return False  # cannot fail it alone: stay hidden
        if self.seat not in evil_on[:need]:
            return False  # a teammate with a lower seat fails it
        decisive = self.evil_points == self.rules.points_to_win - 1 or self.good_points == self.rules.points_to_win - 1
        if request.quest == 1 and not decisive and self.rng.random() < EVIL_HIDE:
            return False
        return True

    def assassinate(self, request: ActionRequest) -> Seat | None:
        candidates = [s for s in request.options if not self.evil >> (s - 1) & 1]
        self.rng.shuffle(candidates)
        ranked = sorted(candidates, key=lambda s: -self.merlin_score[s])
        if request.may_pass:
            top = [self.merlin_score[s] for s in ranked[:2]] + [0.0]
            if top[0] < 3 or top[0] - top[1] < 2:
                return None
        return ranked[0]

    # ------------------------------------------------------------------ words

    def speech(self, request: ActionRequest) -> str:
        ranked = self.ranked(private=False)  # what the table's evidence says
        others = [s for s in ranked if s != self.seat]
        if self._is_evil:
            others = [s for s in others if not self.evil >> (s - 1) & 1]
            return f"I am loyal to Arthur. I trust {seat_name(others[0])}; {seat_name(others[-1])} worries me."
        return f"I trust {seat_name(others[0])}. I am wary of {seat_name(others[-1])}."
