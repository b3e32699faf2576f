"""RandomAgent: uniform over legal actions. A floor for every other agent."""

from __future__ import annotations

import random

from avalon_agents.agents.bot import Bot
from avalon_agents.core.actions import (
    Action,
    ActionRequest,
    Assassinate,
    ProposeTeam,
    QuestCard,
    RequestKind,
    Speak,
    Vote,
)
from avalon_agents.core.types import Seat

SPEECHES = ("I have nothing to add.", "Let's see how this goes.", "I am on the side of good.")


def random_action(request: ActionRequest, rng: random.Random) -> Action:
    """A legal action picked uniformly (a speech from a short canned list)."""
    kind = request.kind
    if kind is RequestKind.PROPOSE:
        return ProposeTeam(team=tuple(sorted(rng.sample(request.options, request.team_size))))
    if kind is RequestKind.VOTE:
        return Vote(approve=rng.random() < 0.5)
    if kind is RequestKind.QUEST:
        return QuestCard(success=not request.can_fail or rng.random() < 0.5)
    if kind is RequestKind.ASSASSINATE:
        choices: list[Seat | None] = list(request.options) + ([None] if request.may_pass else [])
        return Assassinate(target=rng.choice(choices))
    return Speak(text=rng.choice(SPEECHES))


class RandomAgent(Bot):
    """Picks uniformly among legal actions (speeches from a short canned list)."""

    def decide(self, request: ActionRequest) -> Action:
        return random_action(request, self.rng)
