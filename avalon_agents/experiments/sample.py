"""The run a notebook opens: the one it names, or, where that run was never made (a fresh checkout), a small
scripted run of the config that makes it, played on first use in seconds and kept beside it, with a banner saying
its numbers are no result. Both notebooks (notebooks/*.ipynb) open their run through `notebook_run`.

    RUN = notebook_run("../runs/table2", "../experiments/paper/table2.yaml")
"""

from __future__ import annotations

import os
from pathlib import Path

from avalon_agents.records.walk import finished_games

SAMPLE_GAMES = 4
"""Games of a sample run: a few scripted games, spread over the config's variants."""
SCRIPTED = "-scripted"
"""A sample run's folder: the missing run's name and this (runs/table2-scripted for runs/table2)."""


def notebook_run(run: str | Path, config: str | Path, *, variable: str = "AVALON_RUN",
                 games: int = SAMPLE_GAMES) -> Path:
    """The run directory a notebook reads: $`variable` when set (as given); else `run` when it holds a finished
    game; else the sample run beside it (RUN-scripted), made now if it holds fewer than `games` finished games
    (the config's games on the scripted model, `avalon run CONFIG --model scripted --max-games GAMES`). Prints a
    banner when it opens the sample, naming the command that makes the real run."""
    given = os.environ.get(variable)
    if given:
        return Path(given)
    run = Path(run)
    if finished_games(run):
        return run
    sample = run.with_name(run.name + SCRIPTED)
    made = len(finished_games(sample))
    if made < games:
        from avalon_agents.experiments.config import load_experiments

        games = min(games, sum(exp.games for exp in load_experiments(config).values()))
        if made < games:
            from avalon_agents.experiments.runner import run_experiment_sync

            run_experiment_sync(config, sample, model="scripted", max_games=games)
    print(f"NOTE: {run} holds no finished game, so this notebook shows a small sample run instead: {sample}, "
          f"{_games(len(finished_games(sample)))} of {config} on the scripted model (canned replies: the numbers "
          f"are no result){', made just now' if made < games else ''}. For the real run, from this notebook's "
          f"folder: `avalon run {config} --out {run}` (or set {variable} to a run directory), then run the "
          "notebook again.")
    return sample


def _games(n: int) -> str:
    return f"{n} game" if n == 1 else f"{n} games"
