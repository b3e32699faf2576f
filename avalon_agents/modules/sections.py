"""The context sections module prompts share. A section whose slot is empty is left out entirely."""

from __future__ import annotations

from avalon_agents.modules.base import Turn
from avalon_agents.modules.memory import Memory

HISTORY_TOKENS = 1500
"""Raw memory entries shown in a prompt (the current round's, or the most recent ones without a summary)."""


def section(title: str, body: str | None) -> str:
    return f"{title}:\n{body.strip()}" if body and body.strip() else ""


def context(turn: Turn, *, analysis: bool = True, plan: bool = True, action: bool = False,
            history_tokens: int = HISTORY_TOKENS) -> str:
    """Night knowledge, notes from earlier games, the summary, the analysis and the plan as asked, then the
    recent entries and the chosen action; a section is left out when its slot is empty.

    What changes least comes first: within a round a seat's prompts then only grow at the end (the round's
    new entries), so a server with a prompt cache (the embedded model's) reads just the new part."""
    mind, slots = turn.mind, turn.slots
    memory = mind.memory
    if slots.summary:
        recent = Memory.render([e for e in memory.entries if e.quest > mind.summarized], history_tokens)
        summary, story = slots.summary, section("This round so far", recent)
    else:
        summary = None
        story = section("What has happened (the most recent part)", Memory.render(memory.entries, history_tokens))
    parts = [
        section("What you learned at night", "\n".join(memory.night)),
        section("What earlier games taught you about the other roles", mind.experience.other_roles),
        section("Summary of the earlier rounds", summary),
        section("Your analysis of the other players", slots.analysis) if analysis else "",
        section("Your current plan", slots.plan) if plan else "",
        story,
        section("The action you chose (private, only you know it)", slots.action) if action else "",
    ]
    return "\n\n".join(p for p in parts if p)
