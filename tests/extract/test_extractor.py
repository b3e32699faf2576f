"""The extractor's stages in order: typed -> JSON/rule -> LLM -> validation -> re-ask -> fallback."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from avalon_agents.core.actions import ActionRequest, Assassinate, ProposeTeam, QuestCard, Reply, RequestKind, Vote
from avalon_agents.extract import Extractor
from avalon_agents.llm import LLMClient, ModelSettings, ScriptedChatModel
from avalon_agents.records import MemoryTracer
from tests.helpers import avalon

SEATS = (1, 2, 3, 4, 5, 6)


def request(kind: RequestKind, **kw) -> ActionRequest:
    defaults = {"seat": 2, "quest": 1, "attempt": 1, "options": SEATS}
    if kind is RequestKind.PROPOSE:
        defaults["team_size"] = 3
    if kind is RequestKind.ASSASSINATE:
        defaults["options"] = (1, 3, 4, 5, 6)
    return ActionRequest(kind=kind, **{**defaults, **kw})


def extract(req, text, *, llm=None, again=(), typed=None, seed=0):
    """Run one extraction; `again` are the agent's answers when asked again (and the reasons it got)."""
    answers = list(again)
    reasons: list[str] = []

    async def ask_again(reason: str) -> Reply:
        reasons.append(reason)
        return Reply(text=answers.pop(0))

    tracer = MemoryTracer()
    extractor = Extractor(llm=llm, tracer=tracer, seed=seed)
    action = asyncio.run(extractor(req, Reply(text=text, action=typed), ask_again, "the instruction"))
    [record] = tracer.records
    return action, record, reasons


def scripted(answer):
    """An LLM extractor that answers `answer(prompt text, kwargs)`."""
    model = ScriptedChatModel(respond=lambda messages, kwargs: answer(str(messages[-1].content), kwargs))
    return LLMClient(settings=ModelSettings(spec="scripted", temperature=0), model=model), model


# ---------------------------------------------------------------- the stages


def test_typed_action_is_used_as_is():
    action, record, _ = extract(request(RequestKind.VOTE), "whatever", typed=Vote(approve=False))
    assert action == Vote(approve=False) and record.method == "typed" and record.valid is True


def test_json_decision_is_read_before_words():
    action, record, _ = extract(request(RequestKind.PROPOSE), '{"reason": "Player 6 is odd", "team": [1, 2, 5]}')
    assert action == ProposeTeam(team=(1, 2, 5)) and record.method == "json"


@pytest.mark.parametrize(("kind", "text", "expected"), [
    (RequestKind.PROPOSE, "I propose myself, Player 4 and Player 6.", ProposeTeam(team=(2, 4, 6))),
    (RequestKind.VOTE, "I don't disagree.", Vote(approve=True)),
    (RequestKind.QUEST, "Success, of course.", QuestCard(success=True)),
    (RequestKind.ASSASSINATE, "Player 5 is Merlin.", Assassinate(target=5)),
])
def test_rule_stage_per_kind(kind, text, expected):
    action, record, _ = extract(request(kind, can_fail=True), text)
    assert action == expected and record.method == "rule" and record.answers == 1 and record.valid


def test_llm_stage_reads_what_the_rules_cannot():
    llm, model = scripted(lambda prompt, kw: '{"vote": "reject"}')
    action, record, _ = extract(request(RequestKind.VOTE), "My heart says one thing, my head another; the head wins.",
                                llm=llm)
    assert action == Vote(approve=False) and record.method == "llm" and record.valid
    [call] = model.calls
    prompt = call["messages"][-1]["content"]
    assert "My heart says one thing" in prompt and "the instruction" in prompt
    assert "schema" in json.dumps(call["kwargs"]["response_format"])  # structured output asked for


def test_llm_stage_gives_few_shot_examples_per_kind():
    for kind in (RequestKind.PROPOSE, RequestKind.VOTE, RequestKind.QUEST, RequestKind.ASSASSINATE):
        llm, model = scripted(lambda prompt, kw: "{}")
        extract(request(kind), "hmm", llm=llm, again=["hmm", "hmm"])
        prompt = model.calls[0]["messages"][-1]["content"]
        assert prompt.lower().count("answer:") >= 3, kind  # examples, then the real one


def test_llm_answer_that_is_illegal_leads_to_a_reask_with_the_reason():
    llm, _ = scripted(lambda prompt, kw: '{"team": [1, 2]}' if "hmm" in prompt else "{}")
    action, record, reasons = extract(request(RequestKind.PROPOSE), "hmm", llm=llm,
                                      again=["Player 1, Player 3 and Player 5."])
    assert action == ProposeTeam(team=(1, 3, 5))
    assert record.method == "rule" and record.answers == 2 and record.valid is False
    assert "exactly 3" in reasons[0] and record.texts == ("hmm", "Player 1, Player 3 and Player 5.")


