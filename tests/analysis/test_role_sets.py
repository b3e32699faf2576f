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
    result = json.loads((first / "result.json").read_text())
    del result["assassin"]
    (first / "result.json").write_text(json.dumps(result))
    assert load_run(tmp_path / "run").games["assassin_seat"].iloc[0] == holders[0]


def test_no_merlin_no_holder(tmp_path):
    rules = make_rules(roles="percival,loyal_servant,loyal_servant,morgana,assassin".split(","))
    asyncio.run(play_games(rules, ["random"] * 5, 0, 10, tmp_path / "run"))
    data = load_run(tmp_path / "run")
    assert data.games["assassin_seat"].isna().all()
    assert not set(data.games["reason"]) & {"merlin_assassinated", "assassin_missed"}
    assert metrics.assassinations(data, by=("role",)).empty
