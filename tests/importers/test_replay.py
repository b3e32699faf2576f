"""The shared replay helper under the paper preset (discussion before the proposal, as Avalon-NLU's games)."""

from __future__ import annotations

import pytest

from avalon_agents.core.actions import RequestKind
from avalon_agents.core.rules import make_rules
from avalon_agents.importers import NO_SPEECH, Replay, ReplayError

DEAL = make_rules("paper").roles  # Merlin, Percival, servant, servant, Morgana, Assassin in seats 1..6


def test_recorded_speeches_go_in_and_unrecorded_ones_are_empty():
    replay = Replay(make_rules("paper"), DEAL, first_leader=2)
    assert replay.asks is RequestKind.SPEAK
    replay.speak(2, "Take me and Player 3.")
    replay.speak(3, "Fine by me.")
    replay.propose(2, [3, 2])  # the seats 4, 5, 6 and 1 said nothing
    speeches = [(e.seat, e.text) for e in replay.engine.events if e.type == "speech"]
    assert speeches == [(2, "Take me and Player 3."), (3, "Fine by me."), (4, NO_SPEECH), (5, NO_SPEECH),
                        (6, NO_SPEECH), (1, NO_SPEECH)]
    assert replay.vote({1, 2, 3, 4}) is True
    assert replay.quest({2: True, 3: True}).success
    assert replay.asks is RequestKind.ASSASSINATE  # the paper's Assassin may strike after any quest
    replay.assassinate(None)
    with pytest.raises(ReplayError, match=r"^unfinished game: the record stops at quest 2\.1"):
        replay.result()


def test_a_speech_out_of_turn_or_a_wrong_kind_is_refused():
    replay = Replay(make_rules("paper"), DEAL, first_leader=2)
    with pytest.raises(ReplayError, match=r"^quest 1\.1: the rules refuse it \(turn: seat 4"):
        replay.speak(4, "me first")
    replay.propose(2, [2, 3])
    with pytest.raises(ReplayError, match=r"^quest 1\.1: the record has a quest, but the rules ask for a vote"):
        replay.quest({2: True, 3: True})
    with pytest.raises(ReplayError, match="first leader: seat 7"):
        Replay(make_rules("paper"), DEAL, first_leader=7)
