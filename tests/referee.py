"""An independent referee: checks that a whole event log is a legal game under its rules.

Written separately from the engine (straight from the rules text) so that the two can disagree.
"""

from __future__ import annotations

from collections import Counter

from avalon_agents.core import EndReason, Role, RuleSet, Team
from avalon_agents.core.events import GameEvent


class Foul(AssertionError):
    pass


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise Foul(msg)


def referee(events: list[GameEvent], rules: RuleSet) -> None:
    """Raise Foul at the first illegal thing in the log."""
    n = rules.players
    seats = set(rules.seats)
    check([e.seq for e in events] == list(range(len(events))), "seq numbers are not 0..n-1")
    check(events[0].type == "game_started" and events[0].rules == rules, "game does not start with its rules")
    roles = {e.seat: e.role for e in events if e.type == "role_assigned"}
    check(sorted(roles) == sorted(seats), "not every seat got a role")
    check(Counter(roles.values()) == Counter(rules.roles), "dealt roles differ from the rule set")
    for e in events:
        if e.type == "role_assigned":
            check(e.visible_to == (e.seat,), "a role card is visible to others")
    _check_night(events, roles)
    evil = {s for s, r in roles.items() if r.side is Team.EVIL}

    leader = None
    quest, attempt, good, bad = 1, 0, 0, 0
    team: tuple = ()
    speakers: list = []
    assassinations = 0
    cards: list = []
    for e in events:
        t = e.type
        if t == "leader_chosen":
            if leader is not None:
                check(e.leader == leader % n + 1, f"leader went {leader} -> {e.leader}")
            leader = e.leader
            check(e.quest == quest, "leader chosen for the wrong quest")
            attempt += 1
            check(e.attempt == attempt, f"attempt {e.attempt} where {attempt} was due")
            check(attempt <= rules.max_proposals + (rules.on_last_rejection == "leader_assigns"), "too many proposals")
            check(e.team_size == rules.quest_sizes[quest - 1], "wrong team size announced")
            speakers = []
        elif t == "speech":
            speakers.append(e.seat)
            check(speakers == [(leader - 1 + i) % n + 1 for i in range(len(speakers))], "speaking order broken")
        elif t == "team_proposed":
            check(e.leader == leader, "a non-leader proposed")
            check(len(e.team) == rules.quest_sizes[quest - 1] and len(set(e.team)) == len(e.team), "bad team size")
            check(set(e.team) <= seats, "team names a non-seat")
            assigned = attempt > rules.max_proposals
            check(e.assigned == assigned, "assigned flag wrong")
            discussed = 0 if assigned or rules.proposal_order == "propose_then_discuss" else n
            check(len(speakers) == discussed, "proposal out of order with the discussion")
            team = e.team
        elif t == "votes_revealed":
            check(len(speakers) == n, "vote before the discussion ended")
            if rules.votes_public:
                check(set(e.approvals) | set(e.rejections) == seats, "not every seat voted")
                check(not set(e.approvals) & set(e.rejections), "a seat voted twice")
            check(e.approve_count + e.reject_count == n, "vote counts do not add up")
            majority = 2 * e.approve_count > n or (rules.approve_on_tie and 2 * e.approve_count == n)
            check(e.approved == majority, "vote verdict contradicts the count")
            check(e.team == team, "vote on a different team")
            if not e.approved and attempt >= rules.max_proposals and rules.on_last_rejection == "evil_wins":
                check(events[-1].reason is EndReason.FIVE_REJECTIONS, "5th rejection did not end the game")
        elif t == "quest_card":
            check(e.visible_to == (e.seat,), "a quest card is public")
            check(e.seat in team, "a card from off the team")
            check(e.success or roles[e.seat].side is Team.EVIL or rules.good_may_fail, "good played fail")
            cards.append(e)
        elif t == "quest_completed":
            check(sorted(c.seat for c in cards) == sorted(team), "cards do not match the team")
            fails = sum(not c.success for c in cards)
            check(e.fails == fails, "fail count differs from the cards")
            check(e.success == (fails < rules.fails_required[quest - 1]), "quest verdict wrong")
            check(fails <= len(set(team) & evil) or rules.good_may_fail, "more fails than evil members")
            good, bad = good + e.success, bad + (not e.success)
            check((e.good_points, e.evil_points) == (good, bad), "score wrong")
            check(max(good, bad) <= rules.points_to_win, "points past the win")
            quest, attempt, cards = quest + 1, 0, []
        elif t == "assassination":
            assassinations += 1
            check(rules.assassin_role is not None, "an assassination in a game without Merlin")
            check(roles[e.assassin] is rules.assassin_role, "a seat without the token assassinated")
            check(e.hit == (roles[e.target] is Role.MERLIN), "hit flag wrong")
            if rules.assassination == "end_of_game":
                check(good == rules.points_to_win, "assassination before good's third success")
        elif t == "assassination_declined":
            check(roles[e.seat] is rules.assassin_role, "a seat without the token held off")
        elif t == "game_ended":
            check(e is events[-1], "events after the end")
            _check_end(e, rules, good, bad, roles, events)
    check(assassinations <= 1, "more than one assassination")
    check(events[-1].type == "game_ended", "the game did not end")


def _check_night(events: list[GameEvent], roles: dict[int, Role]) -> None:
    night = {e.seat: e for e in events if e.type == "night_info"}
    for seat, role in roles.items():
        e = night.get(seat)
        if role is Role.MERLIN:
            want = {s for s, r in roles.items() if r.side is Team.EVIL and r is not Role.MORDRED}
        elif role is Role.PERCIVAL:
            want = {s for s, r in roles.items() if r in (Role.MERLIN, Role.MORGANA)}
        elif role.side is Team.EVIL and role is not Role.OBERON:
            want = {s for s, r in roles.items() if r.side is Team.EVIL and r is not Role.OBERON and s != seat}
        else:
            want = set()
            check(e is not None and e.known_as == "nothing", f"{role.value} got night information")
        check(e is not None and set(e.seats) == want, f"{role.value} saw the wrong seats")
        check(list(e.seats) == sorted(e.seats), "night information is not sorted")
        check(e.visible_to == (seat,), "night information visible to others")


def _check_end(e, rules: RuleSet, good: int, bad: int, roles, events) -> None:
    win = rules.points_to_win
    check(e.winner is e.reason.winner and e.roles == roles, "end event inconsistent")
    tried = any(x.type == "assassination" for x in events)
    if good == win:  # the token holder must have named someone, exactly when Merlin is in the game
        check(tried == (rules.assassin_role is not None), "three successes and the assassination was wrong")
    if e.reason is EndReason.THREE_FAILS:
        check(bad == win, "three_fails without three fails")
    elif e.reason in (EndReason.THREE_SUCCESSES, EndReason.ASSASSIN_MISSED):
        check(good == win, "good win without three successes")
    elif e.reason is EndReason.MERLIN_ASSASSINATED:
        check(events[-2].type == "assassination" and events[-2].hit, "assassination win without a hit")
    else:
        check(rules.on_last_rejection == "evil_wins", "five_rejections under leader_assigns")
