"""Belief over which seats are evil, for the rule bots.

Every possible evil set ("world") carries a weight from public evidence (quest results, votes,
proposals); a seat's private knowledge (its own role, what it saw at night) is a mask on top. Worlds and
teams are bitmasks: bit `seat - 1` stands for a seat.

Weights are a pure function of the public evidence so far, and views a pure function of evidence and
mask; both are memoized, so the six bots of a game, who all see the same evidence, compute each update
once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from itertools import combinations

from avalon_agents.core.types import Seat

# Likelihoods of the evidence models (ratios to a good player's 50/50).
EVIL_SUCCESS = 0.3
"""Chance that an evil member plays success (hiding) on a quest that succeeded."""
EVIL_VOTE_TELL = 1.4, 0.6
"""An evil voter approves teams with evil and rejects clean ones: (consistent, inconsistent) factors."""
EVIL_LEADER_TELL = 1.4, 0.6
"""An evil leader proposes a team with evil on it: (consistent, inconsistent) factors."""
CACHE_SIZE = 8192

Evidence = tuple[tuple[int, ...], ...]
"""("q", team, fails) | ("v", team, approvals, rejections) | ("p", leader_bit, team), kinds as 0/1/2."""
QUEST, VOTES, PROPOSAL = 0, 1, 2


def mask_of(seats: Iterable[Seat]) -> int:
    m = 0
    for s in seats:
        m |= 1 << (s - 1)
    return m


def seats_of(mask: int) -> list[Seat]:
    return [i + 1 for i in range(mask.bit_length()) if mask >> i & 1]


@lru_cache(maxsize=64)
def _worlds(players: int, evil_count: int) -> tuple[int, ...]:
    return tuple(mask_of(c) for c in combinations(range(1, players + 1), evil_count))


@lru_cache(maxsize=CACHE_SIZE)
def _weights(players: int, evil_count: int, evidence: Evidence) -> tuple[float, ...]:
    worlds = _worlds(players, evil_count)
    if not evidence:
        return (1.0,) * len(worlds)
    weights = list(_weights(players, evil_count, evidence[:-1]))
    kind, *data = evidence[-1]
    if kind == QUEST:
        team, fails = data
        for i, w in enumerate(worlds):
            k = (team & w).bit_count()
            if k < fails:
                weights[i] = 0.0
            elif fails == 0:
                weights[i] *= EVIL_SUCCESS**k
    elif kind == VOTES:
        team, approvals, rejections = data
        yes, no = EVIL_VOTE_TELL
        for i, w in enumerate(worlds):
            agree, disagree = (approvals & w, rejections & w) if team & w else (rejections & w, approvals & w)
            weights[i] *= yes ** agree.bit_count() * no ** disagree.bit_count()
    else:
        leader, team = data
        yes, no = EVIL_LEADER_TELL
        for i, w in enumerate(worlds):
            if w & leader:
                weights[i] *= yes if team & w else no
    total = sum(weights)
    return tuple(x / total for x in weights) if total > 0 else tuple(weights)


@lru_cache(maxsize=CACHE_SIZE)
def _view(players: int, evil_count: int, evidence: Evidence, allowed: int):
    """(world, weight) pairs allowed by the mask, their total, and each seat's chance of being evil."""
    worlds = _worlds(players, evil_count)
    weights = _weights(players, evil_count, evidence)
    pairs = [(w, x) for i, (w, x) in enumerate(zip(worlds, weights)) if allowed >> i & 1]
    total = sum(x for _, x in pairs)
    if total == 0:  # evidence contradicts the mask: fall back to the mask alone
        pairs = [(w, 1.0) for w, _ in pairs]
        total = float(len(pairs))
    sus = dict.fromkeys(range(1, players + 1), 0.0)
    for w, x in pairs:
        while w:
            low = w & -w
            sus[low.bit_length()] += x
            w ^= low
    return pairs, total, {s: v / total for s, v in sus.items()}


class Belief:
    """Weights over evil sets from public evidence, with a private mask.

    Args:
        players: number of seats.
        evil_count: how many seats are evil.
    """

    def __init__(self, players: int, evil_count: int) -> None:
        self.players = players
        self.evil_count = evil_count
        self.worlds = _worlds(players, evil_count)
        self.evidence: Evidence = ()
        self.everything = (1 << len(self.worlds)) - 1
        self.allowed = self.everything

    def restrict(self, keep: Callable[[int], bool]) -> None:
        """Rule out worlds that contradict private knowledge."""
        for i, w in enumerate(self.worlds):
            if not keep(w):
                self.allowed &= ~(1 << i)

    @property
    def weights(self) -> tuple[float, ...]:
        return _weights(self.players, self.evil_count, self.evidence)

    # -- evidence ---------------------------------------------------------------

    def see_quest(self, team: int, fails: int) -> None:
        self.evidence += ((QUEST, team, fails),)

    def see_votes(self, team: int, approvals: int, rejections: int) -> None:
        self.evidence += ((VOTES, team, approvals, rejections),)

    def see_proposal(self, leader: Seat, team: int) -> None:
        self.evidence += ((PROPOSAL, 1 << (leader - 1), team),)

    # -- queries ------------------------------------------------------------------

    def _view(self, private: bool):
        return _view(self.players, self.evil_count, self.evidence, self.allowed if private else self.everything)

    def p_clean(self, team: int, private: bool = True) -> float:
        """Probability that no member of `team` is evil."""
        pairs, total, _ = self._view(private)
        return sum(x for w, x in pairs if not w & team) / total

    def suspicion(self, private: bool = True) -> dict[Seat, float]:
        """Probability that each seat is evil."""
        return self._view(private)[2]
