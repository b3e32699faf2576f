"""Experiments: configs (variants, series of consecutive games), the resumable runner, the results table."""

from avalon_agents.experiments.config import Experiment, load_experiments
from avalon_agents.experiments.results import format_table, results_table
from avalon_agents.experiments.runner import run_experiment, run_experiment_sync

__all__ = ["Experiment", "format_table", "load_experiments", "results_table", "run_experiment",
           "run_experiment_sync"]
