"""The agent registry: kinds by name, and an option a kind's factory does not take is an error naming it."""

from __future__ import annotations

import pytest

from avalon_agents.agents import RuleBot, make_agent
from avalon_agents.agents.registry import register_agent


def test_an_option_the_factory_does_not_take_is_named():
    assert isinstance(make_agent("rulebot", seat=1, seed=0), RuleBot)
    with pytest.raises(ValueError, match=r"agent kind 'rulebot' takes no option 'config'"):
        make_agent("rulebot", seat=1, seed=0, config=object())


def test_an_llm_kind_needs_a_model_and_an_unknown_kind_is_named():
    with pytest.raises(ValueError, match="need a model"):
        make_agent("cognitive", seat=1, seed=0)
    with pytest.raises(ValueError, match="unknown seat kind 'wizard'"):
        make_agent("wizard", seat=1, seed=0)


def test_a_registered_kind_gets_exactly_what_it_declares():
    seen = {}

    def factory(*, seat, seed, flavour="plain"):
        seen.update(seat=seat, seed=seed, flavour=flavour)
        return RuleBot(seat=seat, seed=seed)

    register_agent("flavoured", factory)
    make_agent("flavoured", seat=3, seed=9, flavour="spicy")
    assert seen == {"seat": 3, "seed": 9, "flavour": "spicy"}
