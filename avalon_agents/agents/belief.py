"""Belief over which seats are evil, for the rule bots.

Every possible evil set ("world") carries a weight from public evidence (quest results, votes,
proposals); a seat's private knowledge (its own role, what it saw at night) is a mask on top. Worlds and
teams are bitmasks: bit `seat - 1` stands for a seat.

The bots of a game all see the same public evidence, so its states are shared: each state is an `_Node`
reached from the one before by a piece of evidence, holding its weights and the views computed from it
(per mask, with each seat's chance of being evil and every team's chance of being clean asked so far). A
state is computed once for the whole table and lives as long as some Belief is at or after it.

**The same game on every machine.** What a bot decides depends on these numbers, so no number here may depend on
the CPU, the BLAS kernel or numpy's SIMD path: no matrix product (BLAS sums in an order of its kernel's choosing),
no numpy power (a SIMD path may round it otherwise), no numpy sum. Weights change by elementwise products of
factors taken from tables made by repeated multiplication (each step one IEEE rounding, the same everywhere), and
every sum is `math.fsum` (exactly rounded: the same whatever the order). The chances a bot compares are rounded to
`DIGITS` decimals, so values equal in exact arithmetic compare equal and the bot's seeded tiebreak decides, not the
last bit of a float.
"""

from __future__ import annotations

import math
import weakref
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

DIGITS = 9
"""Chances are rounded to this many decimals before a bot compares them."""

Item = tuple[int, ...]
"""One piece of evidence: (QUEST, team, fails) | (VOTES, team, approvals, rejections) | (PROPOSAL, leader_bit,
team), seats as masks."""
QUEST, VOTES, PROPOSAL = 0, 1, 2


@lru_cache(maxsize=4096)
def _mask(seats: tuple[Seat, ...]) -> int:
    m = 0
    for s in seats:
        m |= 1 << (s - 1)
    return m


def mask_of(seats: Iterable[Seat]) -> int:
    return _mask(seats if isinstance(seats, tuple) else tuple(seats))


def seats_of(mask: int) -> list[Seat]:
    return [i + 1 for i in range(mask.bit_length()) if mask >> i & 1]


def _powers(base: float, most: int) -> np.ndarray:
    """base**0 .. base**most by repeated multiplication (no pow: the same bits on every machine)."""
    found = [1.0]
    for _ in range(most):
        found.append(found[-1] * base)
    return np.array(found)


class _Worlds:
    """The evil sets of a game size: as ints, as an int array, and per seat as a boolean column."""

    def __init__(self, players: int, evil_count: int) -> None:
        self.players = players
        self.ints = tuple(mask_of(c) for c in combinations(range(1, players + 1), evil_count))
        self.array = np.array(self.ints, dtype=np.int64)
        self.columns = [(self.array >> i & 1).astype(bool) for i in range(players)]
        """Per seat (seat 1 first), the worlds where it is evil."""
        self.everything = np.ones(len(self.ints), dtype=bool).tobytes()
        self.success = _powers(EVIL_SUCCESS, players)
        self.vote_tells = tuple(_powers(f, players) for f in EVIL_VOTE_TELL)
        self.root = _Node(self, None, None)
        self._counts: dict[int, np.ndarray] = {}

    def count(self, mask: int) -> np.ndarray:
        """How many of the seats in `mask` are evil, per world (exact integers)."""
        counts = self._counts.get(mask)
        if counts is None:
            counts = self._counts[mask] = np.bitwise_count(self.array & mask).astype(np.int64)
        return counts


def fsum(values: np.ndarray) -> float:
    """The exactly rounded sum of `values` (the same whatever the order or the machine)."""
    return math.fsum(values.tolist())


@lru_cache(maxsize=64)
def _worlds(players: int, evil_count: int) -> _Worlds:
    return _Worlds(players, evil_count)


class View:
    """The weights of one evidence state under one mask, normalized, with what follows from them."""

    __slots__ = ("weights", "by_seat", "suspicion", "_array", "_clean")

    def __init__(self, worlds: _Worlds, weights: np.ndarray) -> None:
        self.weights = weights
        self.by_seat: list[float] = [round(fsum(weights[column]), DIGITS) for column in worlds.columns]
        """Each seat's chance of being evil, seat 1 first (rounded to DIGITS decimals)."""
        self.suspicion: dict[Seat, float] = dict(zip(range(1, worlds.players + 1), self.by_seat))
        self._array = worlds.array
        self._clean: dict[int, float] = {}

    def p_clean(self, team: int) -> float:
        p = self._clean.get(team)
        if p is None:
            p = self._clean[team] = round(fsum(self.weights[(self._array & team) == 0]), DIGITS)
        return p


