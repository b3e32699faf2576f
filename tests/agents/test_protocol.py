"""The seat protocol's messages (agents.protocol, docs/seats.md): version 1, every message names its game and seat,
and `start` carries the game's setup as data, every RuleSet field in it."""

from __future__ import annotations

import json

import pytest

from avalon_agents.agents import protocol
from avalon_agents.core import make_rules
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role

CHANGED = {  # a RuleSet field, and a value other than the 7-player official preset's
    "name": "house",
    "players": 7,  # the preset's own: its own check below
    "roles": ("Merlin", "Percival", "Loyal Servant", "Loyal Servant", "Morgana", "Assassin", "Mordred"),
    "assassin": Role.MORDRED,
    "quest_sizes": (3, 3, 3, 4, 4),
    "fails_required": (1, 2, 1, 2, 1),
    "points_to_win": 2,
    "approve_on_tie": True,
    "votes_public": False,
    "proposal_order": "discuss_then_propose",
    "max_proposals": 4,
    "on_last_rejection": "leader_assigns",
    "assassination": "after_any_quest",
    "assassin_may_pass": True,
    "good_may_fail": True,
    "first_leader": 3,
    "lady_of_the_lake": True,
}
NO_ASSASSIN = ("Merlin", "Percival", "Loyal Servant", "Loyal Servant", "Morgana", "Mordred", "Minion of Mordred")


def test_every_ruleset_field_reaches_setup():
    """A field added to RuleSet must reach programs: the test names a changed value for every field, and each one
    changes `setup`."""
    assert set(CHANGED) == set(RuleSet.model_fields), "name a changed value for the new RuleSet field here"
    base = make_rules("official", 7)
    for field, value in CHANGED.items():
        update = {field: value, **({"roles": NO_ASSASSIN} if field == "assassin" else {})}
        changed = RuleSet(**{**base.model_dump(), **update})
        assert field in protocol.setup(changed), field
        if field != "players":
            assert protocol.setup(changed)[field] != protocol.setup(base)[field], field
    assert set(protocol.setup(base)) == set(RuleSet.model_fields) | {"sides"}


def test_setup_says_the_roles_team_sizes_fails_and_who_strikes():
    rules = make_rules("official", 7, lady_of_the_lake=True)
    setup = protocol.setup(rules)
    assert setup["players"] == 7 and setup["name"] == "official"
    assert setup["roles"] == [r.value for r in rules.roles]
    assert setup["quest_sizes"] == [2, 3, 3, 4, 4] and setup["fails_required"] == [1, 1, 1, 2, 1]
    assert setup["max_proposals"] == 5 and setup["assassin"] == "Assassin"
    assert setup["sides"] == {"Merlin": "good", "Percival": "good", "Loyal Servant": "good", "Morgana": "evil",
                              "Assassin": "evil", "Minion of Mordred": "evil"}
    assert setup["lady_of_the_lake"] == {"first_holder": None, "after_quests": [2, 3, 4]}  # the first leader drawn
    fixed = rules.model_copy(update={"first_leader": 1})
    assert protocol.setup(fixed)["lady_of_the_lake"]["first_holder"] == 7  # the seat the lead passes from
    assert protocol.setup(make_rules("official", 6))["lady_of_the_lake"] is None
    no_merlin = make_rules("official", 5, ["loyal_servant", "percival", "loyal_servant", "morgana", "assassin"])
    assert protocol.setup(no_merlin)["assassin"] is None  # nobody strikes
    other = make_rules("official", None, NO_ASSASSIN, "mordred")
    assert protocol.setup(other)["assassin"] == "Mordred"
    json.dumps(setup)  # plain JSON


def test_every_message_carries_the_protocol_game_and_seat():
    from avalon_agents.core.actions import ActionRequest, RequestKind
    from avalon_agents.core.events import GameResult, SpeechGiven
    from avalon_agents.core.types import EndReason, Team

    rules = make_rules("official", 6)
    start = protocol.start("runs/x/game-00001", 3, Role.MERLIN, rules, "You are Merlin.")
    assert start["protocol"] == protocol.PROTOCOL == 1 and start["role"] == "Merlin"
    assert start["setup"] == protocol.setup(rules) and start["system"] == "You are Merlin."
    request = ActionRequest(seat=3, kind=RequestKind.VOTE, quest=1, attempt=1, team=(1, 3))
    result = GameResult(winner=Team.GOOD, reason=EndReason.ASSASSIN_MISSED, roles=dict(zip(rules.seats, rules.roles)),
                        quests=(), proposals=1)
    messages = [start,
                protocol.event("runs/x/game-00001", 3, SpeechGiven(seq=5, quest=1, attempt=1, seat=2, text="hi"),
                               "Player 2 says: hi"),
                protocol.request_message("runs/x/game-00001", 3, "3-1", request, "Vote."),
                protocol.end("runs/x/game-00001", 3, result)]
    assert [m["type"] for m in messages] == ["start", "event", "request", "end"]
    for m in messages:
        assert m["game"] == "runs/x/game-00001" and m["seat"] == 3
        assert json.loads(protocol.dumps(m)) == m


