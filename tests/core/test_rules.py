"""RuleSet presets and validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from avalon_agents.core import Role, RuleSet, Team, make_rules
from avalon_agents.core.rules import QUEST_SIZES


@pytest.mark.parametrize("players", range(5, 11))
def test_official_tables(players):
    rules = make_rules("official", players)
    good = sum(r.side is Team.GOOD for r in rules.roles)
    assert (good, players - good) == {5: (3, 2), 6: (4, 2), 7: (4, 3), 8: (5, 3), 9: (6, 3), 10: (6, 4)}[players]
    assert rules.quest_sizes == QUEST_SIZES[players]
    assert rules.fails_required == ((1, 1, 1, 2, 1) if players >= 7 else (1, 1, 1, 1, 1))
    assert Role.MERLIN in rules.roles and Role.ASSASSIN in rules.roles


def test_six_player_official_matches_the_paper_roles():
    rules = make_rules("official", 6)
    assert sorted(r.value for r in rules.roles) == sorted(
        ["Merlin", "Percival", "Loyal Servant", "Loyal Servant", "Morgana", "Assassin"]
    )
    assert rules.quest_sizes == (2, 3, 4, 3, 4)
    assert (rules.approve_on_tie, rules.proposal_order, rules.on_last_rejection, rules.assassination) == (
        False, "propose_then_discuss", "evil_wins", "end_of_game")


def test_paper_preset_differs_only_where_the_paper_does():
    official, paper = make_rules("official", 6).model_dump(), make_rules("paper", 6).model_dump()
    changed = {k for k in official if official[k] != paper[k]}
    assert changed == {"name", "proposal_order", "on_last_rejection", "assassination", "assassin_may_pass"}
    assert paper["proposal_order"] == "discuss_then_propose" and paper["assassination"] == "after_any_quest"


def test_rules_are_frozen():
    with pytest.raises(ValidationError):
        make_rules().players = 7


@pytest.mark.parametrize(
    "preset,players,match",
    [("official", 4, "players"), ("official", 11, "players"), ("house", 6, "rules: unknown preset")],
)
def test_bad_presets(preset, players, match):
    with pytest.raises(ValueError, match=match):
        make_rules(preset, players)


@pytest.mark.parametrize(
    "change,field",
    [
        ({"roles": (Role.MERLIN,) * 6}, "roles"),
        ({"roles": (Role.MERLIN, Role.PERCIVAL, Role.LOYAL_SERVANT, Role.LOYAL_SERVANT, Role.MORGANA, Role.MINION)},
         "Assassin"),
        ({"quest_sizes": (2, 3, 9, 3, 4)}, "quest_sizes"),
        ({"fails_required": (1, 1, 1, 5, 1)}, "fails_required"),
        ({"first_leader": 9}, "first_leader"),
        ({"lady_of_the_lake": True}, "lady_of_the_lake: the Lady of the Lake takes 7 or more players, not 6"),
        ({"players": 4}, "players"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_custom_rules_name_the_field(change, field):
    with pytest.raises(ValidationError, match=field):
        RuleSet(**{**make_rules().model_dump(), **change})


@pytest.mark.parametrize("preset", ["official", "paper"])
@pytest.mark.parametrize("players", range(5, 11))
def test_the_lady_of_the_lake_is_off_by_default_and_takes_seven_players(preset, players):
    assert make_rules(preset, players).lady_of_the_lake is False
    if players < 7:
        with pytest.raises(ValueError) as refused:
            make_rules(preset, players, lady_of_the_lake=True)
        assert str(refused.value) == f"lady_of_the_lake: the Lady of the Lake takes 7 or more players, not {players}"
    else:
        rules = make_rules(preset, players, lady_of_the_lake=True)
        assert rules.lady_of_the_lake and rules.name == preset
        assert rules.model_dump() == {**make_rules(preset, players).model_dump(), "lady_of_the_lake": True}


def test_a_lady_answer_must_name_a_player_who_never_held_it():
    from avalon_agents.core import ACTION_ADAPTER, ActionRequest, Assassinate, Examine, IllegalAction, RequestKind

    assert ACTION_ADAPTER.validate_json('{"kind": "lady", "target": 5}') == Examine(target=5)
    request = ActionRequest(seat=3, kind=RequestKind.LADY, quest=2, attempt=1, options=(1, 4, 5, 6, 7))
    assert request.validate(Examine(target=5)) == Examine(target=5)
    for target in (3, 2, 8):  # the holder, a former holder, no seat
        with pytest.raises(IllegalAction, match=f"lady of the lake: seat {target} cannot be examined"):
            request.validate(Examine(target=target))
    with pytest.raises(IllegalAction, match="lady.target"):
        request.validate(Examine(target=True))
    with pytest.raises(IllegalAction, match="asked to lady, not to assassinate"):
        request.validate(Assassinate(target=5))


def test_actions_and_events_are_frozen_and_keyword_only():
    from dataclasses import FrozenInstanceError

    from avalon_agents.core.actions import ActionRequest, RequestKind, Speak
    from avalon_agents.core.events import EVENT_ADAPTER, SpeechGiven

    event = SpeechGiven(seq=3, quest=1, attempt=2, seat=4, text="hi")
    with pytest.raises(FrozenInstanceError):
        event.text = "forged"
    with pytest.raises(TypeError, match="text"):
        SpeechGiven(seq=3, quest=1, attempt=2, seat=4)
    with pytest.raises(TypeError):
        Speak("positional")
    assert event.visible_to == "all" and event.type == "speech"  # defaults of the base and of the class
    assert EVENT_ADAPTER.validate_json(event.to_json()) == event
    request = ActionRequest(seat=1, kind=RequestKind.VOTE, quest=1, attempt=1)
    assert (request.team, request.final, request.team_size) == ((), False, None)