def test_a_failing_llm_extractor_does_not_stop_the_game():
    llm, _ = scripted(lambda prompt, kw: None)  # raises UnexpectedCall: the call fails
    action, record, _ = extract(request(RequestKind.VOTE), "hmm", llm=llm, again=["hmm", "hmm"])
    assert action == Vote(approve=True) and record.method == "fallback" and record.answers == 3


# ---------------------------------------------------------------- the paper's fallbacks


def test_unclear_vote_approves_after_the_reasks():
    action, record, reasons = extract(request(RequestKind.VOTE), "hmm", again=["still thinking", "maybe"])
    assert action == Vote(approve=True) and record.method == "fallback"
    assert record.answers == 3 and len(reasons) == 2 and record.valid is False


@pytest.mark.parametrize(("can_fail", "expected"), [(True, False), (False, True)])
def test_unclear_quest_card_fails_for_evil_and_succeeds_for_good(can_fail, expected):
    action, record, _ = extract(request(RequestKind.QUEST, can_fail=can_fail), "hmm", again=["hmm", "hmm"])
    assert action == QuestCard(success=expected) and record.method == "fallback"


def test_a_good_player_asking_to_fail_is_told_why_and_then_plays_success():
    action, record, reasons = extract(request(RequestKind.QUEST, can_fail=False), "Fail.", again=["Fail!", "fail"])
    assert action == QuestCard(success=True) and record.method == "fallback"
    assert "success" in reasons[0]


def test_too_many_players_are_truncated_at_once_in_the_order_named():
    action, record, reasons = extract(request(RequestKind.PROPOSE),
                                      '{"team": [5, 1, 6, 2]}', again=["never used"])
    assert action == ProposeTeam(team=(1, 5, 6)) and record.method == "fallback"
    assert record.answers == 1 and reasons == []


def test_too_few_players_are_asked_again_then_filled_at_random():
    teams = set()
    for seed in range(20):
        action, record, reasons = extract(request(RequestKind.PROPOSE), "Player 4.", again=["Player 4", "Player 4!"],
                                          seed=seed)
        assert record.method == "fallback" and record.answers == 3 and len(reasons) == 2
        assert 4 in action.team and len(set(action.team)) == 3
        teams.add(action.team)
    assert len(teams) > 1  # the fill is random (seeded)


def test_unclear_assassin_names_a_random_legal_target_or_passes_when_allowed():
    action, record, _ = extract(request(RequestKind.ASSASSINATE), "no idea", again=["no idea", "none"])
    assert action.target in (1, 3, 4, 5, 6) and record.method == "fallback"
    action, _, _ = extract(request(RequestKind.ASSASSINATE, may_pass=True), "no idea", again=["?", "?"])
    assert action == Assassinate(target=None)


def test_assassin_naming_themselves_is_asked_again():
    action, record, reasons = extract(request(RequestKind.ASSASSINATE), "I name myself.", again=["Player 3."])
    assert action == Assassinate(target=3) and record.answers == 2 and "cannot be named" in reasons[0]


# ---------------------------------------------------------------- avalon extract


def run(*args: str) -> subprocess.CompletedProcess:
    return avalon("extract", *args)


@pytest.mark.parametrize(("args", "expected"), [
    (["--kind", "team", "--team-size", "2", "--players", "10", "--text", "Player 1 and Player 10"],
     {"action": [1, 10], "method": "rule", "valid": True}),
    (["--kind", "vote", "--text", "I don't disagree"], {"action": True, "method": "rule", "valid": True}),
    (["--kind", "quest", "--text", "hmm", "--evil"], {"action": False, "method": "fallback", "valid": False}),
    (["--kind", "assassinate", "--seat", "5", "--text", "Player 2 is Merlin"],
     {"action": 2, "method": "rule", "valid": True}),
])
def test_extract_command_prints_json(args, expected):
    out = run(*args, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == expected


def test_extract_command_with_the_scripted_model_uses_the_llm_stage():
    out = run("--kind", "vote", "--text", "the head wins over the heart", "--model", "scripted", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["method"] == "llm" and isinstance(result["action"], bool)


def test_extract_command_bad_input_is_one_line():
    out = run("--kind", "team", "--team-size", "9", "--text", "x")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "team-size" in out.stderr
