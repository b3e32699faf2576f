"""Table-driven rule cases for both presets and 5-10 players."""

from __future__ import annotations

import pytest

from avalon_agents.core import (
    Assassinate,
    EndReason,
    IllegalAction,
    ProposeTeam,
    QuestCard,
    RequestKind,
    Role,
    RuleSet,
    Speak,
    Team,
    Vote,
    make_rules,
)
from avalon_agents.core.types import Phase
from avalon_agents.engine import AvalonEngine
from tests.helpers import Policy, drive, events_of, evil_seats, good_seats, seat_of

PLAYERS = range(5, 11)
PRESETS = ("official", "paper")
CASES = [(p, n) for p in PRESETS for n in PLAYERS]


def new(preset: str, players: int, seed: int = 7) -> AvalonEngine:
    return AvalonEngine(make_rules(preset, players), seed)


@pytest.mark.parametrize("preset,players", CASES)
def test_tie_rejects_and_majority_approves(preset, players):
    engine = new(preset, players)
    half = players // 2

    def vote(e, r):  # exactly `half` approvals: a tie for even counts, a minority for odd
        return r.seat <= half

    drive(engine, Policy(vote=vote), until=lambda e: bool(events_of(e, "votes_revealed")))
    revealed = events_of(engine, "votes_revealed")[0]
    assert (revealed.approve_count, revealed.reject_count) == (half, players - half)
    assert revealed.approved is False

    engine = new(preset, players)
    drive(engine, Policy(vote=lambda e, r: r.seat <= half + 1), until=lambda e: bool(events_of(e, "votes_revealed")))
    assert events_of(engine, "votes_revealed")[0].approved is True


def test_tie_approves_when_the_rule_says_so():
    rules = RuleSet(**{**make_rules("official", 6).model_dump(), "approve_on_tie": True})
    engine = AvalonEngine(rules, 3)
    drive(engine, Policy(vote=lambda e, r: r.seat <= 3), until=lambda e: bool(events_of(e, "votes_revealed")))
    assert events_of(engine, "votes_revealed")[0].approved is True


@pytest.mark.parametrize("players", PLAYERS)
def test_fifth_rejection_official_evil_wins(players):
    engine = new("official", players)
    drive(engine, Policy(vote=lambda e, r: False))
    assert engine.result().reason is EndReason.FIVE_REJECTIONS
    assert engine.result().winner is Team.EVIL
    votes = events_of(engine, "votes_revealed")
    assert len(votes) == 5 and all(v.quest == 1 for v in votes)
    assert [e.attempt for e in events_of(engine, "leader_chosen")] == [1, 2, 3, 4, 5]
    assert events_of(engine, "leader_chosen")[-1].final is True


@pytest.mark.parametrize("players", PLAYERS)
def test_fifth_rejection_paper_leader_assigns(players):
    engine = new("paper", players)
    drive(engine, Policy(vote=lambda e, r: False), until=lambda e: bool(events_of(e, "quest_completed")))
    proposals = events_of(engine, "team_proposed")
    assert len(proposals) == 6
    assert [p.assigned for p in proposals] == [False] * 5 + [True]
    assert len(events_of(engine, "votes_revealed")) == 5  # the assigned team goes without a vote
    leaders = [e.leader for e in events_of(engine, "leader_chosen")]
    assert proposals[-1].leader == leaders[5] == leaders[4] % players + 1
    assert events_of(engine, "quest_completed")[0].quest == 1


@pytest.mark.parametrize("preset,players", CASES)
def test_one_fail_card_fails_a_quest(preset, players):
    engine = new(preset, players)
    evil = evil_seats(engine)

    def team(e, r):  # one evil seat, the rest good
        return [evil[0]] + good_seats(e)[: r.team_size - 1]

    drive(engine, Policy(team=team, target=lambda e, r: None if r.may_pass else r.options[0]),
          until=lambda e: bool(events_of(e, "quest_completed")))
    q = events_of(engine, "quest_completed")[0]
    assert (q.fails, q.success, q.evil_points) == (1, False, 1)


@pytest.mark.parametrize("preset,players", CASES)
def test_quest_four_needs_two_fails_from_seven_players(preset, players):
    engine = new(preset, players)
    evil = evil_seats(engine)
    state = {}

    def team(e, r):
        if r.quest == 4:
            return evil[: state["fails"]] + good_seats(e)[: r.team_size - state["fails"]]
        return good_seats(e)[: r.team_size] if r.quest != 3 else [evil[0]] + good_seats(e)[: r.team_size - 1]

    # quests 1-2 succeed, quest 3 fails: the game reaches quest 4 at 2-1.
    for fails in (1, 2):
        engine = new(preset, players)
        evil = evil_seats(engine)
        state["fails"] = fails
        drive(engine, Policy(team=team, target=lambda e, r: None),
              until=lambda e: len(events_of(e, "quest_completed")) == 4)
        q4 = events_of(engine, "quest_completed")[3]
        assert q4.quest == 4 and q4.fails == fails
        assert q4.success is (players >= 7 and fails == 1)


