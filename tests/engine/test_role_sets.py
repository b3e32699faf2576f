"""Any role set people play: legal games with a bot per seat, night information per the official cards, and the
assassination asked of the token holder exactly when Merlin is in the game."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avalon_agents.agents import make_agent
from avalon_agents.core import EndReason, RequestKind, Role, Team, make_rules
from avalon_agents.engine import AvalonEngine
from avalon_agents.host.host import play_game
from tests.helpers import Policy, drive, good_seats, seat_of
from tests.referee import referee
from tests.strategies import rule_sets


@settings(max_examples=60, deadline=None)
@given(rules=rule_sets(), seed=st.integers(0, 10_000), kind=st.sampled_from(["rulebot", "random"]))
@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_any_role_set_plays_a_legal_game(rules, seed, kind):
    agents = {s: make_agent(kind, seat=s, seed=seed + s) for s in rules.seats}
    result = play_game(rules, agents, seed)
    assert sorted(result.roles.values()) == sorted(rules.roles)
    assert result.assassin == next((s for s, r in result.roles.items() if r is rules.assassin_role), None)
    if Role.MERLIN not in rules.roles:
        assert result.assassin is None and result.reason not in (EndReason.MERLIN_ASSASSINATED,
                                                                   EndReason.ASSASSIN_MISSED)


@settings(max_examples=80, deadline=None)
@given(rules=rule_sets(), seed=st.integers(0, 10_000))
def test_night_follows_the_cards_and_the_holder_alone_assassinates(rules, seed):
    engine = AvalonEngine(rules, seed)
    roles = engine.roles
    info = {e.seat: e for e in engine.events if e.type == "night_info"}
    evil = {s for s, r in roles.items() if r.side is Team.EVIL}
    for seat, role in roles.items():
        if role is Role.MERLIN:
            want = {s for s in evil if roles[s] is not Role.MORDRED}
        elif role is Role.PERCIVAL:
            want = {s for s, r in roles.items() if r in (Role.MERLIN, Role.MORGANA)}
        elif role.side is Team.EVIL and role is not Role.OBERON:
            want = {s for s in evil if s != seat and roles[s] is not Role.OBERON}
        else:
            want = set()
        assert set(info[seat].seats) == want, (role, info[seat])
    asked: list = []

    def target(e, r):
        asked.append(r)
        return next(s for s in r.options if e.roles[s] is not Role.MERLIN)

    # good seats on every team, all approve: good completes three quests unless the assassination interrupts
    drive(engine, Policy(target=target, team=lambda e, r: good_seats(e)[: r.team_size]))
    referee(engine.events, rules)
    holder = rules.assassin_role
    assert bool(asked) == (holder is not None)
    assert all(r.kind is RequestKind.ASSASSINATE and roles[r.seat] is holder for r in asked)
    result = engine.result()
    assert result.winner is Team.GOOD and (result.assassination_target is not None) == (holder is not None)
    if rules.assassination == "end_of_game":
        assert result.reason is (EndReason.ASSASSIN_MISSED if holder else EndReason.THREE_SUCCESSES)


def test_the_cli_example_set_with_a_mordred_assassin():
    rules = make_rules(roles=["merlin", "percival", "loyal_servant", "loyal servant", "Morgana", "MORDRED", "minion"],
                       assassin="mordred")
    engine = AvalonEngine(rules, 4)
    mordred, merlin = seat_of(engine, Role.MORDRED), seat_of(engine, Role.MERLIN)
    assert engine.assassin == mordred
    night = {e.seat: e.seats for e in engine.events if e.type == "night_info"}
    assert mordred not in night[merlin]
    drive(engine, Policy())  # the default policy names Merlin
    assert engine.result().reason is EndReason.MERLIN_ASSASSINATED
    shot = next(e for e in engine.events if e.type == "assassination")
    assert (shot.assassin, shot.target) == (mordred, merlin)


@settings(max_examples=40, deadline=None)
@given(rules=rule_sets(), seed=st.integers(0, 1000), data=st.data())
def test_a_fixed_deal_of_a_custom_set_is_played_as_dealt(rules, seed, data):
    deal = data.draw(st.permutations(rules.roles))
    engine = AvalonEngine(rules, seed, deal=deal)
    assert [engine.roles[s] for s in rules.seats] == list(deal)
    assert engine.leader == AvalonEngine(rules, seed).leader  # the first leader still follows the seed
    drive(engine, Policy(target=lambda e, r: r.options[0]))
    referee(engine.events, rules)
