"""Hypothesis strategies: role sets people play (any roles with the official good/evil split)."""

from __future__ import annotations

from collections import Counter

from hypothesis import strategies as st

from avalon_agents.core import Role, RuleSet, make_rules
from avalon_agents.core.rules import EVIL_COUNT, PRESETS

UNIQUE_EVIL = (Role.MORGANA, Role.ASSASSIN, Role.MORDRED, Role.OBERON)


@st.composite
def role_sets(draw) -> tuple[tuple[Role, ...], Role | None]:
    """(roles, assassin): a valid set for 5-10 players and the role named to carry the token (None: default)."""
    players = draw(st.integers(5, 10))
    evil_n = EVIL_COUNT[players]
    good = [r for r in (Role.MERLIN, Role.PERCIVAL) if draw(st.booleans())]
    good += [Role.LOYAL_SERVANT] * (players - evil_n - len(good))
    evil = draw(st.lists(st.sampled_from(UNIQUE_EVIL), unique=True, max_size=evil_n))
    evil += [Role.MINION] * (evil_n - len(evil))
    roles = draw(st.permutations(good + evil))
    counts = Counter(roles)
    able = sorted((r for r in counts if r.side.value == "evil" and counts[r] == 1), key=list(Role).index)
    assassin = None
    if Role.MERLIN in counts and Role.ASSASSIN not in counts:
        if not able:  # two Minions alone cannot carry the token: swap one for an Assassin
            roles = tuple(roles)
            i = roles.index(Role.MINION)
            roles = roles[:i] + (Role.ASSASSIN,) + roles[i + 1:]
        else:
            assassin = draw(st.sampled_from(able))
    return tuple(roles), assassin


@st.composite
def rule_sets(draw) -> RuleSet:
    roles, assassin = draw(role_sets())
    return make_rules(draw(st.sampled_from(sorted(PRESETS))), roles=roles, assassin=assassin)