@pytest.mark.parametrize("preset,players", CASES)
def test_good_cannot_fail(preset, players):
    engine = new(preset, players)
    drive(engine, Policy(), until=lambda e: e.phase is Phase.QUEST)
    request = engine.pending()[0]
    assert engine.roles[request.seat].side is Team.GOOD and not request.can_fail
    with pytest.raises(IllegalAction, match="good cannot fail"):
        engine.submit(request.seat, QuestCard(success=False))


@pytest.mark.parametrize("preset,players", CASES)
@pytest.mark.parametrize("hit", [True, False])
def test_assassination_after_three_successes(preset, players, hit):
    engine = new(preset, players)
    merlin = seat_of(engine, Role.MERLIN)
    wrong = next(s for s in good_seats(engine) if s != merlin)

    def target(e, r):
        if r.may_pass:
            return None  # paper: hold off until the end
        return merlin if hit else wrong

    drive(engine, Policy(target=target))
    result = engine.result()
    assert [q.success for q in result.quests] == [True, True, True]
    assert result.reason is (EndReason.MERLIN_ASSASSINATED if hit else EndReason.ASSASSIN_MISSED)
    assert result.winner is (Team.EVIL if hit else Team.GOOD)
    attempt = events_of(engine, "assassination")
    assert len(attempt) == 1 and attempt[0].hit is hit and attempt[0].visible_to == "all"


@pytest.mark.parametrize("players", PLAYERS)
def test_paper_assassin_may_strike_after_any_quest_and_a_miss_exposes(players):
    engine = new("paper", players)
    merlin = seat_of(engine, Role.MERLIN)
    wrong = next(s for s in good_seats(engine) if s != merlin)
    drive(engine, Policy(target=lambda e, r: wrong))
    result = engine.result()
    attempts = events_of(engine, "assassination")
    assert len(attempts) == 1 and attempts[0].quest == 1  # tried after quest 1, once only
    assert attempts[0].assassin == seat_of(engine, Role.ASSASSIN) and attempts[0].visible_to == "all"
    assert result.reason is EndReason.THREE_SUCCESSES and result.winner is Team.GOOD
    assert len(result.quests) == 3  # the game went on after the miss


def test_paper_assassin_hit_after_first_quest_ends_the_game():
    engine = new("paper", 6)
    drive(engine, Policy())
    result = engine.result()
    assert result.reason is EndReason.MERLIN_ASSASSINATED and len(result.quests) == 1


def test_official_assassin_cannot_pass():
    engine = new("official", 6)
    drive(engine, Policy(), until=lambda e: e.phase is Phase.ASSASSINATION)
    request = engine.pending()[0]
    assert request.kind is RequestKind.ASSASSINATE and not request.may_pass
    assert request.seat not in request.options
    with pytest.raises(IllegalAction, match="must name a player"):
        engine.submit(request.seat, Assassinate(target=None))


@pytest.mark.parametrize("preset,players", CASES)
def test_leader_rotates_every_proposal(preset, players):
    engine = new(preset, players)
    rejections = {"left": 3}

    def vote(e, r):  # reject the first three proposals of the game, then approve
        return rejections["left"] <= 0

    policy = Policy(vote=vote, target=lambda e, r: None if r.may_pass else r.options[0])
    while not engine.is_over:
        for r in engine.pending():
            engine.submit(r.seat, policy.act(engine, r))
        rejections["left"] = 3 - len([v for v in events_of(engine, "votes_revealed") if not v.approved])
    leaders = [e.leader for e in events_of(engine, "leader_chosen")]
    assert len(leaders) >= 6
    assert all(b == a % players + 1 for a, b in zip(leaders, leaders[1:]))


@pytest.mark.parametrize("preset,players", CASES)
def test_team_size_and_distinct_members(preset, players):
    engine = new(preset, players)
    drive(engine, Policy(), until=lambda e: e.phase is Phase.PROPOSAL)
    request = engine.pending()[0]
    size = make_rules(preset, players).quest_sizes[0]
    assert request.team_size == size
    with pytest.raises(IllegalAction, match="team size"):
        engine.submit(request.seat, ProposeTeam(team=tuple(range(1, size + 2))))
    with pytest.raises(IllegalAction, match="distinct members"):
        engine.submit(request.seat, ProposeTeam(team=(1,) * size))
    with pytest.raises(IllegalAction, match="team members"):
        engine.submit(request.seat, ProposeTeam(team=tuple(range(2, size + 1)) + (players + 1,)))
    engine.submit(request.seat, ProposeTeam(team=tuple(range(1, size + 1))))  # a legal one goes through


