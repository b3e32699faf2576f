"""`avalon run` as a study: variants x series x consecutive games, resumable, into a run directory.

    <out>/experiment.json
    <out>/<variant>/series-<k>/experience/<agent>/      chromadb store: what that agent learned in this series
    <out>/<variant>/series-<k>/game-<nnnnn>/            events.jsonl, trace.jsonl, meta.json, result.json

A series is a lane of the scheduler (experiments/scheduler.py): series run concurrently (up to
`concurrency.games`); the games of a series run in order, since experience flows forward. A game directory with
result.json is finished and never touched again; an unfinished one is replayed from its start (its recorded answers
answer the requests that match them again, so no call is paid twice: llm.replay), and whatever the interrupted game
had put in the series' experience store is removed first, so the store reflects finished games only. Seeds depend
only on (seed, series, game), so a resumed run plays the same games. The results (experiments/results.py): win
rates per variant and side, the paper's figures, each variant's health and cost.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from avalon_agents.aio import run_sync
from avalon_agents.engine import deal
from avalon_agents.experiments import scheduler
from avalon_agents.experiments.config import COMMAND_KEYS, SERIES_STRIDE, Experiment, load_experiments
from avalon_agents.experiments.guard import fingerprint
from avalon_agents.experiments.plan import decisions, pipeline
from avalon_agents.experiments.spend import Budget
from avalon_agents.experiments.study import Health, Lane, Outcome, Study, commit, health_lines
from avalon_agents.host.job import GameJob, for_game, role_order
from avalon_agents.host.play import AgentSetup
from avalon_agents.llm import ClientPool, ModelSettings
from avalon_agents.orders import Orders
from avalon_agents.plugins import LOADED
from avalon_agents.prices import Prices
from avalon_agents.records.run_dir import (
    EXPERIMENT,
    Seating,
    game_dir,
    read_experiment,
    series_dir,
    write_json_atomic,
)


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
    """Per agent name: its model settings, the extractor's, its module config and its own experience store
    (in the series' folder: experience/<agent>)."""
    return {name: agent.setup(exp.model, exp.extractor.model, clients, experience_dir=folder / "experience" / name)
            for name, agent in exp.agents.items()}


def forget_unfinished(models: dict[str, AgentSetup], first_unfinished: int) -> None:
    """Drop what an interrupted game (or any later one) had stored, so the store holds finished games only."""
    from avalon_agents.stores.experience import ExperienceStore

    for m in models.values():
        if m.experience_dir is None:
            continue
        if isinstance(m.experience, ExperienceStore):
            m.experience.forget_from(first_unfinished)
        m.pool().forget_from(first_unfinished)


def game_job(exp: Experiment, variant: str, series: int, n: int, models: dict[str, AgentSetup]) -> GameJob:
    """Game `n` of a series: its seed, its seating and each seat's agent as that game sees it (an agent that does
    not learn starts from nothing; nothing is learned after a series' last game unless `learn_after_last`)."""
    rules = exp.game_rules()
    seed = game_seed(exp, series, n)
    names = seating(exp, seed, series, n)
    end_learning = n < exp.games_per_series or exp.learn_after_last
    per_agent = {name: for_game(m, learn=exp.agents[name].learn, end_learning=end_learning)
                 for name, m in models.items()}
    place = Seating(agents=dict(zip(rules.seats, names)), series=series, game=n, variant=variant, seed=seed,
                    schedule=exp.schedule if exp.lineup else None)
    return GameJob(rules=rules, seed=seed, kinds=tuple(exp.agents[name].kind for name in names),
                   setups=tuple(per_agent[name] for name in names), seating=place, orders=game_orders(exp, seed),
                   probes=exp.probes, watchdog=exp.watchdog_s, max_failed_calls=exp.health.max_failed_calls,
                   experience_game=n)


def public_override(model: ModelSettings | None) -> dict[str, Any] | None:
    """The model override as experiment.json and the fingerprint record it (the settings given)."""
    return {k: v for k, v in model.public().items() if v not in (None, {})} if model else None


@dataclass
class ExperimentStudy(Study):
    """An experiment (its variants) as a study: a lane per variant and series, a group per variant.

    Args:
        variants: the variants (`load_experiments`).
        override: laid over every agent's and module's model (`avalon run --model`).
        source: the config file, recorded in experiment.json.
        prices: what its models' tokens cost (the cost table; default: the shipped prices).
    """

    command: ClassVar[str] = "run"
    config_keys: ClassVar[tuple[str, ...]] = COMMAND_KEYS["run"]
    record: ClassVar[str] = EXPERIMENT

    variants: dict[str, Experiment]
    override: ModelSettings | None = None
    source: Path | None = None
    prices: Prices | None = None

    @classmethod
    def load(cls, config: Path, override: ModelSettings | None = None) -> ExperimentStudy:
        from avalon_agents.prices import load_prices

        variants = cls.loader(config)
        first = next(iter(variants.values()))
        return cls(variants, override, Path(config),
                   load_prices(None, {k: v.model_dump() for k, v in (first.prices or {}).items()}))

    @staticmethod
    def loader(config: Path) -> dict[str, Experiment]:
        """Its config file's variants (`load_experiments`)."""
        return load_experiments(config)

    @property
    def first(self) -> Experiment:
        return next(iter(self.variants.values()))

    @property
    def name(self) -> str:
        return self.first.name

    @property
    def concurrency(self) -> int:
        return self.first.concurrency.games

    @property
    def llm_calls(self) -> int | None:
        return self.first.concurrency.llm_calls

    def lanes(self, out: Path) -> list[Lane]:
        return [Lane(f"{name}/series-{k}", name, tuple(game_dir(series_dir(out, name, k), n)
                                                     for n in range(1, exp.games_per_series + 1)), key=k)
                for name, exp in self.variants.items() for k in range(1, exp.series + 1)]

    def jobs(self, lane: Lane, clients: ClientPool, first: int) -> Callable[[int], GameJob]:
        exp = self.variants[lane.group]
        models = series_setups(exp, lane.paths[0].parent, clients)
        forget_unfinished(models, first)
        return lambda n: game_job(exp, lane.group, lane.key, n, models)

    def fingerprint(self) -> dict[str, Any]:
        return fingerprint({name: exp.model_dump(mode="json") for name, exp in self.variants.items()},
                           public_override(self.override))

    def config(self) -> dict[str, Any]:
        return {"variants": {name: exp.model_dump(mode="json") for name, exp in self.variants.items()},
                "model_override": public_override(self.override), "config_file": str(self.source) if self.source
                else None}

    def write_record(self, out: Path, fingerprint: dict[str, Any]) -> None:
        """experiment.json: the config, what else made the run, and the fingerprint a resume must match."""
        from importlib.metadata import version

        started = (read_experiment(out) or {}).get("started") or time.strftime("%Y-%m-%dT%H:%M:%S")
        write_json_atomic(out / EXPERIMENT, {
            "name": self.name,
            "config_file": str(self.source) if self.source else None,
            "model_override": public_override(self.override),
            "plugins": list(LOADED),
            "version": version("avalon_agents"),
            "commit": commit(),
            "started": started,
            "variants": {name: exp.model_dump(mode="json") for name, exp in self.variants.items()},
            # how each agent plays, in words (provenance lines quote it)
            "pipelines": {name: {"decisions": decisions(exp),
                                 **{agent: pipeline(spec) for agent, spec in exp.agents.items()}}
                          for name, exp in self.variants.items()},
            "fingerprint": fingerprint,
        })

    def check_models(self) -> None:
        """Every model of the run can be built (keys present, specs known). Raises ValueError (one line)."""
        from avalon_agents.llm import check_reachable, make_model

        for exp in self.variants.values():
            for settings in exp.used_settings(self.override):
                check_reachable(settings)
                if not settings.declared.local:  # the embedded server starts when the run does
                    make_model(settings)

    def plan(self, out: Path | None, prices: Prices) -> dict[str, Any]:
        """Per variant its series, games, expected calls, tokens, dollars and precision (experiments.plan.plan)."""
        from avalon_agents.experiments.plan import plan

        return plan(self.variants, Path(out or "."), self.override, prices)

    def plan_lines(self, found: dict[str, Any]) -> list[str]:
        from avalon_agents.experiments.plan import plan_lines

        return plan_lines(self.variants, Path(found["run_dir"]), found=found)

    def estimates(self, prices: Prices) -> dict[str, float]:
        """Per variant, the dollars one game is expected to cost (the budget's before a game finished). Raises
        ValueError naming a model without a price."""
        from avalon_agents.experiments.plan import dollars, variant_models

        found = {}
        for name, exp in self.variants.items():
            usd, missing = dollars(variant_models(exp, self.override), prices)
            if usd is None:
                raise ValueError(f"budget-usd: no price for {', '.join(missing)}, so no budget can be kept (give "
                                 "one with prices: in the config or --prices FILE)")
            found[name] = usd / exp.games
        return found

    # ------------------------------------------------------------------ results

    def measure(self, out: Path) -> dict[str, Any]:
        """The results table (with dollars per game), the paper's figures, the usage and cost per variant."""
        from avalon_agents.experiments.results import measure_run

        return measure_run(out, self.variants, self.prices or Prices.shipped())

    def health(self, out: Path, measured: dict[str, Any]) -> Health:
        from avalon_agents.experiments.results import variant_health

        return variant_health(out, self.variants, measured["usages"])

    def report(self, out: Path, measured: dict[str, Any], health: Health) -> Path:
        from avalon_agents.experiments.spend import write_cost

        return write_cost(out, measured["costs"])

    def lines(self, outcome: Outcome) -> list[str]:
        from avalon_agents.experiments.results import format_figures, format_table
        from avalon_agents.experiments.spend import cost_line

        m = outcome.measured
        return [m["provenance"], format_table(m["table"]), *([format_figures(m["figures"])]
                                                             if not m["figures"].empty else []),
                *health_lines(outcome.health), *(cost_line(name, m["costs"]) for name in m["usages"]),
                *(f"aborted: {line}" for line in outcome.aborted), f"run directory: {outcome.out}"]

    def json(self, outcome: Outcome) -> dict[str, Any]:
        m = outcome.measured
        rows = json.loads(m["table"].to_json(orient="records")) if not m["table"].empty else []
        paper = json.loads(m["figures"].to_json(orient="records")) if not m["figures"].empty else []
        return {"out": str(outcome.out), "provenance": m["provenance"], "results": rows, "paper_figures": paper,
                "aborted": list(outcome.aborted),
                "health": {name: {"line": line, "problems": problems}
                           for name, (line, problems) in outcome.health.items()},
                "cost": m["costs"]}

    def unhealthy(self, health: Health) -> str:
        names = [name for name, (_, problems) in health.items() if problems]
        return f"unhealthy variant(s), not results: {', '.join(names)} (see the health lines above)"


# ------------------------------------------------------------------ the Python API


@dataclass(frozen=True)
class Job:
    """One series of a variant (the lane `run_series` plays)."""

    variant: str
    series: int  # 1-based
    experiment: Experiment

    @property
    def label(self) -> str:
        return f"{self.variant}/series-{self.series}"


async def run_series(job: Job, out: Path, clients: ClientPool, on_game: scheduler.OnGame,
                     cap: int | None = None, aborted: list[str] | None = None, budget: Budget | None = None) -> None:
    """Play one series' unfinished games in order (at most `cap` of them now), as `scheduler.play_lane` plays a
    lane: without the directory's lock or fingerprint (the caller holds them)."""
    study = ExperimentStudy({job.variant: job.experiment})
    lane = next(lane for lane in study.lanes(out) if lane.key == job.series)
    await scheduler.play_lane(study, lane, clients, on_game, cap, aborted, budget)


async def run_experiment(variants: dict[str, Experiment] | str | Path, out: str | Path, *,
                         model: ModelSettings | str | None = None, max_games: int | None = None,
                         source: Path | None = None, on_game: scheduler.OnGame | None = None,
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
        on_game: called with (lane, game number in its series, game directory) after each finished game.
        budget: the run's dollar limit (experiments.spend.Budget): no game starts that would take the run over it;
            `budget.stopped` then says so.

    Returns the games aborted (by the watchdog, or over the failed-call share), each with its reason; they
    are replayed on resume."""
    if isinstance(variants, (str, Path)):
        source = source or Path(variants)
        variants = load_experiments(variants)
    if isinstance(model, str):
        model = ModelSettings(spec=model)
    return await scheduler.play(ExperimentStudy(variants, model, source), Path(out), max_games=max_games,
                                budget=budget, on_game=on_game)


def run_experiment_sync(variants: dict[str, Experiment] | str | Path, out: str | Path, **options: Any) -> list[str]:
    """`run_experiment` from synchronous code, in a script or a notebook cell alike (in a notebook the run
    takes a loop of its own in a worker thread: `aio.run_sync`). Same arguments and result."""
    return run_sync(run_experiment(variants, out, **options))

