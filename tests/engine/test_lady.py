"""The Lady of the Lake (the rulebook's optional card, 7+ players): table-driven rulebook cases, and invariants over
seeded games answered at random, checked from the event log and the requests alone (not the engine's state)."""

from __future__ import annotations

import random

import pytest

from avalon_agents.core import (
    EndReason,
    Examine,
    IllegalAction,
    RequestKind,
    Role,
    RuleSet,
    Team,
    make_rules,
)
from avalon_agents.core.types import Phase
from avalon_agents.engine import AvalonEngine
from tests.helpers import Policy, drive, events_of, evil_seats, good_seats

LADY_TYPES = ("lady_given", "lady_examined", "lady_result")


def lady_rules(preset: str = "official", players: int = 7, **changes) -> RuleSet:
    rules = make_rules(preset, players, lady_of_the_lake=True)
    return RuleSet(**{**rules.model_dump(), **changes}) if changes else rules


def scheduled(outcomes: str, **more) -> Policy:
    """Quests go as `outcomes` says ("S" or "F" per quest): a failing quest's team takes as many evil seats as its
    fail cards need (the rest good), and evil fails exactly there; every team is approved; the Assassin misses."""

    def fails(e, r) -> bool:
        return outcomes[r.quest - 1] == "F"

    def team(e, r):
        bad = evil_seats(e)[: e.rules.fails_required[r.quest - 1]] if fails(e, r) else []
        return bad + [s for s in good_seats(e) if s not in bad][: r.team_size - len(bad)]

    def card(e, r) -> bool:
        return not (r.can_fail and fails(e, r))

    return Policy(**{"team": team, "card": card, "target": miss, **more})


def miss(e, r) -> int:
    """The Assassin names the first good seat that is not Merlin."""
    return next(s for s in good_seats(e) if e.roles[s] is not Role.MERLIN)


@pytest.mark.parametrize("players,leader,holder", [
    (7, 1, 7), (7, 2, 1), (7, 5, 4), (7, 7, 6),
    (8, 1, 8), (8, 3, 2), (8, 8, 7),
    (9, 1, 9), (9, 6, 5), (9, 9, 8),
    (10, 1, 10), (10, 4, 3), (10, 10, 9),
])
def test_the_seat_before_the_first_leader_holds_it_first(players, leader, holder):
    engine = AvalonEngine(lady_rules(players=players, first_leader=leader), seed=3)
    given = events_of(engine, "lady_given")
    assert [(g.holder, g.visible_to) for g in given] == [(holder, "all")]
    types = [e.type for e in engine.events]
    assert types.index("lady_given") == types.index("leader_chosen") - 1  # after the night, before the first leader
    assert engine.events[types.index("leader_chosen")].leader == leader


@pytest.mark.parametrize("preset", ["official", "paper"])
@pytest.mark.parametrize("players", range(7, 11))
def test_asked_after_quests_two_three_and_four_and_the_token_passes(preset, players):
    held: list[int] = []
    asked: list = []

    def lady(e, r):  # examine the last seat that never held it
        asked.append(r)
        return r.options[-1]

    engine = AvalonEngine(lady_rules(preset, players), seed=11)
    held.append(events_of(engine, "lady_given")[0].holder)
    drive(engine, scheduled("SFSFS", lady=lady, target=lambda e, r: None if r.may_pass else 1))
    examined = events_of(engine, "lady_examined")
    assert [r.quest for r in asked] == [e.quest for e in examined] == [2, 3, 4]
    for request, event in zip(asked, examined):
        assert request.kind is RequestKind.LADY and request.seat == held[-1] == event.holder
        assert request.options == tuple(s for s in range(1, players + 1) if s not in held)  # never held, not self
        held.append(event.target)
    assert len(set(held)) == 4  # the token went on to each named player, none named twice
    # asked once the quest was scored (and after the Assassin's chance under the paper's rules), before the next
    # quest's first leader
    types = [e.type for e in engine.events]
    for event in examined:
        i = event.seq
        done = max(j for j, e in enumerate(engine.events[:i]) if e.type == "quest_completed")
        assert engine.events[done].quest == event.quest
        between = set(types[done + 1:i])
        assert between == ({"assassination_declined"} if preset == "paper" else set())
        assert types[i + 1:i + 3] == ["lady_result", "leader_chosen"] and engine.events[i + 2].quest == event.quest + 1


