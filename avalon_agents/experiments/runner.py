"""Runs an experiment: variants x series x consecutive games, resumable, into a run directory.

    <out>/experiment.json
    <out>/<variant>/series-<k>/experience/<agent>/      chromadb store: what that agent learned in this series
    <out>/<variant>/series-<k>/game-<nnnnn>/            events.jsonl, trace.jsonl, meta.json, result.json

Series run concurrently (up to `concurrency.games`); the games of a series run in order, since experience
flows forward. A game directory with result.json is finished and never touched again; an unfinished one is
deleted and replayed from its start (its recorded answers answer the requests that match them again, so no call
is paid twice: llm.replay), and whatever the interrupted game had put in the series' experience
store is removed first, so the store reflects finished games only. Seeds depend only on (seed, series,
game), so a resumed run plays the same games.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loguru import logger

from avalon_agents.agents.registry import needs_llm
from avalon_agents.aio import run_sync
from avalon_agents.engine import deal
from avalon_agents.experiments.config import SERIES_STRIDE, Experiment, load_experiments
from avalon_agents.experiments.guard import allotment, check_free, check_same_config, fingerprint, run_lock
from avalon_agents.experiments.plan import decisions, pipeline
from avalon_agents.experiments.spend import Budget
from avalon_agents.extract.extractor import extractor_settings
from avalon_agents.host.host import GameAborted
from avalon_agents.host.job import GameJob, for_game, play_job, role_order
from avalon_agents.host.play import AgentSetup
from avalon_agents.llm import ClientPool, ModelSettings
from avalon_agents.orders import Orders
from avalon_agents.plugins import LOADED
from avalon_agents.records import is_done, read_trace, usage
from avalon_agents.records.run_dir import EXPERIMENT, Seating, game_dir, series_dir, write_json_atomic


@dataclass(frozen=True)
class Job:
    variant: str
    series: int  # 1-based
    experiment: Experiment

    @property
    def label(self) -> str:
        return f"{self.variant}/series-{self.series}"


def block_size(exp: Experiment) -> int | None:
    """The games that share one deal: a tournament's block (one game per entrant) or a balanced lineup's
    (`players` games); None: every game deals anew."""
    if exp.rotation is not None:
        return len(exp.rotation)
    if exp.lineup is not None and exp.schedule == "balanced":
        return exp.players
    return None


def game_seed(exp: Experiment, series: int, game: int) -> int:
    """The game's seed; the games of a block (a tournament's, a balanced lineup's) share one, so one deal per
    block."""
    block = block_size(exp)
    step = game - 1 if block is None else (game - 1) // block
    return exp.seed + SERIES_STRIDE * (series - 1) + step


def game_orders(exp: Experiment, seed: int) -> Orders:
    """The listing orders of a game's wording, drawn from its seed as the config's `order` asks."""
    return Orders.make(seed, exp.players, modes=exp.order.modes())


def seating(exp: Experiment, seed: int, series: int, game: int) -> list[str]:
    """The agent name at each seat, from the roles the seed deals."""
    rules = exp.game_rules()
    order = role_order(rules, seed)  # seats in role order
    if exp.rotation is not None:
        return rotation(exp.rotation, order, seed, game)
    if exp.lineup is None:
        roles = deal(rules, seed)
        return [exp.agent_for_role(roles[seat]) for seat in rules.seats]
    names = [name for name, count in exp.lineup.items() for _ in range(count)]
    if exp.schedule == "balanced":  # a Latin square over the block's one deal: seats, roles, speaking positions
        return rotation(names, list(rules.seats), seed, game)
    if exp.schedule == "roles":  # rotate: over `players` games every agent sits in every role
        shift = (game - 1 + series - 1) % len(names)
        names = names[shift:] + names[:shift]
    else:
        random.Random(seed).shuffle(names)
    by_seat = dict(zip(order, names))
    return [by_seat[seat] for seat in rules.seats]


def rotation(entrants: list[str], order: list[int], seed: int, game: int) -> list[str]:
    """A tournament's seating (and a balanced lineup's): the entrant at each seat (seats 1..N in order). The n
    entrants (a lineup's agents, once per seat they fill), in an order shuffled by the block's seed, go round
    the seats in `order`: in game k of the block the seat at position j gets entrant (j + k) mod n. Over the
    block's n games every entrant takes every position exactly once, so (all under the block's one deal and
    first leader) every seat, every role and every speaking position of the first round."""
    names = list(entrants)
    random.Random(seed).shuffle(names)
    k = (game - 1) % len(names)
    by_seat = {seat: names[(j + k) % len(names)] for j, seat in enumerate(order)}
    return [by_seat[seat] for seat in sorted(order)]


def series_setups(exp: Experiment, folder: Path, clients: ClientPool) -> dict[str, AgentSetup]:
    """Per agent name: its model settings, the extractor's, its module config and its own experience store."""
    from avalon_agents.stores.experience import ExperienceStore

    out = {}
    for name, agent in exp.agents.items():
        if not needs_llm(agent.kind):
            out[name] = AgentSetup(clients=clients, options=agent.options)
            continue
        store_dir = folder / "experience" / name
        out[name] = AgentSetup(clients=clients, settings=agent.settings(exp.model), extractor=exp.extractor.model,
                               agent_config=agent.modules, experience=ExperienceStore(store_dir, run=1),
                               experience_dir=store_dir, learn=agent.learn, cards=agent.cards,
                               options=agent.options)
    return out