@pytest.mark.parametrize("preset,players", CASES)
def test_three_fails_end_the_game(preset, players):
    engine = new(preset, players)
    evil = evil_seats(engine)
    need = make_rules(preset, players).fails_required

    def team(e, r):
        k = need[r.quest - 1]
        return evil[:k] + good_seats(e)[: r.team_size - k]

    drive(engine, Policy(team=team, target=lambda e, r: None))
    result = engine.result()
    assert result.reason is EndReason.THREE_FAILS and result.winner is Team.EVIL
    assert [q.success for q in result.quests] == [False, False, False]


@pytest.mark.parametrize("preset", PRESETS)
def test_order_of_proposal_and_discussion(preset):
    engine = new(preset, 6)
    drive(engine, Policy(), until=lambda e: bool(events_of(e, "votes_revealed")))
    kinds = [e.type for e in engine.events if e.type in ("speech", "team_proposed", "votes_revealed")]
    if preset == "official":
        assert kinds == ["team_proposed"] + ["speech"] * 6 + ["votes_revealed"]
    else:
        assert kinds == ["speech"] * 6 + ["team_proposed", "votes_revealed"]
    speakers = [e.seat for e in events_of(engine, "speech")]
    leader = events_of(engine, "leader_chosen")[0].leader
    assert speakers[0] == leader and sorted(speakers) == [1, 2, 3, 4, 5, 6]


def test_simultaneous_choices_stay_hidden_until_the_last():
    engine = new("official", 6)
    drive(engine, Policy(), until=lambda e: e.phase is Phase.VOTE)
    requests = engine.pending()
    assert [r.seat for r in requests] == [1, 2, 3, 4, 5, 6]
    for r in requests[:-1]:
        assert engine.submit(r.seat, Vote(approve=True)) == []
    with pytest.raises(IllegalAction, match="turn"):
        engine.submit(requests[0].seat, Vote(approve=False))  # no second vote
    assert [e.type for e in engine.submit(requests[-1].seat, Vote(approve=True))][0] == "votes_revealed"
    # Quest cards: only counts in public; each seat's own card is private to it.
    team = list(engine.team)
    for seat in team:
        engine.submit(seat, QuestCard(success=True))
    cards = events_of(engine, "quest_card")
    assert sorted(c.seat for c in cards) == team and all(c.visible_to == (c.seat,) for c in cards)
    done = events_of(engine, "quest_completed")[0]
    assert done.visible_to == "all" and not hasattr(done, "cards")


def test_wrong_seat_and_finished_game_are_illegal():
    engine = new("official", 6)
    leader = engine.pending()[0].seat
    other = leader % 6 + 1
    with pytest.raises(IllegalAction, match="turn: seat"):
        engine.submit(other, ProposeTeam(team=(1, 2)))
    with pytest.raises(IllegalAction, match="request kind"):
        engine.submit(leader, Vote(approve=True))
    drive(engine, Policy())
    with pytest.raises(IllegalAction, match="game over"):
        engine.submit(1, Vote(approve=True))


def test_secret_votes_publish_counts_only():
    rules = RuleSet(**{**make_rules("official", 6).model_dump(), "votes_public": False})
    engine = AvalonEngine(rules, 5)
    drive(engine, Policy(), until=lambda e: bool(events_of(e, "votes_revealed")))
    revealed = events_of(engine, "votes_revealed")[0]
    assert revealed.approvals == () and revealed.approve_count == 6
    own = events_of(engine, "vote_cast")
    assert sorted(v.seat for v in own) == [1, 2, 3, 4, 5, 6] and all(v.visible_to == (v.seat,) for v in own)


@pytest.mark.parametrize("action", [Vote(approve="no"), Vote(approve=1), ProposeTeam(team=(1, True)),
                                    ProposeTeam(team=[1, 2]), QuestCard(success="yes"), Assassinate(target=2.0),
                                    Speak(text=None), Speak(text="I am \ud800 good")])
def test_actions_are_checked_by_type(action):
    """A value of the wrong type never reaches the game (a speech with a lone surrogate, which a program's JSON
    "\\ud800" reads as, could not be recorded)."""
    from avalon_agents.core.actions import ActionRequest, RequestKind

    request = ActionRequest(seat=1, kind=RequestKind(action.kind), quest=1, attempt=1, options=(1, 2, 3),
                            team_size=2, can_fail=True)
    field = {"vote": "approve", "propose": "team", "quest": "success", "assassinate": "target", "speak": "text"}
    with pytest.raises(IllegalAction, match=rf"{action.kind}\.{field[action.kind]}: .* wrong type"):
        request.validate(action)


def test_a_string_vote_is_refused_by_the_engine():
    engine = AvalonEngine(make_rules("official", 6), 0)
    while engine.pending()[0].kind is not RequestKind.VOTE:
        request = engine.pending()[0]
        action = (ProposeTeam(team=request.options[:request.team_size]) if request.kind is RequestKind.PROPOSE
                  else Speak(text="hi"))
        engine.submit(request.seat, action)
    with pytest.raises(IllegalAction, match="vote.approve"):
        engine.submit(engine.pending()[0].seat, Vote(approve="no"))