@pytest.mark.parametrize("kind", ["memory", "recorded", "in a run"])
def test_the_game_id_is_the_tracers(tmp_path, kind):
    from avalon_agents.agents.external import ExternalAgent
    from avalon_agents.records import GameRecorder, MemoryTracer
    from avalon_agents.records.run_record import write_run_record

    run = write_run_record(tmp_path, "play", "ids") if kind == "in a run" else None
    tracer = MemoryTracer() if kind == "memory" else GameRecorder(tmp_path / "game-00001")
    agent = ExternalAgent(seat=2, command=["true"], tracer=tracer)
    assert agent.game == tracer.game
    if kind == "in a run":
        assert agent.game == f"{run.id}/game-00001" and len(run.id) == 12
    elif kind == "recorded":  # no run.json above it: its directory
        assert agent.game == (tmp_path / "game-00001").as_posix()
    else:
        run_id, game = agent.game.split("/")
        assert len(run_id) == 12 and game.startswith("memory-")
        assert MemoryTracer().game.startswith(f"{run_id}/memory-") and MemoryTracer().game != tracer.game


def test_vote_and_quest_requests_carry_their_team_and_a_proposal_none():
    from avalon_agents.core.actions import ActionRequest, RequestKind

    def message(kind: RequestKind, **fields):
        request = ActionRequest(seat=3, kind=kind, quest=2, attempt=1, **fields)
        return protocol.request_message("g", 3, "3-1", request, "...")

    assert message(RequestKind.VOTE, team=(1, 3, 5))["team"] == [1, 3, 5]
    assert message(RequestKind.QUEST, team=(3, 4), can_fail=True)["team"] == [3, 4]
    assert message(RequestKind.SPEAK, team=(2, 6))["team"] == [2, 6]  # a speech about a proposed team
    assert "team" not in message(RequestKind.PROPOSE, options=(1, 2, 3, 4, 5, 6), team_size=3)
    assert message(RequestKind.SPEAK)["legal"] == {"max_chars": 1000}


@pytest.mark.parametrize("kind, action, want", [
    ("vote", {"vote": "APPROVE"}, "approve=True"), ("vote", {"vote": " Reject "}, "approve=False"),
    ("quest", {"card": "FAIL"}, "success=False"), ("quest", {"card": "Success"}, "success=True"),
    ("vote", '{"vote": "REJECT"}', "approve=False"), ("quest", "FAIL", "success=False")])
def test_options_are_read_in_any_case(kind, action, want):
    from avalon_agents.core.actions import ActionRequest, RequestKind

    request = ActionRequest(seat=3, kind=RequestKind(kind), quest=1, attempt=1, team=(3, 4), can_fail=True)
    answer = protocol.Answer(id="3-1", action=action) if isinstance(action, dict) else protocol.Answer(id="3-1",
                                                                                                      text=action)
    assert want in repr(protocol.read_answer(answer, request))


def test_a_speech_over_the_cap_is_illegal_naming_it():
    from avalon_agents.core.actions import ActionRequest, RequestKind
    from avalon_agents.decisions.kinds import MAX_SPEECH

    request = ActionRequest(seat=3, kind=RequestKind.SPEAK, quest=1, attempt=1)
    for answer in (protocol.Answer(id="3-1", action={"text": "é" * MAX_SPEECH}),
                   protocol.Answer(id="3-1", text="é" * MAX_SPEECH)):
        assert protocol.read_answer(answer, request).text == "é" * MAX_SPEECH  # characters, not bytes
    for answer in (protocol.Answer(id="3-1", action={"text": "x" * (MAX_SPEECH + 1)}),
                   protocol.Answer(id="3-1", text="x" * (MAX_SPEECH + 1))):
        with pytest.raises(protocol.ProtocolError, match=f"at most {MAX_SPEECH} characters, not {MAX_SPEECH + 1}"):
            protocol.read_answer(answer, request)
