"""The context sections module prompts share, one per registered slot (modules.base.SLOTS): a slot's text reaches
the prompt of every module that runs after it, under the slot's own section; a section whose slot is empty is left
out entirely."""

from __future__ import annotations

from collections.abc import Iterable

from avalon_agents.modules.base import SLOTS, Mind, Module, Turn
from avalon_agents.modules.memory import Memory
from avalon_agents.narrate import private_section
from avalon_agents.prompting import template

HISTORY_TOKENS = 1500
"""Raw memory entries shown in a prompt (the current round's, or the most recent ones without a summary)."""


def section(title: str, body: str | None) -> str:
    return f"{title}:\n{body.strip()}" if body and body.strip() else ""


def standing(modules: Iterable[Module]) -> str:
    """The "How you work" section of a seat's system message: the standing instruction of each module that
    declares one (`Module.standing`), in the order they run; "" if none does."""
    return how_you_work(m.standing_text() for m in modules)


def how_you_work(instructions: Iterable[str | None]) -> str:
    """The "How you work" section from steps' standing instructions (one line each; None: a step without one), in
    order; "" if there is none. (The baseline seat's steps are not modules: it passes its own.)"""
    steps = [text for text in instructions if text]
    return template("modules/standing/header").render(steps="\n".join(steps)) if steps else ""


def earlier_slots(upto: str | None, leave_out: Iterable[str] = ()) -> list[str]:
    """The slots whose text a module of slot `upto` reads: every slot with a section that runs before it (None:
    every slot), less `leave_out` (a module may choose not to read one)."""
    names = SLOTS.names()
    end = names.index(upto) if upto in SLOTS else len(names)
    skip = set(leave_out)
    return [n for n in names[:end] if SLOTS[n].section is not None and n not in skip]


def with_private(mind: Mind, text: str) -> str:
    """A `paper` prompt that has no context of its own (the summary's, experience learning's) after the section of
    what the seat privately knows, which every prompt holds."""
    return "\n\n".join(p for p in (private_section(mind.memory.private), text) if p)


def game_so_far(turn: Turn, history_tokens: int = HISTORY_TOKENS) -> str:
    """The `cache` layout's stable part, in the same words in each of a seat's prompts: what the seat privately
    knows, notes from earlier games, the summary of the earlier rounds (the slots that summarize) and the public
    entries of the rounds since (the oldest dropped in blocks when they outgrow `history_tokens`,
    `Memory.render_stable`). Within a round each prompt's stable part extends the previous one's."""
    mind, slots = turn.mind, turn.slots
    later = [e for e in mind.memory.entries if e.quest > mind.summarized and e.public]
    return "\n\n".join(p for p in (
        private_section(mind.memory.private),
        section("What earlier games taught you about the other roles", mind.experience.other_roles),
        *(section(SLOTS[n].section, getattr(slots, n, None)) for n in SLOTS.names() if SLOTS[n].summarizes),
        section("The game since then" if mind.summarized else "The game so far",
                Memory.render_stable(later, history_tokens)),
    ) if p)


def context(turn: Turn, *, upto: str | None = None, leave_out: Iterable[str] = (),
            history_tokens: int = HISTORY_TOKENS) -> str:
    """What a module of slot `upto` reads before its own task, in the seat's layout (`Mind.layout`).

    `cache`: `game_so_far`, then the sections of the other slots before `upto` (the analysis, the plan, the chosen
    action, any slot a plugin registered): each of a seat's prompts starts with the previous one's stable part, so
    a provider's prompt cache serves it. `paper`: what the seat privately knows, notes from earlier games, the
    sections of the slots that change only between rounds (summary, analysis, plan), the recent entries, then those
    that change within a round (`Slot.late`). A section is left out when its slot is empty."""
    mind, slots = turn.mind, turn.slots
    if mind.layout == "cache":
        mind.stable = game_so_far(turn, history_tokens)
        return "\n\n".join(p for p in (mind.stable, *(
            section(SLOTS[n].section, getattr(slots, n, None))
            for n in earlier_slots(upto, leave_out) if not SLOTS[n].summarizes)) if p)
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
        private_section(memory.private),
        section("What earlier games taught you about the other roles", mind.experience.other_roles),
        *early,
        story,
        *late,
    ]
    return "\n\n".join(p for p in parts if p)
