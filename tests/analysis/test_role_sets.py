"""Analysis of games with other role sets: the assassination is counted for whoever carried it, and the games
table names that seat (from result.json, or from the rules in meta.json for games recorded before)."""

from __future__ import annotations

import asyncio
import json

import pytest

from avalon_agents.analysis.load import load_run
from avalon_agents.analysis.paper import metrics
from avalon_agents.core import Role, make_rules
from avalon_agents.host.batch import play_games
from avalon_agents.records.run_dir import RESULT


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_mordred_holder_is_counted_and_named(tmp_path):
    rules = make_rules(roles="merlin,percival,loyal_servant,loyal_servant,morgana,mordred,minion".split(","),
                       assassin="mordred")
    results = asyncio.run(play_games(rules, ["rulebot"] * 7, 0, 20, tmp_path / "run"))
    data = load_run(tmp_path / "run")
    holders = [r.assassin for r in results]
    assert list(data.games["assassin_seat"]) == holders
    mordred = {(i + 1): next(s for s, r in res.roles.items() if r is Role.MORDRED) for i, res in enumerate(results)}
    assert all(mordred[i + 1] == h for i, h in enumerate(holders))
    shots = metrics.assassinations(data, by=("role",))
    assert list(shots["role"]) == ["Mordred"] and shots["n"].iloc[0] == sum(r.assassination_target is not None
                                                                             for r in results) > 0
    # a game recorded before result.json named the holder: read from the rules in meta.json
    first = sorted((tmp_path / "run").glob("game-*"))[0]
    result = json.loads((first / RESULT).read_text())
    del result["assassin"]
    (first / RESULT).write_text(json.dumps(result))
    assert load_run(tmp_path / "run").games["assassin_seat"].iloc[0] == holders[0]


def test_no_merlin_no_holder(tmp_path):
    rules = make_rules(roles="percival,loyal_servant,loyal_servant,morgana,assassin".split(","))
    asyncio.run(play_games(rules, ["random"] * 5, 0, 10, tmp_path / "run"))
    data = load_run(tmp_path / "run")
    assert data.games["assassin_seat"].isna().all()
    assert not set(data.games["reason"]) & {"merlin_assassinated", "assassin_missed"}
    assert metrics.assassinations(data, by=("role",)).empty


def test_the_tables_follow_the_roles_in_play(tmp_path):
    """Merlin, Assassin and a Minion: the headline has QER/FVR columns for the Assassin and the Minion, none for
    Morgana (absent, not null), and the printed table names them."""
    from avalon_agents.analysis.paper.report import headline_text
    from avalon_agents.experiments.results import format_table, results_table

    rules = make_rules(roles="merlin,loyal_servant,loyal_servant,loyal_servant,assassin,minion".split(","))
    asyncio.run(play_games(rules, ["random"] * 6, 0, 6, tmp_path / "run"))
    data = load_run(tmp_path / "run")
    table = metrics.paper_table(data)
    rates = [c for c in table if c.startswith(("qer_", "fvr_"))]
    assert rates == ["qer_Assassin", "qer_Minion_of_Mordred", "fvr_Assassin", "fvr_Minion_of_Mordred"]
    evil = table[table["side"] == "evil"].iloc[0]
    assert 0 <= evil["qer_Minion_of_Mordred"] <= 1  # measured, not null
    assert "Morgana" not in headline_text(table)
    results = results_table(tmp_path / "run")
    assert not [c for c in results if "Morgana" in c]
    text = format_table(results)
    assert "QER Ass/Min" in text and "QER, FVR: Assassin/Minion of Mordred" in text


def test_every_role_dealt_has_its_rows(tmp_path):
    """A role that never played a quest card still has its failure-vote row (n 0, no value)."""
    rules = make_rules(roles="merlin,loyal_servant,loyal_servant,loyal_servant,assassin,minion".split(","))
    asyncio.run(play_games(rules, ["random"] * 6, 0, 4, tmp_path / "run"))
    data = load_run(tmp_path / "run")
    data.cards = data.cards[data.cards["role"] != "Minion of Mordred"]  # as if the Minion never went on a quest
    tables = metrics.outcome_metrics(data)
    fvr = tables["failure_votes"]
    minion = fvr[fvr["role"] == "Minion of Mordred"]
    assert len(minion) == 1 and minion["n"].iloc[0] == 0 and minion["value"].isna().all()
    for name in ("quest_engagement", "failure_votes", "leader_approval"):
        assert set(tables[name]["role"]) == set(data.seats["role"]), name
    both = tables["leader_self_inclusion"]
    assert all(set(part["role"]) == set(data.seats["role"]) for _, part in both.groupby("metric"))
