"""What the records say around a speech, in the words the judges' prompts use: what the speaker's night
information told it, the game's role cards, the round's leader and the team on the table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd

from avalon_agents.core.types import Role, seat_name

FIRST_QUEST = 1
PLURALS = {Role.LOYAL_SERVANT.value: "Loyal Servants", Role.MINION.value: "Minions of Mordred"}
ROLE_ORDER = [r.value for r in Role]


def players(seats: Sequence[int]) -> str:
    names = [str(s) for s in sorted(seats)]
    if len(names) == 1:
        return seat_name(int(names[0]))
    return "Players " + ", ".join(names[:-1]) + " and " + names[-1]


def knowledge_text(infos: Sequence[tuple[str, Sequence[int]]]) -> str:
    """What a seat's night information told it, in words (from its `night_info` records).

    Args:
        infos: (known_as, seats) of each night_info event of the seat.
    """
    parts = []
    for known_as, seats in infos:
        if known_as == "nothing":
            continue
        names, verb = players(seats), "is" if len(seats) == 1 else "are"
        if known_as == "evil":
            parts.append(f"{names} {verb} evil (but not which evil role each has).")
        elif known_as == "merlin_or_morgana":
            parts.append(f"{names} is Merlin." if len(seats) == 1 else
                         f"one of {names} is Merlin and the other is Morgana (but not which is which).")
        else:
            parts.append(f"{names} {verb} on the evil side with them (but not which role each has).")
    text = " ".join(parts) if parts else "nothing beyond their own role."
    return text[0].upper() + text[1:]


def roles_in_game(roles: Sequence[str]) -> str:
    """The game's role cards, e.g. "Merlin, Percival, 2 Loyal Servants, Morgana, Assassin"."""
    counts = Counter(roles)
    ordered = sorted(counts, key=lambda r: ROLE_ORDER.index(r) if r in ROLE_ORDER else len(ROLE_ORDER))
    return ", ".join(r if counts[r] == 1 else f"{counts[r]} {PLURALS.get(r, r + 's')}" for r in ordered)


def night_info(events: pd.DataFrame) -> dict[tuple[str, int], list[tuple[str, tuple[int, ...]]]]:
    """(game, seat) -> [(known_as, seats), ...] from the `night_info` events."""
    found: dict[tuple[str, int], list[tuple[str, tuple[int, ...]]]] = {}
    if events.empty or "type" not in events:
        return found
    for e in events[events["type"] == "night_info"].itertuples(index=False):
        seats = tuple(sorted(int(s) for s in e.seats))
        found.setdefault((e.game, int(e.seat)), []).append((e.known_as, seats))
    return found


def rounds(events: pd.DataFrame) -> dict[tuple[str, int, int], dict[str, Any]]:
    """(game, quest, attempt) -> {"leader", "team_size", "proposals": [(seq, team), ...]} from the events."""
    found: dict[tuple[str, int, int], dict[str, Any]] = {}
    if events.empty or "type" not in events:
        return found
    for e in events[events["type"].isin(["leader_chosen", "team_proposed"])].itertuples(index=False):
        one = found.setdefault((e.game, int(e.quest), int(e.attempt)),
                               {"leader": None, "team_size": None, "proposals": []})
        if e.type == "leader_chosen":
            one.update(leader=int(e.leader), team_size=int(e.team_size))
        else:
            team = tuple(int(s) for s in e.team)
            one["proposals"].append((int(e.seq), team))
            one["leader"] = one["leader"] if one["leader"] is not None else int(e.leader)
            one["team_size"] = one["team_size"] if one["team_size"] is not None else len(team)
    return found


def round_text(info: dict[str, Any] | None, seq: int) -> dict[str, Any]:
    """The self-recommendation prompt's round values: leader, team size, the team already proposed."""
    info = info or {"leader": None, "team_size": None, "proposals": []}
    before = [team for s, team in info["proposals"] if s < seq]
    table = (f"The team already proposed in this round: {players(before[-1])}." if before else
             "No team has been proposed yet in this round.")
    return {"leader": seat_name(info["leader"]) if info["leader"] is not None else "not known",
            "team_size": info["team_size"] if info["team_size"] is not None else "some",
            "team_on_table": table}
