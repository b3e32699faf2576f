"""Experiments: configs (variants, series of consecutive games), the study shape and its scheduler, the runner,
the results table.

The names below load their module when first used (PEP 562): reading a config loads no runner, pandas or model
client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from avalon_agents.lazy import lazy_exports

_WHERE = {"Experiment": "config", "load_experiments": "config", "format_table": "results",
          "results_table": "results", "run_experiment": "runner", "run_experiment_sync": "runner",
          "Lane": "study", "Study": "study", "STUDIES": "studies", "register_study": "studies"}

__all__ = [
    "STUDIES",
    "Experiment",
    "Lane",
    "Study",
    "format_table",
    "load_experiments",
    "register_study",
    "results_table",
    "run_experiment",
    "run_experiment_sync",
]


__getattr__ = lazy_exports(__name__, _WHERE)

if TYPE_CHECKING:
    from avalon_agents.experiments.config import Experiment, load_experiments
    from avalon_agents.experiments.results import format_table, results_table
    from avalon_agents.experiments.runner import run_experiment, run_experiment_sync
    from avalon_agents.experiments.studies import STUDIES, register_study
    from avalon_agents.experiments.study import Lane, Study
