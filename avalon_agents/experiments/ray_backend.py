"""`avalon run --backend ray`: every lane of a study (a series of an experiment) is a Ray task (one CPU), on an
existing cluster or a local one.

Tasks write the same run layout with the same resume rules as the local backend (a task is the scheduler's
`play_lane` in its own event loop), so a run can be started on one backend and finished on the other. Each task has
its own LLM clients, but the per-model limit on calls in flight holds for the whole cluster: a `CallLimits`
actor keeps one semaphore per model spec and every call enters through it (a round trip of about a
millisecond). Each task paces every endpoint at its share of the rate limits (1 / the tasks that run at once;
llm.pacer). The driver holds the directory (its lock and fingerprint: `scheduler.holding`) and shows progress by
watching it. `max_games` is split over the lanes in order, before the tasks start.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from avalon_agents.errors import Unusable
from avalon_agents.experiments.config import Experiment
from avalon_agents.experiments.scheduler import Tally, finished, holding, planned, play_lane
from avalon_agents.experiments.study import Lane, Study
from avalon_agents.llm import ClientPool, ModelSettings
from avalon_agents.plugins import LOADED, load_plugins


class ClusterFailed(Unusable):
    """Ray did not start, or a Ray worker (or its node, or the CallLimits actor) died while the run played: the
    run is not usable as it stands; its finished games are kept and a rerun goes on."""


DEATHS = ("WorkerCrashedError", "ActorDiedError", "ActorUnavailableError", "NodeDiedError", "OwnerDiedError",
          "ObjectLostError", "LocalRayletDiedError")
"""The names of ray.exceptions that say a process of the cluster died (looked up by name: they vary by version)."""


class CallLimits:
    """A Ray actor (async, so waiting calls do not block it): per model spec, at most `limit` calls in flight
    across every task of the run (None: as many as the tasks make; they are counted)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.slots: dict[str, asyncio.Semaphore] = {}
        self.entered: dict[str, int] = {}

    async def enter(self, spec: str) -> None:
        if self.limit is not None:
            await self.slots.setdefault(spec, asyncio.Semaphore(self.limit)).acquire()
        self.entered[spec] = self.entered.get(spec, 0) + 1

    async def leave(self, spec: str) -> None:
        if self.limit is not None:
            self.slots[spec].release()

    async def counts(self) -> dict[str, int]:
        """Calls admitted so far, per spec."""
        return dict(self.entered)


class ClusterSlot:
    """The async context manager an LLMClient enters around each call: a place under the cluster's limit."""

    def __init__(self, limits: Any, spec: str) -> None:
        self.limits = limits
        self.spec = spec

    async def __aenter__(self) -> None:
        await self.limits.enter.remote(self.spec)

    async def __aexit__(self, *exc: object) -> None:
        await self.limits.leave.remote(self.spec)


def _lane_task(study: Study, lane: Lane, cap: int | None, limits: Any, plugins: list[str],
               share: float = 1.0) -> int:
    """Runs in a Ray worker: import the run's plugins, then play the unfinished games of one lane (at most
    `cap`), pacing each endpoint at `share` of its rate limits (the workers split them)."""
    from avalon_agents.llm.pacer import set_share

    load_plugins(plugins)
    set_share(share)
    played: list[int] = []
    clients = ClientPool(limit=study.llm_calls, override=study.override,
                         slots=lambda spec: ClusterSlot(limits, spec))
    asyncio.run(play_lane(study, lane, clients, lambda lane, n, path: played.append(n), cap))
    return len(played)


def run_with_ray(study: Study | dict[str, Experiment], out: Path, *, model: ModelSettings | None = None,
                 max_games: int | None = None, source: Path | None = None, address: str | None = None,
                 num_cpus: int | None = None,
                 on_progress: Callable[[int], None] = lambda done: None) -> dict[str, int]:
    """Play the study's lanes (an experiment's variants: its series) as Ray tasks; returns when every task has
    finished, with the number of LLM calls admitted per model spec (all went through the cluster-wide limit)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # offline machines: no usage reporting
    import ray

    if not isinstance(study, Study):
        from avalon_agents.experiments.runner import ExperimentStudy

        study = ExperimentStudy(study, model, source)
    out = out.resolve()
    with holding(study, out):  # the driver holds the directory while the tasks play
        return _run(ray, study, out, max_games, address, num_cpus, on_progress)


def _run(ray, study, out, max_games, address, num_cpus, on_progress) -> dict[str, int]:
    if not ray.is_initialized():
        kwargs = {"address": address} if address else {"num_cpus": num_cpus, "include_dashboard": False}
        try:
            ray.init(ignore_reinit_error=True, log_to_driver=False, **kwargs)
        except Exception as exc:  # no cluster at the address, a local start that timed out (a bare Exception)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "no message"
            raise ClusterFailed(f"run stopped: Ray did not start ({type(exc).__name__}: {first})") from None
    task = ray.remote(num_cpus=1, max_retries=0)(_lane_task)
    limits = ray.remote(num_cpus=0)(CallLimits).remote(study.llm_calls)
    plugins = list(LOADED)  # what the driver imported (resolved paths or module names): every worker imports them
    lanes = planned(study, out, max_games)
    workers = max(1, min(len(lanes), int(ray.cluster_resources().get("CPU", 1))))
    refs = [task.remote(study, lane, cap, limits, plugins, 1 / workers) for lane, cap in lanes]
    deaths = tuple(getattr(ray.exceptions, name) for name in DEATHS if hasattr(ray.exceptions, name))
    pending = list(refs)
    tally = Tally(study, out, [])
    try:
        while pending:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=1.0)
            on_progress(finished(study, out))
            tally.now(finished(study, out))
        ray.get(refs)  # raises a task's error here
        on_progress(finished(study, out))
        tally.now(finished(study, out))
        return ray.get(limits.counts.remote())
    except deaths as exc:
        raise ClusterFailed(f"run stopped: a Ray worker died while playing ({type(exc).__name__})") from None
    except ray.exceptions.RayTaskError as exc:  # the task's own error, as the local backend would raise it
        cause = getattr(exc, "cause", None)
        if isinstance(cause, Exception) and not isinstance(cause, ray.exceptions.RayError):
            raise cause from None
        if isinstance(cause, BaseException):  # SystemExit: the task ended its worker
            raise ClusterFailed(f"run stopped: a Ray worker exited while playing ({type(cause).__name__}: "
                                f"{cause})") from None
        raise
    finally:
        tally.end()
