"""The context sections module prompts share, one per registered slot (modules.base.SLOTS): a slot's text reaches
the prompt of every module that runs after it, under the slot's own section; a section whose slot is empty is left
out entirely."""

from __future__ import annotations

from collections.abc import Iterable

from avalon_agents.modules.base import SLOTS, Turn
from avalon_agents.modules.memory import Memory

HISTORY_TOKENS = 1500
"""Raw memory entries shown in a prompt (the current round's, or the most recent ones without a summary)."""


def section(title: str, body: str | None) -> str:
    return f"{title}:\n{body.strip()}" if body and body.strip() else ""


def earlier_slots(upto: str | None, leave_out: Iterable[str] = ()) -> list[str]:
    """The slots whose text a module of slot `upto` reads: every slot with a section that runs before it (None:
    every slot), less `leave_out` (a module may choose not to read one)."""
    names = SLOTS.names()
    end = names.index(upto) if upto in SLOTS else len(names)
    skip = set(leave_out)
    return [n for n in names[:end] if SLOTS[n].section is not None and n not in skip]


def context(turn: Turn, *, upto: str | None = None, leave_out: Iterable[str] = (),
            history_tokens: int = HISTORY_TOKENS) -> str:
    """Night knowledge, notes from earlier games, then the sections of the slots before `upto` (the asking
    module's slot) that change only between rounds, the recent entries, and the sections that change within a
    round (`Slot.late`: the chosen action, and any slot registered by a plugin); a section is left out when its
    slot is empty.

    What changes least comes first: within a round a seat's prompts then only grow at the end (the round's
    new entries), so a server with a prompt cache (the embedded model's) reads just the new part."""
    mind, slots = turn.mind, turn.slots
    memory = mind.memory
    if slots.summaries():  # the earlier rounds are summarized: only the later rounds' entries follow
        story = section("This round so far",
                        Memory.render([e for e in memory.entries if e.quest > mind.summarized], history_tokens))
    else:
        story = section("What has happened (the most recent part)", Memory.render(memory.entries, history_tokens))
    early, late = [], []
    for name in earlier_slots(upto, leave_out):
        slot = SLOTS[name]
        (late if slot.late else early).append(section(slot.section, getattr(slots, name, None)))
    parts = [
        section("What you learned at night", "\n".join(memory.night)),
        section("What earlier games taught you about the other roles", mind.experience.other_roles),
        *early,
        story,
        *late,
    ]
    return "\n\n".join(p for p in parts if p)
