"""`avalon play --roles ... --assassin ...`: any role set people play, and each impossible one a one-line error
(exit 2)."""

from __future__ import annotations

import json

import pytest

from avalon_agents.core import Role, RuleSet
from avalon_agents.records.run_dir import EVENTS, META, RESULT
from tests.helpers import avalon

EXAMPLE = "merlin,percival,loyal_servant,loyal_servant,morgana,mordred,minion"


def test_the_issue_example_plays_a_game_with_mordred_assassinating(tmp_path):
    out = avalon("play", "--roles", EXAMPLE, "--assassin", "mordred", "--seed", "2", "--games", "20", "--json",
                 "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["players"] == 7  # implied by the roles
    shots = 0
    for game in sorted(tmp_path.glob("game-*")):
        meta = json.loads((game / META).read_text())
        rules = RuleSet.model_validate(meta["rules"])
        assert rules.assassin is Role.MORDRED and sorted(rules.roles) == sorted(Role.parse(r) for r in
                                                                                EXAMPLE.split(","))
        result = json.loads((game / RESULT).read_text())
        assert result["roles"][str(result["assassin"])] == "Mordred"
        for line in (game / EVENTS).read_text().splitlines():
            event = json.loads(line)
            if event["type"] == "assassination":
                shots += 1
                assert event["assassin"] == result["assassin"]
    assert shots > 0  # over 20 rule-bot games, good completed three quests at least once


def test_one_game_transcript_with_spaces_and_capitals():
    out = avalon("play", "--roles", "Merlin, Loyal Servant,loyal servant,MORDRED,Minion", "--assassin", "Minion",
                 "--seed", "1")
    assert out.returncode == 0, out.stderr
    assert "Mordred" in out.stdout.splitlines()[-1]


@pytest.mark.parametrize(("args", "message"), [
    (["--roles", "merlin,merlin,loyal_servant,morgana,assassin"], "roles: Merlin appears 2 times"),
    (["--roles", "merlin,percival,loyal_servant,loyal_servant,assassin"], "roles: 4 good and 1 evil roles"),
    (["--roles", EXAMPLE], "assassin: no Assassin among the roles; name the evil role"),
    (["--roles", EXAMPLE, "--assassin", "oberon"], "assassin: Oberon is not among the roles"),
    (["--roles", EXAMPLE, "--assassin", "percival"], "assassin: Percival is a good role"),
    (["--roles", "merlin,percival,loyal_servant,loyal_servant,minion,minion", "--assassin", "minion"],
     "assassin: 2 seats are Minion of Mordred"),
    (["--roles", "merlin,percival,loyal_servant,loyal_servant,minion,minion"], "roles: Merlin needs an evil role"),
    (["--roles", "percival,loyal_servant,loyal_servant,morgana,minion", "--assassin", "morgana"],
     "assassin: no Merlin among the roles"),
    (["--roles", "merlin,percival,loyal_servant,morgana,wizard"], "roles: unknown role 'wizard'"),
    (["--roles", EXAMPLE, "--assassin", "mordred", "--players", "6"], "players: 6 players, but the role set has 7"),
    (["--assassin", "mordred"], "assassin: give the role set too"),
])
def test_impossible_sets_are_one_line_errors(args, message):
    out = avalon("play", *args)
    assert out.returncode == 2
    assert out.stderr.startswith("error: " + message), out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_the_transcript_names_the_holder_of_the_assassination():
    out = avalon("play", "--rules", "paper", "--roles", EXAMPLE, "--assassin", "mordred", "--seed", "5")
    assert out.returncode == 0, out.stderr
    shots = [line for line in out.stdout.splitlines() if "as Merlin:" in line]
    assert shots and all(line.startswith("Mordred Player ") for line in shots)
