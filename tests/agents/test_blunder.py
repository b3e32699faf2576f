"""The weakened rule bot: `blunder` is the share of decisions taken at random; at 0 it is the full rule bot
(no extra draw from its generator), at 1 it never reasons."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.agents import RuleBot, make_agent
from avalon_agents.agents.random_agent import RandomAgent
from avalon_agents.core import make_rules
from avalon_agents.host import GameHost


def decisions(factory, seed: int) -> list:
    rules = make_rules("official", 6)
    agents = {seat: factory(seat) for seat in rules.seats}
    host = GameHost(rules=rules, agents=agents, seed=seed)
    asyncio.run(host.run())
    return [repr(e) for e in host.engine.events]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_blunder_zero_is_the_rule_bot_and_one_plays_otherwise(seed):
    assert decisions(lambda s: RuleBot(seat=s, seed=s, blunder=0.0), seed) == \
        decisions(lambda s: RuleBot(seat=s, seed=s), seed)
    assert decisions(lambda s: RuleBot(seat=s, seed=s, blunder=1.0), seed) != \
        decisions(lambda s: RuleBot(seat=s, seed=s), seed)


def test_blunder_is_the_share_of_random_decisions(monkeypatch):
    from avalon_agents.agents import rulebot
    from avalon_agents.core.actions import ActionRequest, RequestKind

    randoms = []
    original = rulebot.random_action
    monkeypatch.setattr(rulebot, "random_action", lambda request, rng: randoms.append(1) or original(request, rng))
    bot = RuleBot(seat=1, seed=0, blunder=0.3)
    request = ActionRequest(seat=1, kind=RequestKind.QUEST, quest=1, attempt=1, team=(1, 2))  # cannot fail
    for _ in range(2000):
        assert bot.decide(request).success
    assert 0.26 < len(randoms) / 2000 < 0.34


def test_blunder_is_checked_and_registered_as_an_option():
    assert make_agent("rulebot", seat=1, seed=0, blunder=0.5).blunder == 0.5
    with pytest.raises(ValueError, match="blunder: a share from 0 to 1"):
        RuleBot(seat=1, seed=0, blunder=-0.1)
    assert isinstance(make_agent("random", seat=1, seed=0), RandomAgent)
