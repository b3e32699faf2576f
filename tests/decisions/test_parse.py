"""The whole-word rule parse: right answers where the text is clear, None (never a guess) where it is not."""

import pytest

from avalon_agents.decisions.parse import parse_quest, parse_target, parse_team, parse_vote, seats_named

# (text, speaker seat, team size, expected team or None)
TEAMS = [
    ("I propose Player 2 and Player 4.", 1, 2, (2, 4)),
    ("Player 1 and Player 10 should go.", 3, 2, (1, 10)),
    ("I propose Player 10 and Player 1", 3, 2, (1, 10)),
    ("Players 2, 3 and 5.", 1, 3, (2, 3, 5)),
    ("Players 2, 3 and 5.", 1, 2, None),  # three named for a team of two: unclear
    ("I choose myself and Player 3.", 2, 2, (2, 3)),
    ("Team: me and Player 5", 4, 2, (4, 5)),
    ("Player 2, Player 4, not Player 5.", 1, 2, (2, 4)),
    ("I'll take Player 3 and Player 6 without Player 1.", 2, 2, (3, 6)),
    ("Player 1, Player 1 and Player 2", 3, 2, (1, 2)),  # duplicates count once
    ("I propose Player 2 and Player 3 because Player 4 is not reliable.", 1, 2, (2, 3)),
    ("I propose Player 2 and Player 4 since Player 4 is not evil.", 1, 2, (2, 4)),
    ("Player 5 was suspicious. I propose Player 1 and Player 2.", 3, 2, (1, 2)),
    ("I propose P1 and P3.", 2, 2, (1, 3)),
    ("I pick player three and player five", 1, 2, (3, 5)),
    ("Let us send Players 1 & 6", 2, 2, (1, 6)),
    ("I am not sure yet, let me think about it.", 1, 2, None),
    ("", 1, 2, None),
    ("Player 1 is good.", 2, 2, None),  # one seat for a team of two
    ("I propose a team of Player 2, Player 3, and Player 4 instead of Player 5.", 1, 3, (2, 3, 4)),
    ("Player 12 and Player 2", 1, 2, (2, 12)),  # out of range kept: validation explains it
    ("I'd rather not include Player 3; I propose Player 4 and Player 6.", 1, 2, (4, 6)),
    ("My team is [1, 4, 5].", 2, 3, (1, 4, 5)),
    ("Players 11 and 1", 2, 2, (1, 11)),
    ("I propose Player 2, Player 3, Player 4, Player 5.", 1, 3, None),
]

VOTES = [
    ("I approve.", True),
    ("Approve", True),
    ("approve - the team looks clean", True),
    ("I agree with this team.", True),
    ("I don't disagree with this team.", True),
    ("Reject.", False),
    ("I reject this team.", False),
    ("I do not approve.", False),
    ("I don't agree with this choice.", False),
    ("I oppose this team.", False),
    ("I vote against the team.", False),
    ("No.", False),
    ("Yes.", True),
    ("No doubt about it, I approve.", None),  # "no" first, "approve" later: points both ways
    ("I approve. There is no reason to reject it.", True),
    ("I approve, though earlier I wanted to reject.", None),
    ("Yesterday was odd, but I support this team.", True),
    ("I never reject a first proposal.", True),
    ("Hmm, let me think about the team.", None),
    ("", None),
    ("I am in favor of this team.", True),
    ("**Reject**: Player 3 is suspicious.", False),
    ("I can't approve a team with Player 4 on it.", False),
    ("Knowing nothing, I support it.", True),
]

QUESTS = [
    ("Success.", True),
    ("I play success.", True),
    ("I will not fail this quest.", True),
    ("I won't sabotage.", True),
    ("Fail.", False),
    ("I play a fail card.", False),
    ("I will sabotage this quest.", False),
    ("I choose success, no fail from me.", True),
    ("Success or fail, hard to say.", None),
    ("I am thinking.", None),
    ("I want the quest to succeed.", True),
    ("I'll play failure.", False),
]

# (text, speaker, expected)
TARGETS = [
    ("I name Player 4 as Merlin.", 5, 4),
    ("Player 3 is not Merlin; Player 5 is Merlin.", 1, 5),
    ("I assassinate Player 10.", 1, 10),
    ("Player 1.", 2, 1),
    ("Player 2 or Player 3, I can't decide.", 1, None),
    ("Merlin must be Player 6, he steered every vote. Player 2 was just lucky.", 1, 6),
    ("I'm not sure who Merlin is.", 1, None),
    ("I target Player 3 and not Player 4.", 1, 3),
    ("Everyone except Player 2 looked confused; Player 2 is Merlin.", 1, 2),
]


@pytest.mark.parametrize(("text", "seat", "size", "expected"), TEAMS)
def test_team(text, seat, size, expected):
    assert parse_team(text, seat=seat, players=10, team_size=size) == expected


@pytest.mark.parametrize(("text", "expected"), VOTES)
def test_vote(text, expected):
    assert parse_vote(text) is expected


@pytest.mark.parametrize(("text", "expected"), QUESTS)
def test_quest(text, expected):
    assert parse_quest(text) is expected


@pytest.mark.parametrize(("text", "seat", "expected"), TARGETS)
def test_target(text, seat, expected):
    assert parse_target(text, seat=seat, players=10) == expected


def test_seats_named_keeps_order_drops_duplicates_and_negated():
    text = "Player 3, then myself, Player 3 again, and Player 10 but not Player 1"
    assert seats_named(text, seat=6, players=10) == [3, 6, 10]


def test_player_one_is_never_read_inside_player_ten():
    assert seats_named("Player 10", seat=2, players=10) == [10]
    assert seats_named("Player 1", seat=2, players=10) == [1]