@pytest.mark.parametrize("preset,outcomes,quests,reason", [
    ("official", "SSS", [2], EndReason.ASSASSIN_MISSED),
    ("official", "FFF", [2], EndReason.THREE_FAILS),
    ("official", "SFFF", [2, 3], EndReason.THREE_FAILS),
    ("official", "FSSS", [2, 3], EndReason.ASSASSIN_MISSED),
    ("official", "SFSFF", [2, 3, 4], EndReason.THREE_FAILS),
    ("paper", "SSS", [2], EndReason.ASSASSIN_MISSED),
    ("paper", "SFSS", [2, 3], EndReason.ASSASSIN_MISSED),
])
def test_not_asked_once_the_game_has_ended(preset, outcomes, quests, reason):
    engine = AvalonEngine(lady_rules(preset), seed=5)
    # the Assassin holds off while it may, so only the quests end the game
    drive(engine, scheduled(outcomes + "S" * (5 - len(outcomes)),
                            target=lambda e, r: None if r.may_pass else miss(e, r)))
    assert engine.result().reason is reason
    assert [e.quest for e in events_of(engine, "lady_examined")] == quests


def test_a_hit_after_quest_three_ends_the_game_before_the_lady():
    """The paper's `after_any_quest`: the Assassin's chance comes first; a hit ends the game, so no Lady."""
    engine = AvalonEngine(lady_rules("paper"), seed=5)
    merlin = next(s for s, r in engine.roles.items() if r is Role.MERLIN)
    drive(engine, scheduled("SFSSS", target=lambda e, r: merlin if r.quest == 3 else None))
    assert engine.result().reason is EndReason.MERLIN_ASSASSINATED
    assert [e.quest for e in events_of(engine, "lady_examined")] == [2]


def test_the_paper_asks_the_assassin_first_then_the_lady():
    engine = AvalonEngine(lady_rules("paper"), seed=2)
    policy = scheduled("SSSSS", target=lambda e, r: None)
    drive(engine, policy, until=lambda e: len(events_of(e, "quest_completed")) == 2)
    assert [r.kind for r in engine.pending()] == [RequestKind.ASSASSINATE]
    drive(engine, policy, until=lambda e: e.phase is Phase.LADY)
    (request,) = engine.pending()
    assert request.kind is RequestKind.LADY and request.quest == 2


ROLE_SETS = [
    "merlin,percival,loyal_servant,loyal_servant,morgana,assassin,minion",
    "merlin,percival,loyal_servant,loyal_servant,mordred,oberon,assassin",
    "merlin,loyal_servant,loyal_servant,loyal_servant,loyal_servant,morgana,oberon,assassin",
]


@pytest.mark.parametrize("roles", ROLE_SETS)
def test_the_holder_learns_loyalty_never_the_role(roles):
    rules = make_rules("official", roles=roles.split(","), lady_of_the_lake=True)
    for seed in range(8):
        engine = AvalonEngine(rules, seed)
        drive(engine, scheduled("SFSFS", lady=lambda e, r: r.options[seed % len(r.options)]))
        results = events_of(engine, "lady_result")
        assert len(results) == 3
        for result in results:
            assert result.loyalty in (Team.GOOD, Team.EVIL) and result.visible_to == (result.holder,)
            assert result.loyalty is engine.roles[result.target].side  # Mordred and Oberon read evil too
            assert not any(role.value in result.to_json() for role in Role)


@pytest.mark.parametrize("name,answer,match", [
    ("the holder itself", lambda r, held: r.seat, "lady of the lake: seat"),
    ("a former holder", lambda r, held: held[0], "lady of the lake: seat"),
    ("no seat", lambda r, held: 8, "lady of the lake: seat 8"),
    ("the wrong type", lambda r, held: "3", "lady.target"),
])
def test_who_may_not_be_named(name, answer, match):
    engine = AvalonEngine(lady_rules(first_leader=1), seed=4)
    held = [events_of(engine, "lady_given")[0].holder]
    policy = scheduled("SFSFS")
    drive(engine, policy, until=lambda e: e.phase is Phase.LADY)
    held.append(engine.pending()[0].options[0])
    drive(engine, policy, until=lambda e: e.phase is Phase.LADY and e.quest == 3)
    (request,) = engine.pending()
    with pytest.raises(IllegalAction, match=match):
        engine.submit(request.seat, Examine(target=answer(request, held)))
    other = next(s for s in engine.rules.seats if s != request.seat)
    with pytest.raises(IllegalAction, match="turn"):
        engine.submit(other, Examine(target=request.options[0]))
    assert engine.pending() == [request]  # refused answers change nothing


