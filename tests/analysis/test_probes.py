"""Belief-probe scores against hand-computed values."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from avalon_agents.analysis.paper.probes import SCORE_COLUMNS, probe_table, score_probes
from avalon_agents.records import LLMCall, Probe

G1 = {"game": "g1", "merlin_seat": 1, "evil_seats": [5, 6]}
G2 = {"game": "g2", "merlin_seat": 3, "evil_seats": [1, 2]}


def row(truth, seat, role, quest, merlin, p_evil):
    valid = merlin is not None
    return {**truth, "seat": seat, "role": role, "quest": quest, "valid": valid, "merlin_guess": merlin,
            "p_evil": p_evil if valid else {}}


ROWS = [
    # merlin right, evil right (5 and 6), brier 0
    row(G1, 1, "Merlin", 1, 1, {"2": 0.0, "3": 0.0, "4": 0.0, "5": 1.0, "6": 1.0}),
    # merlin wrong, a flat 0.5 ties across the boundary: evil wrong, brier 0.25
    row(G1, 2, "Loyal Servant", 1, 3, {"1": 0.5, "3": 0.5, "4": 0.5, "5": 0.5, "6": 0.5}),
    # merlin right; top two are 5 and 4: evil wrong; brier (.04 + .01 + .36 + .01 + .25) / 5 = 0.134
    row(G1, 3, "Loyal Servant", 1, 1, {"1": 0.2, "2": 0.1, "4": 0.6, "5": 0.9, "6": 0.5}),
    # unreadable: counts for valid_rate only
    row(G1, 4, "Loyal Servant", 1, None, {}),
    # evil seat 5: the only other evil seat is 6, its top one: evil right; brier (.64 + .09 + .01 + .04 + 0) / 5
    row(G1, 5, "Assassin", 1, 2, {"1": 0.8, "2": 0.3, "3": 0.1, "4": 0.2, "6": 1.0}),
    # quest 2: merlin right, evil right, brier (0 + .16 + .16 + .09 + .09) / 5 = 0.1
    row(G1, 2, "Loyal Servant", 2, 1, {"1": 0.0, "3": 0.4, "4": 0.4, "5": 0.7, "6": 0.7}),
    # only an invalid probe in its group
    row(G1, 6, "Morgana", 2, None, {}),
    # another game, other truth: merlin right, evil right (1, 2), brier (.01 + .04 + 0 + .01 + .04) / 5 = 0.02
    row(G2, 4, "Loyal Servant", 1, 3, {"1": 0.9, "2": 0.8, "3": 0.0, "5": 0.1, "6": 0.2}),
]


def scores(**kw) -> pd.DataFrame:
    return score_probes(pd.DataFrame(ROWS), **kw)


def cell(table: pd.DataFrame, role: str, quest: int) -> dict:
    found = table[(table["role"] == role) & (table["quest"] == quest)]
    assert len(found) == 1
    return found.iloc[0].to_dict()


def test_scores_per_role_and_quest():
    table = scores()
    assert list(table.columns) == ["role", "quest", *SCORE_COLUMNS]
    assert len(table) == 5
    servants = cell(table, "Loyal Servant", 1)
    assert servants["probes"] == 4 and servants["valid_rate"] == pytest.approx(0.75)
    assert servants["merlin_accuracy"] == pytest.approx(2 / 3)
    assert servants["evil_accuracy"] == pytest.approx(1 / 3)
    assert servants["brier"] == pytest.approx((0.25 + 0.134 + 0.02) / 3)
    merlin = cell(table, "Merlin", 1)
    assert (merlin["probes"], merlin["valid_rate"], merlin["merlin_accuracy"], merlin["evil_accuracy"]) == (1, 1, 1, 1)
    assert merlin["brier"] == pytest.approx(0.0)
    assassin = cell(table, "Assassin", 1)
    assert assassin["merlin_accuracy"] == 0 and assassin["evil_accuracy"] == 1
    assert assassin["brier"] == pytest.approx(0.156)
    later = cell(table, "Loyal Servant", 2)
    assert (later["merlin_accuracy"], later["evil_accuracy"]) == (1, 1) and later["brier"] == pytest.approx(0.1)
    morgana = cell(table, "Morgana", 2)
    assert morgana["probes"] == 1 and morgana["valid_rate"] == 0
    assert all(math.isnan(morgana[c]) for c in ("merlin_accuracy", "evil_accuracy", "brier"))


def test_other_groupings_and_an_empty_frame():
    by_role = scores(by=["role"]).set_index("role")
    assert by_role.loc["Loyal Servant", "probes"] == 5
    assert by_role.loc["Loyal Servant", "merlin_accuracy"] == pytest.approx(3 / 4)
    assert by_role.loc["Loyal Servant", "brier"] == pytest.approx((0.25 + 0.134 + 0.1 + 0.02) / 4)
    empty = score_probes(pd.DataFrame(columns=["game", "role", "quest"]))
    assert empty.empty and list(empty.columns) == ["role", "quest", *SCORE_COLUMNS]


def test_probe_table_from_trace_records():
    trace = [
        LLMCall(seat=2, stage="probe", name="belief", prompt_id="probes/belief", prompt_hash="0"),
        Probe(seat=2, quest=1, merlin_guess=3, p_evil={"1": 0.5, "3": 0.5, "4": 0.5, "5": 0.5, "6": 0.5}, valid=True,
              raw="{}"),
        Probe(seat=4, quest=1, merlin_guess=None, p_evil={}, valid=False, raw=None),
    ]
    roles = {"1": "Merlin", "2": "Loyal Servant", "3": "Percival", "4": "Loyal Servant", "5": "Assassin",
             "6": "Morgana"}
    table = probe_table(trace, game="g1", roles=roles, merlin_seat=1, evil_seats=[6, 5])
    assert len(table) == 2 and list(table["role"]) == ["Loyal Servant", "Loyal Servant"]
    assert table.iloc[0]["evil_seats"] == [5, 6] and table.iloc[0]["merlin_seat"] == 1
    scored = score_probes(table).iloc[0]
    assert scored["valid_rate"] == 0.5 and scored["brier"] == pytest.approx(0.25) and scored["evil_accuracy"] == 0
