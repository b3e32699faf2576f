"""Belief: the table's evidence states are shared by the bots that reach them and freed with them."""

from __future__ import annotations

import gc
from itertools import combinations

import pytest

from avalon_agents.agents.belief import Belief, mask_of


def test_bots_seeing_the_same_evidence_share_one_state_and_its_views():
    a, b = Belief(6, 2), Belief(6, 2)
    for belief in (a, b):
        belief.see_proposal(1, mask_of((1, 2)))
        belief.see_quest(mask_of((1, 2)), fails=1)
    assert a.node is b.node
    assert a.view(private=False) is b.view(private=False)
    b.restrict(mask_of((3,)), evil=0)  # b's private mask differs: its own view, the public one still shared
    assert a.view(private=True) is not b.view(private=True)
    b.see_votes(mask_of((3, 4)), mask_of((1, 2, 3)), mask_of((4, 5, 6)))
    assert a.node is not b.node and b.node.parent is a.node


def test_states_are_freed_when_no_belief_is_left_at_or_after_them():
    a = Belief(7, 3)
    root = a.node
    a.see_quest(mask_of((1, 2)), fails=0)
    assert len(root.children) == 1
    del a
    gc.collect()
    assert len(root.children) == 0  # a finished game's states do not pile up across games


def test_weights_follow_the_evidence():
    belief = Belief(5, 2)
    belief.see_quest(mask_of((1, 2)), fails=2)  # both evil
    assert belief.p_clean(mask_of((1,))) == 0.0
    assert belief.p_clean(mask_of((3, 4, 5))) == pytest.approx(1.0)
    assert belief.suspicion()[1] == pytest.approx(1.0)
    assert belief.evidence == ((0, mask_of((1, 2)), 2),)


def test_p_clean_matches_a_count_over_the_worlds():
    belief = Belief(6, 2)
    belief.see_votes(mask_of((1, 4)), mask_of((1, 2, 4)), mask_of((3, 5, 6)))
    belief.restrict(mask_of((2,)), evil=0)
    weights = dict(zip(belief.worlds, belief.view(private=True).weights))
    for team in map(mask_of, combinations(range(1, 7), 3)):
        expected = sum(w for world, w in weights.items() if not world & team)
        assert belief.p_clean(team) == pytest.approx(expected)
        assert belief.p_clean(team) == belief.p_clean(team)  # the memo returns what it computed
