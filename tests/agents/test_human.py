"""The human seat: what it is shown, how its typed lines become legal actions, and the end of its input."""

from __future__ import annotations

import asyncio
import io

import pytest
from pydantic import ValidationError

from avalon_agents.agents import make_agent
from avalon_agents.agents.human import HumanAgent, InputEnded, Terminal, read_answer
from avalon_agents.core import (
    ActionRequest,
    Assassinate,
    IllegalAction,
    ProposeTeam,
    QuestCard,
    RequestKind,
    Role,
    make_rules,
)
from avalon_agents.core.events import GameStarted, NightInfoRevealed, RoleAssigned
from avalon_agents.decisions.kinds import instruct
from avalon_agents.extract.extractor import Extractor

RULES = make_rules("official", 6)


def seat_with(lines: list[str], seat: int = 3) -> tuple[HumanAgent, io.StringIO]:
    shown = io.StringIO()
    terminal = Terminal(io.StringIO("".join(line + "\n" for line in lines)), shown)
    return make_agent("human", seat=seat, seed=0, terminal=terminal), shown


def answer(agent: HumanAgent, request: ActionRequest):
    return asyncio.run(agent.act(request, instruct(request, RULES)))


def test_an_illegal_team_is_asked_again_with_the_reason_and_the_legal_answer_is_used():
    request = ActionRequest(seat=3, kind=RequestKind.PROPOSE, quest=1, attempt=1, options=(1, 2, 3, 4, 5, 6),
                            team_size=2)
    agent, shown = seat_with(["Player 1", "I take myself and Player 5."])
    reply = answer(agent, request)
    assert reply.action == ProposeTeam(team=(3, 5)) and reply.source == "rule"
    assert reply.text == "I take myself and Player 5."
    out = shown.getvalue()
    assert out.count(instruct(request, RULES)) == 2  # asked, then asked again
    assert "Your answer could not be used: team size: quest 1 needs exactly 2 players, got 1." in out
    assert 'name 2 players as "Player N", from Player 1, Player 2, Player 3, Player 4, Player 5 and Player 6' in out


def test_an_unclear_vote_and_a_good_seats_fail_card_are_asked_again():
    vote = ActionRequest(seat=3, kind=RequestKind.VOTE, quest=1, attempt=1, team=(1, 2))
    agent, shown = seat_with(["hmm, maybe", "reject, I doubt Player 2"])
    assert answer(agent, vote).action.approve is False
    assert "could not be used: no clear answer" in shown.getvalue()
    assert '("approve" or "reject")' in shown.getvalue()

    card = ActionRequest(seat=3, kind=RequestKind.QUEST, quest=1, attempt=1, team=(3, 4), can_fail=False)
    agent, shown = seat_with(["fail", "success"])
    assert answer(agent, card).action == QuestCard(success=True)
    assert "good cannot fail: seat 3 may only play a success card" in shown.getvalue()
    assert '"success" (good can only succeed)' in shown.getvalue()


def test_a_speech_over_the_cap_is_asked_again_as_a_programs_is():
    """A person at the terminal has the speech cap a program and the web table have (decisions.kinds.MAX_SPEECH):
    a longer speech is asked again naming it; one at the cap is said as typed."""
    from avalon_agents.decisions.kinds import MAX_SPEECH

    speak = ActionRequest(seat=3, kind=RequestKind.SPEAK, quest=1, attempt=1)
    agent, shown = seat_with(["x" * (MAX_SPEECH + 1), "y" * MAX_SPEECH])
    assert answer(agent, speak).action.text == "y" * MAX_SPEECH
    assert f"a speech has at most {MAX_SPEECH} characters, not {MAX_SPEECH + 1}" in shown.getvalue()
    assert read_answer("", speak).text == ""  # nothing to add


def test_the_assassin_may_pass_only_where_the_rules_allow():
    request = ActionRequest(seat=3, kind=RequestKind.ASSASSINATE, quest=2, attempt=1, options=(1, 2, 4),
                            may_pass=True)
    agent, shown = seat_with(["pass"])
    assert answer(agent, request).action == Assassinate(target=None)
    assert 'name one of Player 1, Player 2 and Player 4 as "Player N", or "pass"' in shown.getvalue()
    agent, shown = seat_with(["pass", "Player 3", "Player 4 is Merlin"])
    final = ActionRequest(seat=3, kind=RequestKind.ASSASSINATE, quest=3, attempt=1, options=(1, 2, 4))
    assert answer(agent, final).action == Assassinate(target=4)
    assert shown.getvalue().count("could not be used") == 2
    assert "assassination target: seat 3 cannot be named" in shown.getvalue()


def test_the_end_of_input_names_the_seat_and_the_request():
    agent, _ = seat_with(["maybe"])
    request = ActionRequest(seat=3, kind=RequestKind.VOTE, quest=1, attempt=1, team=(1, 2))
    with pytest.raises(InputEnded, match=r"^human: the input ended before the game did \(Player 3 was asked to vote\)"):
        answer(agent, request)


def test_the_seat_is_shown_its_role_card_and_its_night_information():
    agent, shown = seat_with([])
    asyncio.run(agent.observe([
        GameStarted(seq=1, quest=0, attempt=0, rules=RULES),
        RoleAssigned(seq=2, quest=0, attempt=0, visible_to=(3,), seat=3, role=Role.MERLIN),
        NightInfoRevealed(seq=3, quest=0, attempt=0, visible_to=(3,), seat=3, seats=(2, 5), known_as="evil"),
    ]))
    out = shown.getvalue()
    assert "You are Player 3, and your role is Merlin." in out
    assert "Night: you see that Player 2 and Player 5 are evil." in out


def test_a_human_seat_needs_a_terminal_and_never_plays_in_runs():
    with pytest.raises(ValueError, match=r"^seats: a 'human' seat needs a terminal"):
        make_agent("human", seat=1, seed=0)
    from avalon_agents.experiments.config import AgentSpec

    with pytest.raises(ValidationError, match="is a person"):
        AgentSpec(kind="human")


def test_the_extractor_records_a_human_answer_as_read_by_the_rule_parse():
    request = ActionRequest(seat=3, kind=RequestKind.VOTE, quest=1, attempt=1, team=(1, 2))
    agent, _ = seat_with(["approve"])
    reply = answer(agent, request)
    extraction = asyncio.run(Extractor().extract(request, reply))
    assert extraction.method == "rule" and extraction.valid and extraction.action.approve is True


@pytest.mark.parametrize("typed, read", [("aprove", True), ("rejct", False), ("Apprve.", True), ("REJECT", False)])
def test_a_misspelt_vote_is_read_as_the_word_it_is_near(typed, read):
    request = ActionRequest(seat=1, kind=RequestKind.VOTE, quest=1, attempt=1, team=(1, 2))
    assert read_answer(typed, request).approve is read


@pytest.mark.parametrize("typed", ["maybe", "xyz", "approve reject", "a"])
def test_an_answer_near_no_word_or_near_two_is_asked_again(typed):
    request = ActionRequest(seat=1, kind=RequestKind.VOTE, quest=1, attempt=1, team=(1, 2))
    with pytest.raises(IllegalAction):
        read_answer(typed, request)
