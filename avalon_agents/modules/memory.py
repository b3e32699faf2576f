"""Memory storage (the paper's 4.2): one pool per seat of structured entries, filled by observing (no LLM).

Each entry keeps who spoke (a player, or the host), the text as the seat saw it, the quest (the paper's
round) and proposal attempt, and whether everyone saw it or only this seat. What only this seat saw (by each
event's declared `visible_to`: its night sight, a Lady of the Lake result, its own cards) is also kept apart, in
`private`: it is part of every one of the seat's prompts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from avalon_agents.core.events import GameEvent, NightInfoRevealed, SpeechGiven
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat, seat_name
from avalon_agents.llm.tokens import count_tokens, newest_that_fit
from avalon_agents.narrate import announce, told_privately
from avalon_agents.orders import Orders, current


@dataclass(frozen=True, slots=True)
class Entry:
    speaker: str
    text: str
    quest: int
    attempt: int
    public: bool
    seat: Seat | None = None  # the speaker's seat (None: the host)

    def as_json(self) -> dict:
        """The paper's summarization input shape: name, message, message_type."""
        return {"name": self.speaker, "message": self.text, "message_type": "public" if self.public else "private"}


@dataclass
class Memory:
    seat: Seat
    entries: list[Entry] = field(default_factory=list)
    private: list[str] = field(default_factory=list)  # what only this seat saw, in order (narrate.told_privately)
    night_seats: dict[str, tuple[Seat, ...]] = field(default_factory=dict)
    events: list[GameEvent] = field(default_factory=list)  # everything observed, typed (for rule-based modules)

    def add(self, events: Sequence[GameEvent], rules: RuleSet) -> list[Entry]:
        """Store what the seat observed; return the new entries."""
        new = []
        self.events += events
        for event in events:
            text = announce(event, rules)
            if text is None:
                continue
            if told_privately(event):
                self.private.append(text)
            if isinstance(event, NightInfoRevealed):
                if event.seats:
                    self.night_seats[event.known_as] = event.seats
                continue
            seat = event.seat if isinstance(event, SpeechGiven) else None
            speaker = seat_name(seat) if seat is not None else "Host"
            new.append(Entry(speaker, text, event.quest, event.attempt, event.visible_to == "all", seat))
        self.entries += new
        return new

    def of_rounds(self, rounds: Iterable[int]) -> list[Entry]:
        wanted = set(rounds)
        return [e for e in self.entries if e.quest in wanted]

    @staticmethod
    def listed(entries: Sequence[Entry], orders: Orders | None = None) -> list[Entry]:
        """The entries as a summary lists them: each proposal's run of speeches in the game's order of speeches
        (`orders.speeches`; fixed: as spoken; reversed: from the last spoken), everything else where it
        happened."""
        orders = orders or current()
        if orders.as_spoken:
            return list(entries)
        out: list[Entry] = []
        run: list[Entry] = []
        for entry in [*entries, None]:
            if entry is not None and entry.seat is not None and (not run or (run[0].quest, run[0].attempt) ==
                                                                  (entry.quest, entry.attempt)):
                run.append(entry)
                continue
            out += [run[i] for i in orders.spoken([e.seat for e in run])]
            run = []
            if entry is not None:
                if entry.seat is not None:
                    run.append(entry)
                else:
                    out.append(entry)
        return out

    @staticmethod
    def render_stable(entries: Sequence[Entry], budget: int) -> str:
        """The entries as lines, at most `budget` tokens of the newest: the oldest are dropped in blocks of about
        half the budget (cut where the running count from the first line crosses a multiple of it), so between two
        drops each rendering extends the one before and a prompt cache serves it again."""
        lines = [e.text for e in entries]
        sizes = [count_tokens(line) for line in lines]
        total, start, run, half = sum(sizes), 0, 0, max(1, budget // 2)
        if total > budget:  # the first block end after which the rest fits
            start = len(sizes)
            for i, size in enumerate(sizes):
                run += size
                if run // half > (run - size) // half and total - run <= budget:
                    start = i + 1
                    break
        return "\n".join(lines[start:])

    @staticmethod
    def render(entries: Sequence[Entry], budget: int | None = None) -> str:
        """The entries as lines; with a token budget, the most recent lines that fit."""
        lines = [e.text for e in entries]
        if budget is None:
            return "\n".join(lines)
        return "\n".join(lines[newest_that_fit(lines, budget):])
