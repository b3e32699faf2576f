"""What `--check` says is about the run planned: a run of bots calls no model, so its plan says nothing of how
decisions are read by a model or what calls cost."""

from __future__ import annotations

from pathlib import Path

from avalon_agents.experiments import load_experiments
from avalon_agents.experiments.plan import plan_lines
from avalon_agents.experiments.tournament import load_tournament

ROOT = Path(__file__).parents[2]


def test_a_plan_of_bots_says_nothing_of_models():
    lines = plan_lines(load_tournament(ROOT / "experiments/tournament_bots.yaml"), Path("runs/x"))
    text = "\n".join(lines)
    assert "JSON-schema" not in text and "decisions:" not in text and "calls and tokens:" not in text
    assert lines[-1] == "run directory: runs/x" and any(line.startswith("total") for line in lines)


def test_a_plan_of_models_says_how_they_decide_and_what_calls_cost():
    text = "\n".join(plan_lines(load_experiments(ROOT / "experiments/quickstart.yaml"), Path("runs/x")))
    assert "decisions: JSON-schema constrained where the model supports it" in text
    assert "calls and tokens: estimates per agent and pipeline" in text
