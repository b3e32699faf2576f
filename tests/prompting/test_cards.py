"""Role cards: the paper's goals and initial strategies by default, the improved set by name (`cards: improved`),
honoured by every LLM agent, and an unknown name an error naming the field."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.core import Role, make_rules
from avalon_agents.experiments import load_experiments
from avalon_agents.experiments.runner import series_setups
from avalon_agents.host.play import play_one
from avalon_agents.llm import ClientPool
from avalon_agents.narrate import card_sets, role_card, system_prompt
from tests.helpers import scripted_setup

PAPER = {role: role_card(role) for role in Role}
IMPROVED = {role: role_card(role, "improved") for role in Role}


def test_there_are_two_sets_and_the_paper_is_the_default():
    assert card_sets() == ["improved", "paper"]
    rules = make_rules("paper", 6)
    for role in set(rules.roles):
        assert f"Strategy: {PAPER[role]['strategy']}" in system_prompt(rules, 1, role)
        assert PAPER[role] != IMPROVED[role]


def test_paper_cards_carry_the_papers_substance():
    for role in (Role.LOYAL_SERVANT, Role.MORGANA, Role.ASSASSIN):  # they put themselves forward for quests
        assert "put yourself forward as" in PAPER[role]["strategy"]
        assert "candidate" in PAPER[role]["strategy"]
    assert "succeed" in PAPER[Role.LOYAL_SERVANT]["strategy"]
    assert "fail" in PAPER[Role.MORGANA]["strategy"] and "Loyal Servant" in PAPER[Role.MORGANA]["strategy"]
    assert "Merlin" in PAPER[Role.ASSASSIN]["strategy"] and "Merlin" in PAPER[Role.ASSASSIN]["goal"]
    assert "against" in PAPER[Role.MERLIN]["strategy"] and "against" in PAPER[Role.PERCIVAL]["strategy"]
    # no camouflage the paper did not give: Morgana never poses as Merlin, Merlin is not told to hide,
    # Percival is not told to draw suspicion away
    assert "Merlin" not in PAPER[Role.MORGANA]["strategy"]
    for role in (Role.MERLIN, Role.PERCIVAL):
        for word in ("hidden", "unrecognised", "reveal", "suspicion", "hints"):
            assert word not in (PAPER[role]["goal"] + PAPER[role]["strategy"]).lower()


def test_improved_cards_keep_the_old_text():
    assert "or even as Merlin to mislead Percival" in IMPROVED[Role.MORGANA]["strategy"]
    assert "stay unrecognised" in IMPROVED[Role.MERLIN]["goal"]
    assert "draw suspicion away" in IMPROVED[Role.PERCIVAL]["strategy"]
    assert "put yourself forward" not in IMPROVED[Role.LOYAL_SERVANT]["strategy"]
    rules = make_rules("official", 6)
    assert IMPROVED[Role.MORGANA]["strategy"] in system_prompt(rules, 4, Role.MORGANA, cards="improved")


@pytest.mark.slow  # seconds: the fast suite stays under its 2 minutes
@pytest.mark.parametrize("cards", ["paper", "improved"])
def test_both_agents_play_with_the_cards_they_are_given(cards):
    kinds = ["cognitive", "baseline", "llm", "rulebot", "rulebot", "rulebot"]
    setup = scripted_setup(cards=cards)
    host = asyncio.run(play_one(make_rules("official", 6), kinds, 2, setups=setup, probes=True))
    roles = host.engine.roles
    meant = {role: role_card(role, cards) for role in Role}
    other = IMPROVED if cards == "paper" else PAPER
    seen = set()
    for call in (r for r in host.tracer.records if r.type == "llm_call" and r.seat in (1, 2, 3)):
        system = call.messages[0].content
        card = meant[roles[call.seat]]
        assert card["goal"] in system and card["introduction"] in system, (call.seat, call.name)
        if call.part not in ("suggestions", "strategy", "other_roles"):
            assert card["strategy"] in system
        assert other[roles[call.seat]]["strategy"] not in system
        seen.add((call.seat, call.stage))
    assert {(1, "module"), (2, "agent"), (3, "agent"), (3, "probe")} <= seen


def test_an_experiment_sets_cards_per_agent_and_an_unknown_set_is_one_line(tmp_path):
    text = """\
name: t
model: scripted
agents:
  ours: {kind: cognitive, cards: improved}
  base: {kind: baseline}
  bots: {kind: rulebot}
sides: {good: ours, evil: base}
"""
    path = tmp_path / "cards.yaml"
    path.write_text(text)
    exp = next(iter(load_experiments(path).values()))
    setups = series_setups(exp, tmp_path / "series", ClientPool())
    assert setups["ours"].cards == "improved" and setups["base"].cards == "paper"
    assert setups["ours"].meta()["cards"] == "improved"
    path.write_text(text.replace("cards: improved", "cards: fancy"))
    with pytest.raises(ValueError) as err:
        load_experiments(path)
    message = str(err.value)
    assert "\n" not in message and "agents.ours.cards" in message and "'fancy'" in message
    assert "improved, paper" in message
    path.write_text(text.replace("{kind: rulebot}", "{kind: rulebot, cards: paper}"))
    with pytest.raises(ValueError, match="agents.bots: cards: agent kind 'rulebot' reads no role cards"):
        load_experiments(path)
