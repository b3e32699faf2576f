"""Belief over which seats are evil, for the rule bots.

Every possible evil set ("world") carries a weight from public evidence (quest results, votes,
proposals); a seat's private knowledge (its own role, what it saw at night) is a mask on top. Worlds and
teams are bitmasks: bit `seat - 1` stands for a seat.

Weights are a pure function of the public evidence so far, and views a pure function of evidence and
mask; both are memoized, so the six bots of a game, who all see the same evidence, compute each update
once.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from itertools import combinations

import numpy as np

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
def _worlds(players: int, evil_count: int) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """Worlds as ints, as an int array, and as a 0/1 matrix (world x seat)."""
    ints = tuple(mask_of(c) for c in combinations(range(1, players + 1), evil_count))
    matrix = np.array([[w >> i & 1 for i in range(players)] for w in ints], dtype=float)
    return ints, np.array(ints, dtype=np.int64), matrix


@lru_cache(maxsize=CACHE_SIZE)
def _vec(mask: int, players: int) -> np.ndarray:
    return np.array([mask >> i & 1 for i in range(players)], dtype=float)


@lru_cache(maxsize=CACHE_SIZE)
def _weights(players: int, evil_count: int, evidence: Evidence) -> np.ndarray:
    _, _, matrix = _worlds(players, evil_count)
    if not evidence:
        return np.ones(len(matrix))
    weights = _weights(players, evil_count, evidence[:-1]).copy()
    kind, *data = evidence[-1]
    on_team = matrix @ _vec(data[0] if kind != PROPOSAL else data[1], players)  # evil members per world
    if kind == QUEST:
        fails = data[1]
        weights[on_team < fails] = 0.0
        if fails == 0:
            weights *= EVIL_SUCCESS**on_team
    elif kind == VOTES:
        yes, no = EVIL_VOTE_TELL
        approve = matrix @ _vec(data[1], players)
        reject = matrix @ _vec(data[2], players)
        dirty = on_team > 0
        weights *= yes ** np.where(dirty, approve, reject) * no ** np.where(dirty, reject, approve)
    else:
        yes, no = EVIL_LEADER_TELL
        leads = matrix[:, data[0].bit_length() - 1] > 0
        weights *= np.where(leads, np.where(on_team > 0, yes, no), 1.0)
    total = weights.sum()
    if total > 0:
        weights /= total
    weights.flags.writeable = False
    return weights


@lru_cache(maxsize=CACHE_SIZE)
def _view(players: int, evil_count: int, evidence: Evidence, allowed: bytes) -> tuple[np.ndarray, dict[Seat, float]]:
    """Weights zeroed outside the mask and normalized, and each seat's chance of being evil."""
    _, _, matrix = _worlds(players, evil_count)
    keep = np.frombuffer(allowed, dtype=bool)
    weights = np.where(keep, _weights(players, evil_count, evidence), 0.0)
    total = weights.sum()
    if total == 0:  # evidence contradicts the mask: fall back to the mask alone
        weights, total = keep.astype(float), float(keep.sum())
    weights = weights / total
    weights.flags.writeable = False
    sus = (weights @ matrix).tolist()
    return weights, dict(zip(range(1, players + 1), sus))


class Belief:
    """Weights over evil sets from public evidence, with a private mask.

    Args:
        players: number of seats.
        evil_count: how many seats are evil.
    """

    def __init__(self, players: int, evil_count: int) -> None:
        self.players = players
        self.evil_count = evil_count
        self.worlds, self._world_array, self._matrix = _worlds(players, evil_count)
        self.evidence: Evidence = ()
        self.everything = np.ones(len(self.worlds), dtype=bool).tobytes()
        self.allowed = self.everything

    def restrict(self, seats: int, evil: int | None = None, at_least: int | None = None) -> None:
        """Keep only worlds where exactly `evil` (or at least `at_least`) of `seats` (a mask) are evil."""
        counts = self._matrix @ _vec(seats, self.players)
        keep = counts == evil if evil is not None else counts >= at_least
        self.allowed = (np.frombuffer(self.allowed, dtype=bool) & keep).tobytes()

    @property
    def weights(self) -> np.ndarray:
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
        weights, _ = self._view(private)
        return float(weights[(self._world_array & team) == 0].sum())

    def suspicion(self, private: bool = True) -> dict[Seat, float]:
        """Probability that each seat is evil."""
        return self._view(private)[1]
