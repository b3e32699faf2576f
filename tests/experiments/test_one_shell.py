"""One study shell under every study: the red team and the bias study deal any table an experiment can (a role set,
the assassin, the Lady of the Lake), plan and budget like `avalon run` (--check, --budget-usd), and every study
(a run, a red team, a bias study, `avalon play --out`) leaves its run record naming its command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.core.events import GameStarted, LadyExamined
from avalon_agents.core.types import Role
from avalon_agents.llm.loopback import openai_server
from avalon_agents.records.run_dir import read_events, read_result
from avalon_agents.records.run_record import read_run_record
from avalon_agents.records.walk import finished_games
from tests.helpers import avalon
from tests.view import runs

ROLES = [Role.MERLIN, Role.PERCIVAL, Role.LOYAL_SERVANT, Role.LOYAL_SERVANT, Role.MORGANA, Role.MORDRED, Role.OBERON]
TABLE = """\
roles: [merlin, percival, loyal_servant, loyal_servant, morgana, mordred, oberon]
assassin: mordred
lady_of_the_lake: true
"""
REDTEAM = TABLE + runs.REDTEAM  # the view's small red team, at this table
BIAS = TABLE + """\
name: b
model: scripted
agents: {vanilla: {kind: llm}, bot: {kind: rulebot}}
seats: [vanilla, bot, vanilla, bot, vanilla, bot, vanilla]
lists: [options]
games: 1
seed: 11
"""
RUN = """\
name: r
players: 5
agents: {bot: {kind: rulebot}}
sides: {good: bot, evil: bot}
games_per_series: 2
"""


def _dealt_the_table(out: Path, games: int) -> None:
    """Every game of the run was played by the role set, with Mordred as assassin and the Lady; the Lady was
    used."""
    found = finished_games(out)
    assert len(found) == games
    lady = 0
    for game in found:
        events = read_events(game)
        rules = next(e for e in events if isinstance(e, GameStarted)).rules
        assert sorted(rules.roles) == sorted(ROLES) and rules.assassin is Role.MORDRED and rules.lady_of_the_lake
        result = read_result(game)
        assert sorted(result.roles.values()) == sorted(ROLES)
        assert result.assassin is None or result.roles[result.assassin] is Role.MORDRED
        lady += any(isinstance(e, LadyExamined) for e in events)
    assert lady, "no game used the Lady of the Lake"


def _recorded(out: Path, command: str, name: str) -> None:
    record = read_run_record(out)
    assert record is not None, f"no run.json in {out}"
    assert (record.command, record.name) == (command, name) and record.environment


def test_a_red_team_deals_a_role_set_with_the_lady_and_records_its_run(tmp_path):
    (tmp_path / "rt.yaml").write_text(REDTEAM)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["redteam", str(tmp_path / "rt.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "plan: 2 games," in result.output  # every study prints its plan
    _dealt_the_table(out, 2)
    _recorded(out, "redteam", "rt")
    assert read_run_record(out).config["lady_of_the_lake"] is True


def test_a_bias_study_deals_a_role_set_with_the_lady_and_records_its_run(tmp_path):
    (tmp_path / "b.yaml").write_text(BIAS)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["bias", str(tmp_path / "b.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    _dealt_the_table(out, 2)
    _recorded(out, "bias", "b")
    assert read_run_record(out).config["roles"] == [r.value for r in ROLES]


def test_a_table_the_rules_refuse_is_one_line_naming_the_field(tmp_path):
    (tmp_path / "rt.yaml").write_text(REDTEAM.replace("lady_of_the_lake: true", "lady_of_the_lake: true\nplayers: 6"))
    (tmp_path / "b.yaml").write_text(BIAS.replace("assassin: mordred", "assassin: merlin"))
    for command, config, field in (("redteam", "rt.yaml", "players"), ("bias", "b.yaml", "assassin")):
        result = CliRunner().invoke(cli, [command, str(tmp_path / config)])
        assert result.exit_code == 2 and field in result.output, result.output
        assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_a_run_and_play_out_record_their_command(tmp_path):
    (tmp_path / "r.yaml").write_text(RUN)
    assert avalon("run", str(tmp_path / "r.yaml"), "--out", str(tmp_path / "run")).returncode == 0
    _recorded(tmp_path / "run", "run", "r")
    played = avalon("play", "--games", "2", "--out", str(tmp_path / "play"))
    assert played.returncode == 0, played.stderr
    _recorded(tmp_path / "play", "play", "play")
    assert read_run_record(tmp_path / "play").config["games"] == 2


@pytest.fixture
def priced(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text("m: {input: 100.0, output: 400.0, date: '2026-11-27', source: a test}\n")
    return path


@pytest.mark.parametrize("command, text, per", [("redteam", REDTEAM, "attacks"), ("bias", BIAS, "lists")])
def test_paired_studies_plan_their_calls_and_dollars_without_a_call(command, text, per, priced, tmp_path):
    config = tmp_path / "c.yaml"
    with openai_server() as server:
        spec = f"openai-compatible:m@{server.base_url}"
        config.write_text(text.replace("model: scripted", f"model: '{spec}'"))
        done = avalon(command, str(config), "--check", "--json", "--prices", str(priced), "--out",
                      str(tmp_path / "o"))
        assert server.state.requests == []
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["games"] == plan["pairs"] * (1 + len(plan[per])) == 2
    assert plan["calls"] > 0 and plan["usd"] > 0 and plan["models"][0]["price"]["source"] == "a test"
    assert sum(g["usd"] for g in plan["groups"]) == pytest.approx(plan["usd"])
    assert not (tmp_path / "o").exists()
    unpriced = avalon(command, str(config), "--budget-usd", "1", "--out", str(tmp_path / "o"))
    assert unpriced.returncode == 2 and "budget-usd: no price for m" in unpriced.stderr


@pytest.mark.slow  # LLM games over the loopback server
def test_a_bias_study_stops_before_the_game_that_would_go_over_its_budget(priced, tmp_path):
    config, out = tmp_path / "b.yaml", tmp_path / "out"
    with openai_server() as server:
        spec = f"openai-compatible:m@{server.base_url}"
        config.write_text(BIAS.replace("model: scripted", f"model: '{spec}'").replace("games: 1", "games: 3"))
        plan = json.loads(avalon("bias", str(config), "--check", "--json", "--prices", str(priced)).stdout)
        budget = plan["usd"] / plan["games"] * 2.5
        stopped = avalon("bias", str(config), "--budget-usd", f"{budget}", "--prices", str(priced), "--out",
                         str(out))
        assert stopped.returncode == 4, stopped.stderr
        assert "game is expected to cost" in stopped.stderr and "finished games are kept" in stopped.stderr
        assert 1 <= len(finished_games(out)) < plan["games"]
        again = avalon("bias", str(config), "--budget-usd", f"{plan['usd'] * 10}", "--prices", str(priced),
                       "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert len(finished_games(out)) == plan["games"]
