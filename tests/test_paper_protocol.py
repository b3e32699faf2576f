"""The paper protocol's loose ends (issue 26.5): what --check prices for Table 6's ablations, what a run's
provenance names, and what the help says --max-games does."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.experiments import load_experiments
from avalon_agents.experiments.plan import calls_per_game
from avalon_agents.modules import MODULES

ROOT = Path(__file__).resolve().parents[1]


def test_check_prices_table_6s_ablations_by_the_calls_they_leave_out():
    table6 = load_experiments(ROOT / "experiments" / "paper" / "table6.yaml")
    full, wo_is, wo_ao = (calls_per_game(table6[v]) for v in ("full", "wo_IS", "wo_AO"))
    learning = MODULES["experience"].expected.per_turn.calls  # six seats' calls a game: 2 IS + 1 AO each
    evil = 2  # ours plays the two evil roles of a 6-player game
    assert full - wo_is == learning * 2 / 3 * evil / 6
    assert full - wo_ao == learning * 1 / 3 * evil / 6
    assert full > wo_ao > wo_is


def test_a_games_meta_names_its_extractor_briefly():
    from avalon_agents.records.run_dir import GameMeta

    assert GameMeta(extractor_model={"spec": "local:smollm2", "temperature": 0.0}).extractor() == "local:smollm2 at T=0"
    assert GameMeta().extractor() is None and GameMeta(cards="improved").cards == "improved"


@pytest.mark.slow  # a run and its analysis through the command line: seconds
def test_a_runs_provenance_names_its_role_cards_and_extractor(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text("name: tiny\nmodel: scripted\nagents:\n  ours: {kind: llm, cards: improved}\n"
                      "  bots: {kind: rulebot}\nsides: {good: ours, evil: bots}\nseries: 1\ngames_per_series: 1\n")
    result = CliRunner().invoke(cli, ["run", str(config), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("produced by:"))
    assert "role cards improved;" in line and "extractor scripted at T=0;" in line
    report = CliRunner().invoke(cli, ["analyze", str(tmp_path / "run"), "--out", str(tmp_path / "a")])
    assert report.exit_code == 0, report.output
    assert "role cards improved; extractor scripted at T=0;" in report.output


def test_max_games_help_says_it_caps_the_runs_total():
    text = CliRunner().invoke(cli, ["run", "--help"]).output
    assert "this many finished games in all" in " ".join(text.split())