def forget_unfinished(models: dict[str, AgentSetup], first_unfinished: int) -> None:
    """Drop what an interrupted game (or any later one) had stored, so the store holds finished games only."""
    from avalon_agents.stores.experience import ExperienceStore

    for m in models.values():
        if m.experience_dir is None:
            continue
        if isinstance(m.experience, ExperienceStore):
            m.experience.forget_from(first_unfinished)
        m.pool().forget_from(first_unfinished)


async def run_series(job: Job, out: Path, clients: ClientPool, on_game: Callable[[Job, int, Path], None],
                     cap: int | None = None, aborted: list[str] | None = None, budget: Budget | None = None) -> None:
    """Play the series' unfinished games in order (at most `cap` of them now). A game aborted (the watchdog, or
    too many of its calls failed) ends the series for now; its reason is added to `aborted`. With a `budget`, a
    game that would take the run over it is not started (the series stops; `budget.stopped` says why)."""
    aborted = [] if aborted is None else aborted
    exp = job.experiment
    folder = series_dir(out, job.variant, job.series)
    paths = [game_dir(folder, n) for n in range(1, exp.games_per_series + 1)]
    pending = [n for n, p in enumerate(paths, 1) if not is_done(p)]
    models: dict[str, AgentSetup] | None = None
    for n in pending:
        if cap is not None:
            if cap <= 0:
                return
            cap -= 1
        ticket = budget.admit(job.variant) if budget is not None else None
        if budget is not None and ticket is None:
            return
        if models is None:  # made only when a game is played
            models = series_setups(exp, folder, clients)
            forget_unfinished(models, pending[0])
        path = paths[n - 1]
        game = game_job(exp, job, n, models)
        try:
            await play_job(game, path)
        except GameAborted as exc:
            logger.warning("{} game {} aborted: {} (replayed on resume; the series stops here)", job.label, n, exc)
            aborted.append(f"{job.label} game {n}: {exc}")
            if budget is not None:
                budget.settle(ticket, job.variant, path, finished=False)
            return
        except BaseException:
            if budget is not None:
                budget.settle(ticket, job.variant, path, finished=False)
            raise
        if budget is not None:
            budget.settle(ticket, job.variant, path, finished=True)
        on_game(job, n, path)


def game_job(exp: Experiment, job: Job, n: int, models: dict[str, AgentSetup]) -> GameJob:
    """Game `n` of a series: its seed, its seating and each seat's agent as that game sees it (an agent that does
    not learn starts from nothing; nothing is learned after a series' last game unless `learn_after_last`)."""
    rules = exp.game_rules()
    seed = game_seed(exp, job.series, n)
    names = seating(exp, seed, job.series, n)
    end_learning = n < exp.games_per_series or exp.learn_after_last
    per_agent = {name: for_game(m, learn=exp.agents[name].learn, end_learning=end_learning)
                 for name, m in models.items()}
    place = Seating(agents=dict(zip(rules.seats, names)), series=job.series, game=n, variant=job.variant, seed=seed,
                    schedule=exp.schedule if exp.lineup else None)
    return GameJob(rules=rules, seed=seed, kinds=tuple(exp.agents[name].kind for name in names),
                   setups=tuple(per_agent[name] for name in names), seating=place, orders=game_orders(exp, seed),
                   probes=exp.probes, watchdog=exp.watchdog_s, max_failed_calls=exp.health.max_failed_calls,
                   experience_game=n)


def jobs_of(variants: dict[str, Experiment]) -> list[Job]:
    return [Job(name, k, exp) for name, exp in variants.items() for k in range(1, exp.series + 1)]


def finished_games(variants: dict[str, Experiment], out: Path) -> int:
    return sum(is_done(game_dir(series_dir(out, job.variant, job.series), n)) for job in jobs_of(variants)
               for n in range(1, job.experiment.games_per_series + 1))


def write_experiment_json(out: Path, source: Path | None, variants: dict[str, Experiment],
                          model: ModelSettings | None) -> None:
    """experiment.json: the config, what else made the run, and the fingerprint a resume must match (raises
    ConfigChanged naming what differs from the games already in `out`)."""
    from importlib.metadata import version

    out.mkdir(parents=True, exist_ok=True)
    path = out / EXPERIMENT
    override = {k: v for k, v in model.public().items() if v not in (None, {})} if model else None
    configs = {name: exp.model_dump(mode="json") for name, exp in variants.items()}
    current = fingerprint(configs, override)
    check_same_config(out, current)
    started = json.loads(path.read_text())["started"] if path.exists() else time.strftime("%Y-%m-%dT%H:%M:%S")
    write_json_atomic(path, {
        "name": next(iter(variants.values())).name,
        "config_file": str(source) if source else None,
        "model_override": override,
        "plugins": list(LOADED),
        "version": version("avalon_agents"),
        "commit": commit(),
        "started": started,
        "variants": configs,
        # how each agent plays, in words (provenance lines quote it)
        "pipelines": {name: {"decisions": decisions(exp),
                             **{agent: pipeline(spec) for agent, spec in exp.agents.items()}}
                      for name, exp in variants.items()},
        "fingerprint": current,
    })


