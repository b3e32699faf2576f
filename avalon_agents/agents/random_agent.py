"""RandomAgent: uniform over legal actions. A floor for every other agent."""

from __future__ import annotations

import random

from avalon_agents.agents.bot import Bot
from avalon_agents.core.actions import Action, ActionRequest
from avalon_agents.decisions.kinds import kind_of


def random_action(request: ActionRequest, rng: random.Random) -> Action:
    """A legal action picked uniformly (a speech from a short canned list): the decision kind's `random`."""
    return kind_of(request).random(request, rng)


class RandomAgent(Bot):
    """Picks uniformly among legal actions (speeches from a short canned list)."""

    def decide(self, request: ActionRequest) -> Action:
        return random_action(request, self.rng)
