"""What is learned from a game names roles, never seats (`name_roles`): every spelling of a seat reference, lists
of them, and no false positives on the game's other numbers."""

from __future__ import annotations

import re

import pytest

from avalon_agents.core.types import Role
from avalon_agents.stores.book import Experience, experience_without_seats, name_roles

ROLES = {1: Role.MERLIN, 2: Role.PERCIVAL, 3: Role.LOYAL_SERVANT, 4: Role.LOYAL_SERVANT, 5: Role.MORGANA,
         6: Role.ASSASSIN}

# A seat named in any spelling, written independently of name_roles' own pattern: what must never be carried
# from one game into the next.
NAMES_A_SEAT = re.compile(
    r"\b(?:players?|seats?)\s*(?:#|no\.|number)?\s*[-_]?\s*(?:\d|one\b|two\b|three\b|four\b|five\b|six\b)"
    r"|\bp\s*#?\d{1,2}\b", re.IGNORECASE)


@pytest.mark.parametrize(("text", "named"), [
    ("Player 5 failed the quest.", "Morgana failed the quest."),
    ("PLAYER 5 failed the quest.", "Morgana failed the quest."),
    ("player 5 failed the quest.", "Morgana failed the quest."),
    ("Player5 failed the quest.", "Morgana failed the quest."),
    ("Then player #5 failed the quest.", "Then Morgana failed the quest."),
    ("Then player no. 5 and player number 6 failed it.", "Then Morgana and the Assassin failed it."),
    ("Watch P5 closely.", "Watch Morgana closely."),
    ("Watch p6 closely.", "Watch the Assassin closely."),
    ("Trust seat 1.", "Trust Merlin."),
    ("Trust Seat #2.", "Trust Percival."),
    ("Player-6 named Merlin.", "The Assassin named Merlin."),
    ("Then Player Three spoke.", "Then a Loyal Servant spoke."),
    ("Player 6's vote gave it away.", "The Assassin's vote gave it away."),
    ("Players 5 and 6 were evil.", "Morgana and the Assassin were evil."),
    ("I think Players 2, 5 and 6 lied.", "I think Percival, Morgana and the Assassin lied."),
    ("I think Players 2, 5, and 6 lied.", "I think Percival, Morgana and the Assassin lied."),
    ("Seats 1 and 2 were good.", "Merlin and Percival were good."),
    ("Suspect players 5 or 6.", "Suspect Morgana or the Assassin."),
    ("Suspect Players 5 & 6.", "Suspect Morgana and the Assassin."),
    ("P5/P6 voted together.", "Morgana/the Assassin voted together."),
    ("Players 1-2 were good.", "Merlin and Percival were good."),
    ("Players 3 and 4 trusted Merlin.", "Two Loyal Servants trusted Merlin."),
    ("Players 5 and 9 failed it.", "Morgana and a player failed it."),
    ("Player 9 said nothing.", "A player said nothing."),
    ("Merlin (Player 1) stayed quiet; Player 6 (Assassin) guessed.", "Merlin stayed quiet; the Assassin guessed."),
    ("The player in seat 5 lied.", "Morgana lied."),
    ("Player 1 and Player 10 agreed.", "Merlin and a player agreed."),
])
def test_every_spelling_of_a_seat_becomes_its_role(text, named):
    assert name_roles(text, ROLES) == named
    assert not NAMES_A_SEAT.search(named), named


@pytest.mark.parametrize("text", [
    "Three quests succeeded and 2 fails came on Quest 3.",
    "In round 4 the team of 3 was approved (3) times: 5 of 6 votes.",
    "Each player one chance; every player gets a vote.",
    "A 6-player game has 2 evil players.",
    "P2P, MP3 and Q3 are not seats.",
    "50% of the votes; 2 rejections in a row.",
])
def test_other_numbers_stay(text):
    assert name_roles(text, ROLES) == text


def test_a_count_after_a_seat_stays_a_count():
    assert name_roles("Player 5 and 2 others failed.", ROLES) == "Morgana and 2 others failed."
    assert name_roles("Trust Player 1, 4 quests later too.", ROLES) == "Trust Merlin, 4 quests later too."
    assert name_roles("Player 6 voted 3 times.", ROLES) == "The Assassin voted 3 times."
    assert name_roles("Player 5 and 1 other failed.", ROLES) == "Morgana and 1 other failed."
    # a verb after the last seat of a list is no count
    assert name_roles("Players 5 and 6 fail quests; players 1 and 2 vote reject.", ROLES) == \
        "Morgana and the Assassin fail quests; Merlin and Percival vote reject."


def test_a_sentence_begins_with_a_capital():
    assert name_roles("Player 6 won. player 3 lost", ROLES) == "The Assassin won. A Loyal Servant lost"
    assert name_roles("1. player 4 should lead", ROLES) == "1. A Loyal Servant should lead"
    assert name_roles("I saw player 4", ROLES) == "I saw a Loyal Servant"


def test_roles_of_larger_games():
    roles = {1: Role.MERLIN, 2: Role.MINION, 3: Role.MINION, 4: Role.MORDRED, 5: Role.OBERON}
    assert name_roles("Players 2 and 3 hid; P4 and seat 5 too.", roles) == \
        "Two Minions of Mordred hid; Mordred and Oberon too."


def test_every_text_of_an_experience_is_named_by_role():
    learned = experience_without_seats(Experience(
        strategy="Lead with P1.", suggestions="1. Players 5 and 6 fail quests.", other_roles="seat 2: loud",
        reflection=None), ROLES)
    assert learned == Experience(strategy="Lead with Merlin.", suggestions="1. Morgana and the Assassin fail quests.",
                                 other_roles="Percival: loud", reflection=None)