def preflight(out: Path, variants: dict[str, Experiment], model: ModelSettings | None) -> None:
    """Before anything is printed or played: every model can be built (keys present, specs known), the directory
    is free and holds no games of another config. Raises ValueError (one line)."""
    from avalon_agents.llm import check_reachable, make_model

    pool = ClientPool(override=model)
    for exp in variants.values():
        for agent in exp.agents.values():
            if not needs_llm(agent.kind):
                continue
            base = agent.settings(exp.model)
            wanted = [base, extractor_settings(exp.extractor.model, base)]
            if agent.modules is not None:
                wanted += [agent.modules.model_for(slot, base) for slot in agent.modules.enabled()]
            for settings in {pool.resolve(s).key(): pool.resolve(s) for s in wanted}.values():
                check_reachable(settings)
                if settings.provider != "local":  # the embedded server starts when the run does
                    make_model(settings)
    check_free(out)
    override = {k: v for k, v in model.public().items() if v not in (None, {})} if model else None
    check_same_config(out, fingerprint({name: exp.model_dump(mode="json") for name, exp in variants.items()},
                                       override))


def commit() -> str | None:
    """The git commit of the framework's checkout, if it runs from one (with "+dirty" for local changes)."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def caps(variants: dict[str, Experiment], out: Path, max_games: int | None) -> list[tuple[Job, int | None]]:
    """The series that still have games to play now, each with how many (None: all): `max_games` caps the run's
    total finished games, spread over the variants and series (see guard.allotment)."""
    jobs = jobs_of(variants)
    index = {name: i for i, name in enumerate(variants)}
    pending, finished = [], 0
    for job in jobs:
        folder = series_dir(out, job.variant, job.series)
        for n in range(1, job.experiment.games_per_series + 1):
            if is_done(game_dir(folder, n)):
                finished += 1
            else:
                pending.append((index[job.variant], job.series, n))
    chosen = allotment(pending, finished, max_games)
    plan = []
    for job in jobs:
        count = sum(1 for v, k, _ in chosen if v == index[job.variant] and k == job.series)
        if count:
            plan.append((job, None if max_games is None else count))
    return plan


async def run_experiment(variants: dict[str, Experiment] | str | Path, out: str | Path, *,
                         model: ModelSettings | str | None = None, max_games: int | None = None,
                         source: Path | None = None,
                         on_game: Callable[[Job, int, Path], None] = lambda job, n, path: None,
                         budget: Budget | None = None) -> list[str]:
    """Play every unfinished game of every variant and series; `max_games` caps the run's total. A coroutine:
    `await run_experiment(...)` in a notebook or any async code, `asyncio.run(run_experiment(...))` or
    `run_experiment_sync(...)` in a script.

    Args:
        variants: the variants (`load_experiments`), or an experiment config file to load them from.
        out: the run directory (resumable: finished games are kept).
        model: laid over every agent's and module's model (what `avalon run --model` does): settings or a spec.
        max_games: play at most this many games now.
        source: the config file, recorded in experiment.json (a config file given as `variants` is its own).
        on_game: called with (job, game number, game directory) after each finished game.
        budget: the run's dollar limit (experiments.spend.Budget): no game starts that would take the run over it;
            `budget.stopped` then says so.

    Returns the games aborted (by the watchdog, or over the failed-call share), each with its reason; they
    are replayed on resume."""
    if isinstance(variants, (str, Path)):
        source = source or Path(variants)
        variants = load_experiments(variants)
    out = Path(out)
    if isinstance(model, str):
        model = ModelSettings(spec=model)
    aborted: list[str] = []
    with run_lock(out):
        write_experiment_json(out, source, variants, model)
        first = next(iter(variants.values()))
        clients = ClientPool(limit=first.concurrency.llm_calls, override=model)
        slots = asyncio.Semaphore(first.concurrency.games)

        async def one(job: Job, cap: int | None) -> None:
            async with slots:
                await run_series(job, out, clients, on_game, cap, aborted, budget)

        await asyncio.gather(*(one(job, cap) for job, cap in caps(variants, out, max_games)))
    return aborted


def run_experiment_sync(variants: dict[str, Experiment] | str | Path, out: str | Path, **options: Any) -> list[str]:
    """`run_experiment` from synchronous code, in a script or a notebook cell alike (in a notebook the run
    takes a loop of its own in a worker thread: `aio.run_sync`). Same arguments and result."""
    return run_sync(run_experiment(variants, out, **options))


def game_usage(path: Path) -> dict[str, Any]:
    return usage(read_trace(path))
