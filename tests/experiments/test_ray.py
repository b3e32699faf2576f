"""The Ray backend on a local 2-CPU Ray: same layout and resume rules as the local backend. Slow (Ray's start
and its worker processes); ray is imported only by these tests, so the module collects without the extra."""

from __future__ import annotations

import pytest

from avalon_agents.experiments import load_experiments, results_table, run_experiment
from avalon_agents.records import is_done, read_trace
from avalon_agents.records.run_dir import EXPERIMENT
from tests.experiments.test_runner import CONFIG, FILES

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # a local Ray cluster takes both cores


@pytest.fixture(scope="module")
def local_ray():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_series_run_as_ray_tasks_and_resume_locally(tmp_path, local_ray):
    import asyncio

    from avalon_agents.experiments.ray_backend import run_with_ray

    path = tmp_path / "tiny.yaml"
    path.write_text(CONFIG)
    variants = load_experiments(path)
    out = tmp_path / "run"
    seen = []
    admitted = run_with_ray(variants, out, max_games=5, on_progress=seen.append)
    done = [g for g in out.glob("*/series-*/game-*") if is_done(g)]
    assert len(done) == 5 and seen[-1] == 5
    calls = sum(r.type == "llm_call" for g in done for r in read_trace(g))
    assert admitted == {"scripted": calls} and calls > 0  # every call went through the cluster's limit
    assert all((g / f).is_file() for g in done for f in FILES)
    assert (out / EXPERIMENT).is_file()
    asyncio.run(run_experiment(variants, out))  # the local backend finishes the same run
    games = sorted(out.glob("*/series-*/game-*"))
    assert len(games) == 8 and all(is_done(g) for g in games)
    assert (results_table(out)["games"] == 4).all()


def _hold(limits, seconds: float) -> tuple[float, float]:
    """Enter the cluster-wide slot of one spec, hold it, report when (wall clock)."""
    import asyncio
    import time

    from avalon_agents.experiments.ray_backend import ClusterSlot

    async def run():
        async with ClusterSlot(limits, "spec-a"):
            start = time.time()
            await asyncio.sleep(seconds)
            return start, time.time()

    return asyncio.run(run())


@pytest.mark.parametrize("limit", [1, 2])
def test_the_call_limit_spans_tasks_in_different_workers(local_ray, limit):
    import ray

    from avalon_agents.experiments.ray_backend import CallLimits

    limits = ray.remote(num_cpus=0)(CallLimits).remote(limit)
    hold = ray.remote(num_cpus=1)(_hold)
    spans = ray.get([hold.remote(limits, 2.0) for _ in range(2)])
    (a0, a1), (b0, b1) = sorted(spans)
    overlapped = b0 < a1
    assert overlapped == (limit == 2)  # with one slot the second task waits for the first


def test_ray_workers_import_the_runs_plugins(tmp_path, local_ray):
    from avalon_agents.experiments.ray_backend import run_with_ray
    from tests.experiments.test_runner import plugged

    out = tmp_path / "run"
    run_with_ray(load_experiments(plugged(tmp_path)), out)
    (game,) = out.glob("main/series-1/game-*")
    analyses = [r for r in read_trace(game) if r.type == "module" and r.slot == "analysis"]
    assert analyses and all(r.module == "quiet_analysis" for r in analyses)
