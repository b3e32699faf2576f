"""Experiment configs: every shipped file validates; mistakes name the field and the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.core.types import Role, Team
from avalon_agents.experiments import load_experiments
from avalon_agents.modules.base import SLOTS

ROOT = Path(__file__).parent.parent.parent
FILES = sorted((ROOT / "experiments").rglob("*.yaml"))
GOOD = """\
name: t
model: scripted
agents:
  ours: {kind: cognitive}
  base: {kind: baseline}
sides: {good: ours, evil: base}
series: 2
games_per_series: 3
"""


@pytest.mark.parametrize("path", [p for p in FILES if "agents" not in p.parts], ids=lambda p: p.name)
def test_every_experiment_file_validates(path):
    """Every shipped config loads with the loader of its command (tournaments, red-team suites and bias studies
    have theirs)."""
    if path.name.startswith("tournament"):
        from avalon_agents.experiments.tournament import load_tournament

        assert load_tournament(path)
        return
    if path.name.startswith("redteam"):
        from avalon_agents.experiments.redteam import load_redteam

        suite, attacks = load_redteam(path)
        assert suite and attacks
        return
    if path.name.startswith("bias"):
        from avalon_agents.experiments.bias import load_bias

        study = load_bias(path)
        assert study.seats and len(study.seats) == study.players
        return
    variants = load_experiments(path)
    assert variants
    for exp in variants.values():
        assert exp.games >= 1 and set(exp.agents) >= {"ours"}


def test_paper_tables_have_the_papers_cells():
    table2 = load_experiments(ROOT / "experiments/paper/table2.yaml")
    assert len(table2) == 10 and all(e.series == 1 and e.games_per_series == 10 for e in table2.values())
    for table in ("table2", "table6", "table7", "table8"):  # the paper's setting: its rules, pipeline, free text
        for exp in load_experiments(ROOT / f"experiments/paper/{table}.yaml").values():
            assert exp.rules == "paper" and exp.model.constrained is False
            modules = exp.agents["ours"].modules
            assert modules.settings("action").options["combine"] is False
            assert all(modules.settings(s).options["cadence"] == "per_turn" for s in ("analysis", "plan")
                       if modules.settings(s).enabled)
    assert table2["evil_full"].sides[Team.EVIL] == "ours" and table2["good_full"].sides[Team.GOOD] == "ours"
    assert not table2["good_wo_plan"].agents["ours"].modules.plan.enabled
    assert table2["good_full"].agents["ours"].modules.enabled() == list(SLOTS)  # all modules on
    table6 = load_experiments(ROOT / "experiments/paper/table6.yaml")
    assert not table6["wo_IS"].agents["ours"].modules.experience.options["improve_strategy"]
    table7 = load_experiments(ROOT / "experiments/paper/table7.yaml")
    assert all(not e.agents["ours"].learn and not e.agents["baseline"].learn for e in table7.values())
    table8 = load_experiments(ROOT / "experiments/paper/table8.yaml")
    scopes = {name: e.agents["ours"].modules.analysis.options["scope"] for name, e in table8.items()}
    assert scopes == {"all_players": "all", "teammates_only": "teammates", "adversaries_only": "adversaries"}
    assert table8["teammates_only"].paper["evil_win_rate"] == 0.8


def test_variants_merge_over_the_base_and_grid_crosses(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text(GOOD + "grid:\n  agents.ours.modules.analysis.enabled: [true, false]\n"
                           "  agents.ours.modules.planning.enabled: [true, false]\n")
    variants = load_experiments(path)
    assert len(variants) == 4
    off = variants["analysis-false_planning-false"]
    assert not off.agents["ours"].modules.analysis.enabled and not off.agents["ours"].modules.plan.enabled
    assert off.agents["base"].kind == "baseline" and off.series == 2


@pytest.mark.parametrize("bad, field, line", [
    ("serie: 2\n", "serie: unknown key", 9),
    ("games_per_series: 3\n", "duplicate key 'games_per_series', first on line 8", 9),  # never "last wins"
    ("concurrency: {games: 0}\n", "concurrency.games", 9),
    ("rules: offical\n", "rules: unknown rules preset 'offical'", 9),
    ("schedule: sometimes\n", "schedule", 9),
])
def test_bad_values_name_the_field_and_line(tmp_path, bad, field, line):
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD + bad)
    if field is None:
        load_experiments(path)
        return
    with pytest.raises(ValueError) as err:
        load_experiments(path)
    assert field in str(err.value) and f"bad.yaml:{line}:" in str(err.value)


def test_nested_mistakes_name_the_path(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace("ours: {kind: cognitive}", "ours: {kind: cognitive, modules: {analysis: "
                                                              "{options: {scope: friends}}}}"))
    with pytest.raises(ValueError, match=r"bad.yaml:4: agents.ours.modules: analysis.options.scope"):
        load_experiments(path)
    path.write_text(GOOD.replace("evil: base", "evil: nobody"))
    with pytest.raises(ValueError, match=r"no agent named 'nobody'"):
        load_experiments(path)
    path.write_text(GOOD.replace("kind: baseline", "kind: robot"))
    with pytest.raises(ValueError, match=r"bad.yaml:5: agents.base.kind: unknown agent kind 'robot'"):
        load_experiments(path)


def test_roles_and_lineup_seating(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text(GOOD.replace("sides: {good: ours, evil: base}",
                                 "sides: {good: ours, evil: base}\nroles: {Merlin: base}"))
    exp = load_experiments(path)["main"]
    assert exp.agent_for_role(Role.MERLIN) == "base" and exp.agent_for_role(Role.PERCIVAL) == "ours"
    path.write_text(GOOD.replace("sides: {good: ours, evil: base}", "lineup: {ours: 4, base: 1}"))
    with pytest.raises(ValueError, match="lineup: 5 seats for a 6-player game"):
        load_experiments(path)


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_check_prints_the_plan_and_bad_files_are_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["run", "--check", str(ROOT / "experiments/paper/table2.yaml")])
    assert result.exit_code == 0, result.output
    assert "good_wo_plan" in result.output and "100" in result.output  # 10 cells x 10 games
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD + "series: zero\n")
    result = CliRunner().invoke(cli, ["run", "--check", str(bad)])
    assert result.exit_code == 2 and "series" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_the_plan_counts_only_the_modules_that_are_on():
    from avalon_agents.agents.registry import expected_cost
    from avalon_agents.experiments.plan import calls_per_game, game_cost
    from avalon_agents.modules import MODULES

    table2 = load_experiments(ROOT / "experiments" / "paper" / "table2.yaml")
    full, no_analysis = calls_per_game(table2["good_full"]), calls_per_game(table2["good_wo_analysis"])
    good_seats = 4  # ours plays the four good roles of a 6-player game
    per_turn = {slot: MODULES[slot].expected.per_turn for slot in SLOTS}  # what each module declares
    assert full - no_analysis == pytest.approx(per_turn["analysis"].calls / 6 * good_seats)
    every = sum(c.calls for c in per_turn.values())  # every module on, the paper's cadence
    assert full == pytest.approx((every * good_seats + expected_cost("baseline").calls * 2) / 6)
    tokens = game_cost(table2["good_full"]).input_tokens  # tokens follow the same declarations
    every_in = sum(c.input_tokens for c in per_turn.values())
    assert tokens == pytest.approx((every_in * good_seats + expected_cost("baseline").input_tokens * 2) / 6)


def test_the_plan_leaves_out_learning_after_each_series_last_game():
    from avalon_agents.agents.baseline import BaselineAgent
    from avalon_agents.experiments.plan import calls_per_game, calls_per_run
    from avalon_agents.modules import MODULES

    exp = load_experiments(ROOT / "experiments" / "paper" / "table2.yaml")["good_full"]
    # ours on the four good seats, the baseline (its suggestions and strategy update) on the two evil ones
    learning = MODULES["experience"].expected.per_turn.calls / 6 * 4 + BaselineAgent.learning.calls / 6 * 2
    assert calls_per_game(exp) - calls_per_game(exp, learning=False) == pytest.approx(learning)
    assert calls_per_run(exp) == pytest.approx(calls_per_game(exp) * exp.games - learning * exp.series)
    assert calls_per_run(exp.model_copy(update={"learn_after_last": True})) == pytest.approx(
        calls_per_game(exp) * exp.games)


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_check_says_how_precise_the_planned_games_are():
    from avalon_agents.analysis.stats import wilson
    from avalon_agents.experiments.plan import plan_lines, precision

    half, diff = precision(10)
    low, high = wilson(5, 10)  # the interval avalon run prints for 5 of 10
    assert half == pytest.approx((high - low) / 2) and half == pytest.approx(0.263, abs=0.005)
    assert diff == pytest.approx(0.626, abs=0.005)
    assert precision(400)[1] < 0.1 < precision(100)[1]
    lines = plan_lines(load_experiments(ROOT / "experiments/paper/table7.yaml"), Path("runs/x"))
    assert "win-rate CI ±" in lines[4] and lines[5].rstrip().endswith("26%               63%")
    assert lines[0].endswith("paper rules, 6 players") and lines[1] == "decisions: free text, read by the extractor"
