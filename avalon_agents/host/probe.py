"""Belief probes: at the end of each quest, ask every LLM seat privately who it thinks is Merlin and how likely
each other player is to be evil, and score it later against the truth.

Beyond the paper, after SpyGame's theory-of-mind probes (Liang et al.) and PLAYER*'s multiple-choice
questions (Zhu et al.). A probe is module-free: it never goes through the agent's modules or memory, only
the seat's role card and the events that seat has seen, as the host told them. Its answer never reaches an
agent and never becomes a game event; the host writes it to the trace only:

    Probe(seat=3, quest=2, merlin_guess=5, p_evil={"1": 0.2, "2": 0.9, ...}, valid=True, raw="<the reply>")

An answer that is not a seat for Merlin plus a probability for every other seat is `valid: false` with
`merlin_guess: null` and `p_evil: {}`; probabilities are clamped to [0, 1]; a failed call gives `raw: null`.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from avalon_agents import orders
from avalon_agents.core.events import GameEvent, RoleAssigned
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat
from avalon_agents.decisions.jsonish import load_json
from avalon_agents.llm.health import LLMCallFailed
from avalon_agents.llm.tokens import count_tokens, newest_that_fit
from avalon_agents.narrate import DEFAULT_CARDS, announce, names, private_section, system_prompt, told_privately
from avalon_agents.prices import Cost
from avalon_agents.prompting import template
from avalon_agents.records.trace import Probe, Purpose

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from avalon_agents.llm.client import LLMClient

PURPOSE = Purpose(stage="probe", name="belief")
PROMPT = "probes/belief"
SEAT_KEY = re.compile(r"^\s*(?:player\s*)?(\d{1,2})\s*$", re.IGNORECASE)
"""A key of the "evil" object: "3" or "Player 3" (the whole key, never a number inside other text)."""


def probe_schema(rules: RuleSet, seat: Seat) -> dict[str, Any]:
    """The JSON schema of a probe answer: {"merlin": seat, "evil": {"<other seat>": 0..1, ...}}."""
    others = [str(s) for s in rules.seats if s != seat]
    probability = {"type": "number", "minimum": 0, "maximum": 1}
    return {
        "type": "object",
        "properties": {
            "merlin": {"type": "integer", "enum": list(rules.seats)},
            "evil": {"type": "object", "properties": {s: probability for s in others}, "required": others,
                     "additionalProperties": False},
        },
        "required": ["merlin", "evil"],
    }


def read_answer(text: str | None, rules: RuleSet, seat: Seat) -> tuple[int | None, dict[str, float], bool]:
    """(merlin_guess, p_evil, valid) from a reply. Valid needs a real seat for Merlin and a number for every
    other seat; anything less gives (None, {}, False). Probabilities are clamped to [0, 1]."""
    invalid: tuple[int | None, dict[str, float], bool] = (None, {}, False)
    value = load_json(text) if text else None
    if value is None:
        return invalid
    merlin = _number(value.get("merlin"))
    if merlin is None or merlin != int(merlin) or int(merlin) not in rules.seats:
        return invalid
    evil = value.get("evil")
    if not isinstance(evil, dict):
        return invalid
    given: dict[int, float] = {}
    for key, p in evil.items():
        match = SEAT_KEY.match(str(key))
        number = _number(p)
        if match is None or number is None:
            return invalid
        given[int(match.group(1))] = number
    others = [s for s in rules.seats if s != seat]
    if any(s not in given for s in others):
        return invalid
    return int(merlin), {str(s): min(1.0, max(0.0, given[s])) for s in others}, True


def _number(value: Any) -> float | None:
    """A finite number (or a numeric string); None for anything else, booleans included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int) and not -1e15 < value < 1e15:  # math.isfinite of a huge int overflows
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


PROBES_PER_SEAT = 4.0
"""Belief probes per LLM seat and game: one per completed quest, 3 to 5."""
PROBE_COST = Cost(1.0, 2_800, 40)
"""One belief probe: the seat's view of the game (its history budget) and a short JSON answer."""


