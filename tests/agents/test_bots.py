"""Rule bots are a real baseline: they beat random play on either side, and the Assassin reads Merlin."""

from __future__ import annotations

from collections import Counter

import pytest

from avalon_agents.agents import RandomAgent, RuleBot
from avalon_agents.bench import play_direct, run_now
from avalon_agents.core import ActionRequest, EndReason, RequestKind, Role, Team, make_rules
from avalon_agents.engine import AvalonEngine
from avalon_agents.host.play import agent_seed

GAMES = 300


class BySide:
    """Plays as a rule bot on one side and at random on the other."""

    def __init__(self, *, seat, seed, smart: Team):
        self.seat, self.seed, self.smart, self.inner = seat, seed, smart, None

    async def observe(self, events):
        if self.inner is None:
            role = next(e.role for e in events if e.type == "role_assigned")
            kind = RuleBot if role.side is self.smart else RandomAgent
            self.inner = kind(seat=self.seat, seed=self.seed)
        await self.inner.observe(events)

    def decide(self, request):
        return self.inner.decide(request)


def play(smart: Team | None, preset="official", players=6) -> Counter:
    rules = make_rules(preset, players)
    outcomes = Counter()
    for seed in range(GAMES):
        engine = AvalonEngine(rules, seed)
        if smart is None:
            bots = {s: RuleBot(seat=s, seed=agent_seed(seed, s)) for s in rules.seats}
        else:
            bots = {s: BySide(seat=s, seed=agent_seed(seed, s), smart=smart) for s in rules.seats}
        events = engine.reset()
        while True:
            for s, b in bots.items():
                mine = [e for e in events if e.visible(s)]
                if mine:
                    run_now(b.observe(mine))
            if engine.is_over:
                break
            events = []
            for r in engine.pending():
                events += engine.submit(r.seat, bots[r.seat].decide(r))
        result = engine.result()
        outcomes[result.winner] += 1
        outcomes[result.reason] += 1
    return outcomes


@pytest.mark.slow  # seconds; the slow suite (CI) runs it
@pytest.mark.parametrize("preset", ["official", "paper"])
def test_rule_bots_beat_random_on_either_side(preset):
    good_smart = play(Team.GOOD, preset)
    evil_smart = play(Team.EVIL, preset)
    random_all = Counter(play_direct(make_rules(preset, 6), "random", s).result().winner for s in range(GAMES))
    # Smart good wins far more often than random good; smart evil wins more often than random evil.
    assert good_smart[Team.GOOD] > random_all[Team.GOOD] + GAMES * 0.2
    assert evil_smart[Team.EVIL] > random_all[Team.EVIL] + GAMES * 0.1


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_rule_bots_against_each_other_are_balanced_and_the_assassin_reads_merlin():
    outcomes = play(None)
    assert 0.3 < outcomes[Team.GOOD] / GAMES < 0.7
    tries = outcomes[EndReason.MERLIN_ASSASSINATED] + outcomes[EndReason.ASSASSIN_MISSED]
    assert outcomes[EndReason.MERLIN_ASSASSINATED] / tries > 0.3  # a blind guess among 4 good seats hits 25%


def test_evil_bots_fail_quests_and_good_bots_never_do():
    rules = make_rules("official", 6)
    fails = Counter()
    for seed in range(100):
        engine = play_direct(rules, "rulebot", seed)
        for e in engine.events:
            if e.type == "quest_card":
                fails[(engine.roles[e.seat].side, e.success)] += 1
    assert fails[(Team.GOOD, False)] == 0
    assert fails[(Team.EVIL, False)] > fails[(Team.EVIL, True)]  # evil on a quest mostly fails it


@pytest.mark.parametrize("role", [Role.MERLIN, Role.LOYAL_SERVANT, Role.PERCIVAL])
@pytest.mark.parametrize("seed", range(10))
def test_good_bot_proposes_itself_and_merlin_never_sends_evil(role, seed):
    engine = AvalonEngine(make_rules("official", 6), seed)
    seat = next(s for s, r in engine.roles.items() if r is role)
    evil = {s for s, r in engine.roles.items() if r.side is Team.EVIL}
    bot = RuleBot(seat=seat, seed=seed)
    run_now(bot.observe([e for e in engine.events if e.visible(seat)]))
    team = bot.decide(ActionRequest(seat=seat, kind=RequestKind.PROPOSE, quest=1, attempt=1,
                                    options=tuple(range(1, 7)), team_size=3)).team
    assert seat in team and len(set(team)) == 3
    if role is Role.MERLIN:
        assert not set(team) & evil
