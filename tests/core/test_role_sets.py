"""Role sets as data: any multiset with the official split builds; each impossible set is a one-line error
naming the problem, from make_rules and from RuleSet alike."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from pydantic import ValidationError

from avalon_agents.core import Role, RuleSet, make_rules
from avalon_agents.core.rules import EVIL_COUNT
from avalon_agents.errors import field_error
from tests.strategies import role_sets

BAD = [  # (roles, assassin, the message's start, a phrase it must hold)
    ("merlin,merlin,loyal_servant,morgana,assassin", None, "roles:", "Merlin appears 2 times"),
    ("merlin,percival,loyal_servant,loyal_servant,assassin", None, "roles:", "4 good and 1 evil"),
    ("merlin,percival,morgana,mordred,assassin", None, "roles:", "2 good and 3 evil"),
    ("merlin,percival,loyal_servant,morgana,minion", "percival", "assassin:", "Percival is a good role"),
    ("merlin,percival,loyal_servant,morgana,minion", "mordred", "assassin:", "Mordred is not among the roles"),
    ("merlin,percival,loyal_servant,loyal_servant,minion,minion", "minion", "assassin:",
     "2 seats are Minion of Mordred"),
    ("merlin,percival,loyal_servant,loyal_servant,minion,minion", None, "roles:",
     "Merlin needs an evil role held by one seat"),
    ("merlin,percival,loyal_servant,morgana,minion", None, "assassin:", "Morgana or Minion of Mordred"),
    ("loyal_servant,loyal_servant,loyal_servant,morgana,minion", "morgana", "assassin:", "no Merlin"),
    ("merlin,percival,loyal_servant,morgana,assassin", "morgana", "assassin:", "the Assassin among the roles"),
    ("merlin,percival,loyal_servant,morgana,wizard", None, "roles:", "unknown role 'wizard'"),
    ("merlin,percival,loyal_servant,morgana,assassin", "wizard", "assassin:", "unknown role 'wizard'"),
    ("merlin,percival,loyal_servant,morgana", None, "players:", "Avalon takes 5 to 10 players"),
]


@pytest.mark.parametrize(("roles", "assassin", "start", "phrase"), BAD)
def test_each_impossible_set_is_one_line_naming_the_problem(roles, assassin, start, phrase):
    with pytest.raises(ValueError) as caught:
        make_rules(roles=roles.split(","), assassin=assassin)
    message = str(caught.value)
    assert message.startswith(start) and phrase in message and "\n" not in message, message
    if start == "players:":
        return
    with pytest.raises(ValidationError) as caught:  # the same problem from the model itself
        RuleSet(**{**make_rules("official", len(roles.split(","))).model_dump(), "roles": roles.split(","),
                   "assassin": assassin})
    assert phrase in field_error(caught.value) and "\n" not in field_error(caught.value)


def test_players_must_agree_with_the_role_set():
    with pytest.raises(ValueError, match=r"^players: 6 players, but the role set has 5 roles$"):
        make_rules(players=6, roles="merlin,percival,loyal_servant,morgana,assassin".split(","))
    with pytest.raises(ValueError, match="^assassin: give the role set too"):
        make_rules(assassin="mordred")


@pytest.mark.parametrize("name,role", [("merlin", Role.MERLIN), ("Loyal_Servant", Role.LOYAL_SERVANT),
                                       ("loyal  servant", Role.LOYAL_SERVANT), ("MINION", Role.MINION),
                                       ("minion of mordred", Role.MINION), ("Minion_of_Mordred", Role.MINION),
                                       (" oberon ", Role.OBERON)])
def test_role_names_any_case_underscores_or_spaces(name, role):
    assert Role.parse(name) is role


@settings(max_examples=200, deadline=None)
@given(case=role_sets())
def test_every_set_with_the_official_split_builds(case):
    roles, assassin = case
    rules = make_rules("paper", roles=roles, assassin=assassin)
    assert rules.players == len(roles) and rules.roles == roles and rules.name == "paper"
    assert sum(r.side.value == "evil" for r in roles) == EVIL_COUNT[len(roles)]
    if Role.MERLIN not in roles:
        assert rules.assassin_role is None
    else:
        assert rules.assassin_role is (assassin or Role.ASSASSIN) and rules.roles.count(rules.assassin_role) == 1
    assert RuleSet.model_validate_json(rules.model_dump_json()) == rules  # meta.json and events round-trip


def test_presets_keep_the_assassin_role_as_the_holder():
    for players in range(5, 11):
        rules = make_rules("official", players)
        assert rules.assassin is None and rules.assassin_role is Role.ASSASSIN