def test_off_by_default_nothing_changes():
    for preset in ("official", "paper"):
        rules = make_rules(preset, 8)
        assert rules.lady_of_the_lake is False
        engine = AvalonEngine(rules, seed=9)
        drive(engine, scheduled("SFSFS"))
        on = AvalonEngine(rules.model_copy(update={"lady_of_the_lake": True}), seed=9)
        drive(on, scheduled("SFSFS"))
        assert not [e for e in engine.events if e.type in LADY_TYPES]
        bare = [(e.type, e.quest) for e in on.events if e.type not in LADY_TYPES]
        assert [(e.type, e.quest) for e in engine.events] == bare  # the Lady only adds its own events


# ----------------------------------------------------------------- invariants over seeded games

GAMES = 500
"""Seeded games per player count (7-10), the presets alternating."""


def random_policy(rng: random.Random, asked: list) -> Policy:
    """Random legal answers; every Lady request is kept in `asked`."""

    def lady(e, r):
        asked.append(r)
        return rng.choice(r.options)

    return Policy(team=lambda e, r: rng.sample(r.options, r.team_size), vote=lambda e, r: rng.random() < 0.6,
                  card=lambda e, r: not r.can_fail or rng.random() < 0.5,
                  target=lambda e, r: None if r.may_pass and rng.random() < 0.6 else rng.choice(r.options),
                  lady=lady)


def check_lady(engine: AvalonEngine, asked: list) -> None:
    """The rule, read off the log and the requests: who holds it first, once after each of quests 2-4 the game
    continued past, options never held, the token passing on, results true and the holder's alone."""
    events, n = engine.events, engine.rules.players
    roles = events[-1].roles  # game_ended: the deal, revealed
    first_leader = events_of(engine, "leader_chosen")[0].leader
    (given,) = events_of(engine, "lady_given")
    assert given.holder == (first_leader - 2) % n + 1 and given.visible_to == "all"
    examined, results = events_of(engine, "lady_examined"), events_of(engine, "lady_result")
    went_on = {e.quest - 1 for e in events_of(engine, "leader_chosen")} & {2, 3, 4}
    assert [e.quest for e in examined] == sorted(went_on) == [r.quest for r in asked]
    held = [given.holder]
    for request, event, result in zip(asked, examined, results):
        assert request.seat == event.holder == held[-1] and event.visible_to == "all"
        assert request.options == tuple(s for s in range(1, n + 1) if s not in held)
        assert event.target in request.options
        assert events[event.seq + 1] is result  # the holder's answer right after the public event
        assert (result.holder, result.target, result.visible_to) == (event.holder, event.target, (event.holder,))
        assert result.loyalty is roles[event.target].side
        held.append(event.target)
    assert len(held) == len(set(held))  # nobody examined twice, no former holder examined


@pytest.mark.parametrize("players", range(7, 11))
def test_seeded_random_games_follow_the_lady(players):
    rules = {p: lady_rules(p, players) for p in ("official", "paper")}
    counts: dict[int, int] = {}
    for seed in range(GAMES):
        engine, asked = AvalonEngine(rules[("official", "paper")[seed % 2]], seed), []
        drive(engine, random_policy(random.Random(seed), asked))  # raises unless the game ends
        check_lady(engine, asked)
        counts[len(asked)] = counts.get(len(asked), 0) + 1
    assert set(counts) == {0, 1, 2, 3}, counts  # games ending before quest 2 is over, and after each of 2, 3 and 4


def test_the_invariant_check_catches_a_doctored_log():
    """check_lady is only worth something if it can fail."""
    import dataclasses

    engine, asked = AvalonEngine(lady_rules(players=8), seed=1), []
    drive(engine, scheduled("SFSFS", lady=lambda e, r: asked.append(r) or r.options[0]))
    check_lady(engine, asked)
    (first, *_) = events_of(engine, "lady_result")
    liar = dataclasses.replace(first, loyalty=Team.EVIL if first.loyalty is Team.GOOD else Team.GOOD)
    leaked = dataclasses.replace(first, visible_to="all")
    for doctored in (liar, leaked):
        engine.events[first.seq] = doctored
        with pytest.raises(AssertionError):
            check_lady(engine, asked)
