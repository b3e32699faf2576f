"""Night information per role, exactly as the role cards say."""

from __future__ import annotations

from collections import Counter

import pytest

from avalon_agents.core import Role, RuleSet, Team, make_rules
from avalon_agents.engine import AvalonEngine
from tests.helpers import seat_of


def night(engine: AvalonEngine) -> dict[int, object]:
    return {e.seat: e for e in engine.events if e.type == "night_info"}


@pytest.mark.parametrize("players", range(5, 11))
@pytest.mark.parametrize("seed", range(5))
def test_each_role_sees_what_its_card_says(players, seed):
    engine = AvalonEngine(make_rules("official", players), seed)
    info = night(engine)
    roles = engine.roles
    evil = sorted(s for s, r in roles.items() if r.side is Team.EVIL)
    merlin, percival, morgana = (seat_of(engine, r) for r in (Role.MERLIN, Role.PERCIVAL, Role.MORGANA))
    assert info[merlin].seats == tuple(evil) and info[merlin].known_as == "evil"
    assert info[percival].seats == tuple(sorted((merlin, morgana))) and info[percival].known_as == "merlin_or_morgana"
    for s in evil:
        assert info[s].seats == tuple(x for x in evil if x != s) and info[s].known_as == "evil_teammates"
    for s, r in roles.items():
        if r is Role.LOYAL_SERVANT:
            assert info[s].seats == () and info[s].known_as == "nothing"  # servants see nothing
        assert info[s].visible_to == (s,)
    assert sorted(info) == list(range(1, players + 1))  # every seat gets one
    role_cards = [e for e in engine.events if e.type == "role_assigned"]
    assert all(e.visible_to == (e.seat,) and e.role is roles[e.seat] for e in role_cards)


def test_mordred_hidden_from_merlin_and_oberon_unknown_to_evil():
    roles = (Role.MERLIN, Role.PERCIVAL, Role.LOYAL_SERVANT, Role.LOYAL_SERVANT, Role.LOYAL_SERVANT,
             Role.MORDRED, Role.ASSASSIN, Role.OBERON)
    rules = RuleSet(**{**make_rules("official", 8).model_dump(), "roles": roles})
    engine = AvalonEngine(rules, 11)
    info = night(engine)
    mordred, assassin, oberon = (seat_of(engine, r) for r in (Role.MORDRED, Role.ASSASSIN, Role.OBERON))
    merlin = seat_of(engine, Role.MERLIN)
    assert info[merlin].seats == tuple(sorted((assassin, oberon)))  # Mordred is hidden
    assert info[assassin].seats == (mordred,) and info[mordred].seats == (assassin,)  # Oberon unseen
    assert info[oberon].seats == () and info[oberon].known_as == "nothing"  # and Oberon sees nobody
    # Percival sees Merlin alone when there is no Morgana.
    assert info[seat_of(engine, Role.PERCIVAL)].seats == (merlin,)


def test_percival_pair_order_carries_no_information():
    """Over many seeds, Merlin is first in Percival's pair about half the time (it is sorted by seat)."""
    first_is_merlin = Counter()
    for seed in range(2000):
        engine = AvalonEngine(make_rules("official", 6), seed)
        pair = night(engine)[seat_of(engine, Role.PERCIVAL)].seats
        assert list(pair) == sorted(pair)
        first_is_merlin[engine.roles[pair[0]] is Role.MERLIN] += 1
    share = first_is_merlin[True] / 2000
    assert 0.45 < share < 0.55, share


def test_roles_and_first_leader_are_uniform_over_seeds():
    merlin_seats, leaders = Counter(), Counter()
    for seed in range(3000):
        engine = AvalonEngine(make_rules("official", 6), seed)
        merlin_seats[seat_of(engine, Role.MERLIN)] += 1
        leaders[engine.events[next(i for i, e in enumerate(engine.events) if e.type == "leader_chosen")].leader] += 1
    for counts in (merlin_seats, leaders):
        assert set(counts) == {1, 2, 3, 4, 5, 6}
        assert max(counts.values()) < 600 and min(counts.values()) > 400  # 500 expected each


def test_same_seed_same_deal_and_reset_replays():
    a, b = AvalonEngine(make_rules("paper", 7), 42), AvalonEngine(make_rules("paper", 7), 42)
    assert a.roles == b.roles
    first = [e.to_json() for e in a.events]
    a.reset()
    assert [e.to_json() for e in a.events] == first


def delivered_at_night(engine: AvalonEngine, seat: int) -> list[tuple]:
    """What a seat receives before quest 1, metadata included (seq, type, visibility, content)."""
    night = [e for e in engine.events if e.type in ("game_started", "role_assigned", "night_info")]
    return [(e.seq, e.to_json()) for e in night if e.visible(seat)]


@pytest.mark.parametrize(("players", "most"), [(n, 120) for n in range(5, 11)]
                         + [pytest.param(n, 3000, marks=pytest.mark.slow, id=f"{n}-thorough") for n in range(5, 11)])
def test_what_a_seat_receives_depends_only_on_what_it_may_know(players, most):
    """Over the deals of the roles to the seats (all of them up to `most`, else a sample of `most`), the events a
    seat gets at night are the same whenever its own role and night information are: their numbers and their
    existence reveal nothing about where the other roles sit."""
    import itertools
    import random

    rules = make_rules("official", players)
    deals = sorted(set(itertools.permutations(rules.roles)))
    if len(deals) > most:
        deals = random.Random(players).sample(deals, most)
    for seat in rules.seats:
        seen: dict[str, list[tuple]] = {}
        for deal in deals:
            engine = AvalonEngine(rules, 0, deal=deal)
            info = next(e for e in engine.events if e.type == "night_info" and e.seat == seat)
            known = f"{deal[seat - 1].value}|{info.known_as}|{info.seats}"
            got = delivered_at_night(engine, seat)
            assert seen.setdefault(known, got) == got, (seat, deal)
        assert len(seen) > 1


def test_a_fixed_deal_is_played_and_a_wrong_one_refused():
    rules = make_rules("official", 6)
    deal = (Role.ASSASSIN, Role.MERLIN, Role.LOYAL_SERVANT, Role.PERCIVAL, Role.LOYAL_SERVANT, Role.MORGANA)
    engine = AvalonEngine(rules, 3, deal=deal)
    assert [engine.roles[s] for s in rules.seats] == list(deal)
    assert AvalonEngine(rules, 3).leader == engine.leader  # the first leader still follows the seed
    with pytest.raises(ValueError, match="deal"):
        AvalonEngine(rules, 3, deal=deal[:-1] + (Role.MERLIN,))
