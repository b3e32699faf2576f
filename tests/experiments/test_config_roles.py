"""Experiment configs with a role set: `roles:` as a list (players implied) and `assassin:`; the mapping form of
`roles:` stays seating by role; impossible sets name the problem and the file."""

from __future__ import annotations

import json

import pytest

from avalon_agents.core.types import Role
from avalon_agents.experiments import load_experiments, run_experiment_sync
from avalon_agents.experiments.guard import first_difference
from avalon_agents.records.run_dir import META, RESULT

BASE = """\
name: t
agents:
  ours: {kind: rulebot}
  base: {kind: random}
sides: {good: ours, evil: base}
"""
SET = "roles: [merlin, percival, loyal_servant, Loyal Servant, morgana, mordred, minion]\nassassin: mordred\n"


def load(tmp_path, text):
    path = tmp_path / "x.yaml"
    path.write_text(text)
    return load_experiments(path)["main"]


def test_a_role_list_is_the_role_set_and_implies_the_players(tmp_path):
    exp = load(tmp_path, BASE + SET)
    rules = exp.game_rules()
    assert exp.players == rules.players == 7 and rules.assassin_role is Role.MORDRED
    assert rules.roles.count(Role.LOYAL_SERVANT) == 2 and Role.MINION in rules.roles
    assert exp.role_seating is None and exp.agent_for_role(Role.MORDRED) == "base"


def test_the_mapping_form_stays_seating_by_role(tmp_path):
    exp = load(tmp_path, BASE + "roles: {Merlin: base, mordred: ours}\n")
    assert exp.role_set is None and exp.agent_for_role(Role.MERLIN) == "base"
    assert exp.game_rules().roles == load(tmp_path, BASE).game_rules().roles  # the preset's roles


@pytest.mark.parametrize(("extra", "message"), [
    ("roles: [merlin, merlin, loyal_servant, morgana, assassin]\n", "roles: Merlin appears 2 times"),
    ("roles: [merlin, percival, loyal_servant, loyal_servant, assassin]\n", "roles: 4 good and 1 evil roles"),
    ("roles: [merlin, percival, loyal_servant, morgana, minion]\n", "assassin: no Assassin among the roles"),
    (SET.replace("mordred\n", "percival\n"), "assassin: Percival is a good role"),
    (SET.replace("assassin: mordred", "assassin: oberon"), "assassin: Oberon is not among the roles"),
    ("roles: [merlin, percival, loyal_servant, loyal_servant, minion, minion]\nassassin: minion\n",
     "assassin: 2 seats are Minion of Mordred"),
    ("roles: [percival, loyal_servant, loyal_servant, morgana, minion]\nassassin: morgana\n",
     "assassin: no Merlin among the roles"),
    (SET + "players: 6\n", "players: 6 players, but the role set has 7 roles"),
    ("roles: [merlin, percival, loyal_servant, morgana, wizard]\n", "unknown role 'wizard'"),
])
def test_impossible_sets_are_one_line_naming_the_problem_and_file(tmp_path, extra, message):
    with pytest.raises(ValueError) as caught:
        load(tmp_path, BASE + extra)
    text = str(caught.value)
    assert "x.yaml" in text and message in text and "\n" not in text, text


def test_a_run_plays_the_set_and_records_the_holder(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text(BASE + SET + "games_per_series: 4\n")
    run_experiment_sync(path, tmp_path / "run")
    games = sorted((tmp_path / "run").rglob(RESULT))
    assert len(games) == 4
    for result_file in games:
        result = json.loads(result_file.read_text())
        assert result["roles"][str(result["assassin"])] == "Mordred"
        meta = json.loads((result_file.parent / META).read_text())
        assert meta["rules"]["assassin"] == "Mordred" and meta["rules"]["players"] == 7


def test_a_key_added_since_at_its_default_is_no_change_on_resume():
    assert first_difference({"a": 1}, {"a": 1, "assassin": None}) is None
    assert first_difference({"a": 1}, {"a": 1, "assassin": "Mordred"}) == "assassin"


def test_the_error_points_at_the_line_of_the_field_it_names(tmp_path):
    with pytest.raises(ValueError, match=r"x\.yaml:7: roles: Merlin appears 2 times"):
        load(tmp_path, BASE + "players: 5\nroles: [merlin, merlin, loyal_servant, morgana, assassin]\n")