class _Node:
    """A state of the public evidence: the one before it plus one item."""

    __slots__ = ("worlds", "parent", "item", "children", "_weights", "views", "__weakref__")

    def __init__(self, worlds: _Worlds, parent: _Node | None, item: Item | None) -> None:
        self.worlds = worlds
        self.parent = parent  # kept alive by its children
        self.item = item
        self.children: weakref.WeakValueDictionary[Item, _Node] = weakref.WeakValueDictionary()
        self._weights: np.ndarray | None = None
        self.views: dict[bytes, View] = {}

    def child(self, item: Item) -> _Node:
        node = self.children.get(item)
        if node is None:
            node = self.children[item] = _Node(self.worlds, self, item)
        return node

    @property
    def weights(self) -> np.ndarray:
        if self._weights is None:
            self._weights = self._compute()
        return self._weights

    def _compute(self) -> np.ndarray:
        worlds = self.worlds
        if self.parent is None:
            return np.ones(len(worlds.ints))
        weights = self.parent.weights.copy()
        kind, *data = self.item
        on_team = worlds.count(data[0] if kind != PROPOSAL else data[1])  # evil members per world
        if kind == QUEST:
            fails = data[1]
            weights[on_team < fails] = 0.0
            if fails == 0:
                weights *= worlds.success[on_team]
        elif kind == VOTES:
            yes, no = worlds.vote_tells
            approve, reject = worlds.count(data[1]), worlds.count(data[2])
            dirty = on_team > 0
            weights *= yes[np.where(dirty, approve, reject)] * no[np.where(dirty, reject, approve)]
        else:
            yes, no = EVIL_LEADER_TELL
            leads = worlds.columns[data[0].bit_length() - 1]
            weights *= np.where(leads, np.where(on_team > 0, yes, no), 1.0)
        total = fsum(weights)
        if total > 0:
            weights /= total
        weights.flags.writeable = False
        return weights

    def view(self, allowed: bytes) -> View:
        """Weights zeroed outside the mask and normalized (the mask alone if the evidence contradicts it)."""
        view = self.views.get(allowed)
        if view is None:
            keep = np.frombuffer(allowed, dtype=bool)
            weights = np.where(keep, self.weights, 0.0)
            total = fsum(weights)
            if total == 0:
                weights, total = keep.astype(float), float(keep.sum())
            view = self.views[allowed] = View(self.worlds, weights / total)
        return view


class Belief:
    """Weights over evil sets from public evidence, with a private mask.

    Args:
        players: number of seats.
        evil_count: how many seats are evil.
    """

    def __init__(self, players: int, evil_count: int) -> None:
        self.players = players
        self.evil_count = evil_count
        self._worlds = _worlds(players, evil_count)
        self.worlds = self._worlds.ints
        self.node = self._worlds.root
        self.everything = self.allowed = self._worlds.everything

    def restrict(self, seats: int, evil: int | None = None, at_least: int | None = None) -> None:
        """Keep only worlds where exactly `evil` (or at least `at_least`) of `seats` (a mask) are evil."""
        counts = self._worlds.count(seats)
        keep = counts == evil if evil is not None else counts >= at_least
        self.allowed = (np.frombuffer(self.allowed, dtype=bool) & keep).tobytes()

    @property
    def weights(self) -> np.ndarray:
        return self.node.weights

    @property
    def evidence(self) -> tuple[Item, ...]:
        """Every piece of evidence seen, oldest first."""
        items, node = [], self.node
        while node.item is not None:
            items.append(node.item)
            node = node.parent
        return tuple(reversed(items))

    # -- evidence ---------------------------------------------------------------

    def see_quest(self, team: int, fails: int) -> None:
        self.node = self.node.child((QUEST, team, fails))

    def see_votes(self, team: int, approvals: int, rejections: int) -> None:
        self.node = self.node.child((VOTES, team, approvals, rejections))

    def see_proposal(self, leader: Seat, team: int) -> None:
        self.node = self.node.child((PROPOSAL, 1 << (leader - 1), team))

    # -- queries ------------------------------------------------------------------

    def view(self, private: bool = True) -> View:
        return self.node.view(self.allowed if private else self.everything)

    def p_clean(self, team: int, private: bool = True) -> float:
        """Probability that no member of `team` is evil."""
        return self.view(private).p_clean(team)

    def suspicion(self, private: bool = True) -> dict[Seat, float]:
        """Probability that each seat is evil."""
        return self.view(private).suspicion