class BeliefProbe:
    """Asks the probed seats, concurrently, what they believe at the end of a quest.

    Args:
        clients: the seats to probe, each with its own model client (the one its agent plays with).
        history_tokens: budget for the seat's view of the game in the prompt (the most recent part; night
            information always); default as the vanilla LLM agent's.
        cards: each seat's set of role cards, as its agent plays with (default: the paper's).
    """

    def __init__(self, *, clients: Mapping[Seat, LLMClient], history_tokens: int | None = None,
                 cards: Mapping[Seat, str] | None = None) -> None:
        self.clients = dict(clients)
        self.cards = dict(cards or {})
        self.history_tokens = history_tokens

    @property
    def seats(self) -> tuple[Seat, ...]:
        """The probed seats, in order."""
        return tuple(sorted(self.clients))

    async def __call__(self, *, rules: RuleSet, quest: int, views: Mapping[Seat, Sequence[GameEvent]]
                       ) -> list[Probe]:
        """Probe every seat of `views` (what each has seen up to the end of `quest`) at once; one trace
        record per seat, in seat order."""
        return list(await asyncio.gather(*(self.ask(rules=rules, seat=seat, quest=quest, events=views[seat])
                                           for seat in self.seats if seat in views)))

    async def ask(self, *, rules: RuleSet, seat: Seat, quest: int, events: Sequence[GameEvent]) -> Probe:
        """Probe one seat; never raises for a bad answer or a failed call (the record says `valid: false`)."""
        client = self.clients[seat]
        prompt = template(PROMPT)
        schema = probe_schema(rules, seat) if client.settings.schema_style != "none" else None
        try:
            raw: str | None = await client.call(self.messages(rules=rules, seat=seat, quest=quest, events=events),
                                                purpose=PURPOSE, prompt_id=prompt.id, prompt_hash=prompt.hash,
                                                seat=seat, schema=schema, quest=quest)
        except LLMCallFailed:
            raw = None  # the failed call is in the trace already
        merlin, p_evil, valid = read_answer(raw, rules, seat)
        return Probe(seat=seat, quest=quest, merlin_guess=merlin, p_evil=p_evil, valid=valid, raw=raw)

    def messages(self, *, rules: RuleSet, seat: Seat, quest: int, events: Sequence[GameEvent]
                 ) -> list[BaseMessage]:
        """The probe prompt: the seat's rules and role card, what it has seen (the public lines, then what only it
        knows), and the two questions."""
        role = next(e.role for e in events if isinstance(e, RoleAssigned))
        others = [s for s in rules.seats if s != seat]
        example = "{" + ", ".join(f'"{s}": <probability>' for s in orders.current().listed(others)) + "}"
        history, private = self.history(rules, events, self._budget(seat))
        text = template(PROMPT).render(history=history or "(nothing yet)", private=private, quest=quest,
                                       players=names(rules.seats), others=names(others),
                                       evil_count=rules.evil_count, example=example)
        from langchain_core.messages import HumanMessage, SystemMessage

        system = system_prompt(rules, seat, role, cards=self.cards.get(seat, DEFAULT_CARDS))
        return [SystemMessage(system), HumanMessage(text)]

    @staticmethod
    def history(rules: RuleSet, events: Sequence[GameEvent], budget: int) -> tuple[str, str]:
        """What the seat has seen, as the host told it: (the public lines, the most recent that fit in `budget`
        tokens less the private section; the private section, whole: every event only it could see, by its
        declared visibility: its night sight, a Lady of the Lake result, its own cards, a plugin's private event;
        narrate.private_section, as in every LLM seat's prompts)."""
        private: list[str] = []
        seen: list[str] = []
        for e in events:
            if (text := announce(e, rules)) is not None:
                (private if told_privately(e) else seen).append(text)
        section = private_section(private)
        room = budget - count_tokens(section)
        return "\n".join(seen[newest_that_fit(seen, room):]), section

    def _budget(self, seat: Seat) -> int:
        if self.history_tokens is not None:
            return self.history_tokens
        return self.clients[seat].settings.history_tokens
