"""The orders the host's wording lists things in, per game: order effects controlled (issue #19, point 3).

Where a list's order is arbitrary a model may still favour what comes first (or last). An `Orders` object says,
for one game, in which order the host lists

- `players`: seats in prose (the other players in a system prompt, night information, teams, who approved and
  who rejected, the roles at the end, the players an analysis or a probe is about),
- `options`: the answers a request offers (approve/reject, success/fail, the seats a team or Merlin is chosen
  from) in the instruction, in the answers shown to a human seat and in the JSON schema's enums,
- `speeches`: the speeches of one proposal in the summary module's conversation (the speaking order itself,
  rotating from the leader, is a rule and never changes; only how the summary's input lists them).

`fixed` (the default) keeps today's wording byte for byte; `shuffled` draws the orders from the game's seed,
so the same seed gives the same orders; `reversed` lists everything the other way round (the last seat first,
reject before approve, fail before success, a proposal's speeches from the last spoken), the treatment of the
order-bias study (`avalon bias`, experiments/bias.py). The engine knows nothing of this: an `Orders` changes
words, never the events, the rules or what a seat may see. Who sits in which seat is the runner's seating (`schedule`).

The host makes the game's `Orders` current (`using`) while it plays; every wording function reads it
(`current()`) unless given one, so agents, modules and probes word lists alike without being handed it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from avalon_agents.core.types import Seat

Mode = Literal["fixed", "shuffled", "reversed"]
LISTS = ("players", "options", "speeches")
"""What an `order:` config may shuffle."""

VOTE_WORDS = ("approve", "reject")
CARD_WORDS = ("success", "fail")


@dataclass(frozen=True)
class Orders:
    """One game's listing orders. An empty permutation means the natural order (seat number, as given).

    Attributes:
        modes: what was asked for each list (`fixed` or `shuffled`), as recorded.
        players: the order seats are listed in prose (a permutation of the seats; () keeps the given order).
        options: the order seats are offered as answers (() keeps the request's order).
        vote: the order of the vote's answers.
        card: the order of a quest card's answers.
        speeches: the order a proposal's speeches are listed in by the summary (() keeps the speaking order).
    """

    modes: dict[str, Mode] = field(default_factory=lambda: dict.fromkeys(LISTS, "fixed"))
    players: tuple[Seat, ...] = ()
    options: tuple[Seat, ...] = ()
    vote: tuple[str, ...] = VOTE_WORDS
    card: tuple[str, ...] = CARD_WORDS
    speeches: tuple[Seat, ...] = ()

    @classmethod
    def make(cls, seed: int, players: int, *, modes: dict[str, Mode] | None = None) -> Orders:
        """The orders of a game with `seed` and `players` seats. Each shuffled list draws from its own stream of
        the seed, so shuffling one list never changes another's order."""
        modes = {**dict.fromkeys(LISTS, "fixed"), **(modes or {})}
        for key, mode in modes.items():
            if key not in LISTS:
                raise ValueError(f"order.{key}: unknown list (choose from {', '.join(LISTS)})")
            if mode not in ("fixed", "shuffled", "reversed"):
                raise ValueError(f"order.{key}: {mode!r} is not fixed, shuffled or reversed")
        seats = list(range(1, players + 1))

        def drawn(key: str, items: Iterable[Any], mode: Mode | None = None) -> tuple:
            items = list(items)
            mode = mode or modes[key]
            if mode == "reversed":
                return tuple(reversed(items))
            if mode == "shuffled":
                random.Random(f"avalon-orders:{key}:{seed}").shuffle(items)
            return tuple(items)

        def seat_order(key: str) -> tuple[Seat, ...]:
            return () if modes[key] == "fixed" else drawn(key, seats)

        return cls(
            modes=modes,
            players=seat_order("players"),
            options=seat_order("options"),
            vote=drawn("vote", VOTE_WORDS, modes["options"]),
            card=drawn("card", CARD_WORDS, modes["options"]),
            # reversed speeches: from the last spoken (by position, in `spoken`), whoever spoke
            speeches=drawn("speeches", seats) if modes["speeches"] == "shuffled" else (),
        )

    @property
    def fixed(self) -> bool:
        return all(m == "fixed" for m in self.modes.values())

    @property
    def as_spoken(self) -> bool:
        """A proposal's speeches are listed in the order they were spoken."""
        return not self.speeches and self.modes.get("speeches") != "reversed"

    @staticmethod
    def _by(order: tuple[Seat, ...], seats: Iterable[Seat]) -> list[Seat]:
        listed = list(seats)
        if not order:
            return listed
        rank = {s: i for i, s in enumerate(order)}
        return sorted(listed, key=lambda s: (rank.get(s, len(rank)), s))

    def listed(self, seats: Iterable[Seat]) -> list[Seat]:
        """Seats in the order prose lists them."""
        return self._by(self.players, seats)

    def offered(self, seats: Iterable[Seat]) -> list[Seat]:
        """Seats in the order they are offered as answers."""
        return self._by(self.options, seats)

    def spoken(self, speakers: Iterable[Seat]) -> list[int]:
        """The positions of a proposal's speeches (by speaker) in the order the summary lists them."""
        speakers = list(speakers)
        if self.modes.get("speeches") == "reversed":
            return list(range(len(speakers)))[::-1]
        if self.as_spoken:
            return list(range(len(speakers)))
        rank = {s: i for i, s in enumerate(self.speeches)}
        return sorted(range(len(speakers)), key=lambda i: (rank.get(speakers[i], len(rank)), i))

    def meta(self) -> dict[str, Any]:
        """What meta.json records: the modes and every order actually used."""
        return {
            **self.modes,
            "player_order": list(self.players) or None,
            "option_order": list(self.options) or None,
            "vote_options": list(self.vote),
            "card_options": list(self.card),
            "speech_order": list(self.speeches) or None,
        }


FIXED = Orders()
"""Today's wording: seats by number, approve before reject, success before fail, speeches as spoken."""

_CURRENT: ContextVar[Orders] = ContextVar("avalon_orders", default=FIXED)


def current() -> Orders:
    """The orders of the game being played in this task (FIXED outside a game)."""
    return _CURRENT.get()


@contextmanager
def using(orders: Orders) -> Iterator[Orders]:
    """Make `orders` current for the code inside (and the tasks it starts), then restore the previous ones."""
    token = _CURRENT.set(orders)
    try:
        yield orders
    finally:
        _CURRENT.reset(token)
