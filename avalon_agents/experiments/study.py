"""One study shape: what a study declares, and the helpers its report shares with every other study's.

A study (`Study`: `avalon run` and its tournaments, `avalon redteam`, `avalon bias`, a plugin's) declares

- its jobs: the games to play as lanes (`Lane`: games played one after another, such as a series whose experience
  flows forward; lanes play side by side), the group each lane counts toward (a variant, a condition: the budget
  and the health are kept per group) and, per lane, the `GameJob` of each game (`Study.jobs`, asked once, when the
  lane first plays);
- its fingerprint: what decides its games (a resume under another one is refused, naming what changed);
- its measure (what it computes from the finished games, `measure`) and its report (the files it writes,
  `report`; the lines it prints, `lines`; its JSON, `json`; which of its files are its result, `result`: the tables
  `avalon view` shows on the run's page, declared in OUT by `declare_result`, read by records.study_report).

The scheduler (`experiments/scheduler.py`) plays any study: the lock, the fingerprint, resume, concurrency, the
budget, progress, aborted games, the health line and the verdict. The studies are registered by command in
`experiments/studies.STUDIES`; docs/architecture.md ("a new study type") has the recipe and
tests/experiments/test_study_recipe.py follows it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import platform
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from avalon_agents.experiments.spend import streamed_usage
from avalon_agents.formats import percent as percent  # every study's reports show a share the one way
from avalon_agents.records.environment import commit  # noqa: F401  (re-exported: the runner and bias read it here)
from avalon_agents.records.health import HealthLimits, health_line
from avalon_agents.records.run_dir import STUDY, is_done, write_json_atomic
from avalon_agents.records.study_report import write_result_tables

if TYPE_CHECKING:
    import pandas as pd

    from avalon_agents.host.job import GameJob
    from avalon_agents.llm import ClientPool, ModelSettings
    from avalon_agents.prices import Prices

Health = dict[str, tuple[str, list[str]]]
"""Per group ('': the whole study): its health line and what is over its limits (empty: healthy)."""


@dataclass(frozen=True)
class Lane:
    """Games played one after another, in this order (the next starts when the one before it finished); lanes
    play side by side.

    Attributes:
        label: the lane in the progress bar and in an aborted game's line ("full/series-1").
        group: what its games count toward: the budget's cost per game and the health line are per group.
        paths: its game directories, in order.
        key: what the study needs to make the lane's jobs (its own; the scheduler never reads it).
    """

    label: str
    group: str
    paths: tuple[Path, ...]
    key: Any = None

    def game_label(self, n: int) -> str:
        """Game `n` (1-based) of the lane, in words."""
        return self.label if len(self.paths) == 1 else f"{self.label} game {n}"


@dataclass
class Outcome:
    """What the scheduler found when a study ended: the measure, the health per group, the games aborted (they
    are replayed on resume), why the budget stopped it (None: it did not), the study's own reasons its numbers
    are no result (`Study.problems`) and the files its report wrote; `out` is the run directory."""

    out: Path
    measured: Any
    health: Health
    aborted: list[str] = field(default_factory=list)
    stopped: str | None = None
    problems: list[str] = field(default_factory=list)
    files: Any = None


class Study(ABC):
    """A study: its lanes of games, its fingerprint, its measure and its report (see the module's docstring).

    Class attributes:
        command: the command that plays it (`avalon <command> CONFIG`), its name in `STUDIES`.
        config_keys: the keys only its configs have (a config given to another command names this one).
        record: the file in OUT that holds its fingerprint (`study.json`; `avalon run`'s: `experiment.json`).
        what: the study in words, in its verdict ("suite", "study", "tournament").
        result: its result tables, {title: CSV path under OUT its `report` writes} (a tournament's leaderboard, a red
            team's attack table): what `avalon view` shows on the run's page and in its JSON.
    """

    command: ClassVar[str]
    config_keys: ClassVar[tuple[str, ...]] = ()
    record: ClassVar[str] = STUDY
    what: ClassVar[str] = "study"
    result: ClassVar[dict[str, str]] = {}

    name: str
    override: ModelSettings | None = None

    @classmethod
    def load(cls, config: Path, override: ModelSettings | None = None) -> Study:
        """The study the config file describes, `override` laid over its models (`avalon study NAME CONFIG`: how
        its command makes it). Raises ValueError naming the file and the field. Every study type declares it
        (`STUDIES` refuses one that does not: its command could not be played)."""
        raise NotImplementedError(f"{cls.__name__} declares no load")

    # ------------------------------------------------------------------ jobs

    @property
    def concurrency(self) -> int:
        """Lanes played at once."""
        return 1

    @property
    def llm_calls(self) -> int | None:
        """LLM calls in flight at once per model (None: the client pool's default)."""
        return None

    @property
    def limits(self) -> HealthLimits:
        """The health limits of its games (`health` below)."""
        return HealthLimits()

    @abstractmethod
    def lanes(self, out: Path) -> list[Lane]:
        """Every game of the study under `out`, in lanes, in the order they are started."""

    @abstractmethod
    def jobs(self, lane: Lane, clients: ClientPool, first: int) -> Callable[[int], GameJob]:
        """How the lane's games are played: game n (1-based) -> its job. Asked once per lane and run, before its
        first unfinished game (`first`) is played; `clients` is the run's client pool."""

    @abstractmethod
    def fingerprint(self) -> dict[str, Any]:
        """What decides its games (a resume may change anything else: more games, concurrency, health limits)."""

    def config(self) -> dict[str, Any]:
        """Its config as the run record (OUT/run.json) keeps it: by default what decides its games."""
        return self.fingerprint()

    def write_record(self, out: Path, fingerprint: dict[str, Any]) -> None:
        """OUT/`record`: the study's name and fingerprint (a resume must match it)."""
        write_json_atomic(out / self.record, {"name": self.name, "fingerprint": fingerprint})

    def check_models(self) -> None:
        """Before anything is played: raise ValueError (one line) if a model of the study cannot be built."""

    # ------------------------------------------------------------------ its plan and budget

    def plan(self, out: Path | None, prices: Prices) -> dict[str, Any]:
        """What `--check` prints (with --json: this object): its games, calls, tokens, dollars and the least time;
        by default from its game jobs (experiments.plan.study_plan), nothing played or written."""
        from avalon_agents.experiments.plan import study_plan

        return study_plan(self, out, prices)

    def plan_lines(self, found: dict[str, Any]) -> list[str]:
        """The plan (`plan`'s) in words."""
        from avalon_agents.experiments.plan import study_plan_lines

        return study_plan_lines(found)

    def estimates(self, prices: Prices) -> dict[str, float]:
        """Per group, the dollars one game is expected to cost (the budget's before a game of it finished). Raises
        ValueError naming a model without a price."""
        from avalon_agents.experiments.plan import study_estimates

        return study_estimates(self.plan(None, prices))

    # ------------------------------------------------------------------ results

    @abstractmethod
    def measure(self, out: Path) -> Any | Awaitable[Any]:
        """What it computes from the finished games (a coroutine if it awaits, e.g. a judge's calls)."""

    def health(self, out: Path, measured: Any) -> Health:
        """The health of its finished games against `limits`: one line for the whole study ('')."""
        found = games_health([p for lane in self.lanes(out) for p in lane.paths if is_done(p)], self.limits)
        return {} if found is None else {"": found}

    def problems(self, measured: Any) -> list[str]:
        """Its own reasons the numbers are no result, one line each (the red team's leaks); exit 3."""
        return []

    @abstractmethod
    def report(self, out: Path, measured: Any, health: Health) -> Any:
        """Write its files under `out`; returns them (in `Outcome.files`)."""

    def declare_result(self, out: Path) -> None:
        """OUT/study_result.json: which of the files `report` wrote are its result (`result`), for avalon view."""
        write_result_tables(out, self.result)

    @abstractmethod
    def lines(self, outcome: Outcome) -> list[str]:
        """What its command prints (the health lines included: `health_lines`)."""

    @abstractmethod
    def json(self, outcome: Outcome) -> dict[str, Any]:
        """What its command prints with --json (one object)."""

    def unhealthy(self, health: Health) -> str:
        """The verdict's line when a group is over its limits."""
        return f"unhealthy {self.what}, not a result (see the health line above)"


class ConfigStudy(Study):
    """A study made from one config, `cfg` (a field of the subclass), whose `name`, `health` limits and
    `concurrency` (if it has one; else 1) are the study's."""

    cfg: Any

    @property
    def name(self) -> str:
        return self.cfg.name

    @property
    def concurrency(self) -> int:
        return getattr(self.cfg, "concurrency", 1)

    @property
    def limits(self) -> HealthLimits:
        return self.cfg.health

    def config(self) -> dict[str, Any]:
        return self.cfg.model_dump(mode="json")


# ------------------------------------------------------------------ what every study's report shares


def games_health(games: Iterable[Path], limits: HealthLimits) -> tuple[str, list[str]] | None:
    """The health line of these game directories together and what is over `limits` (None: no trace record,
    e.g. bots only)."""
    u = streamed_usage(games)
    if u is None:
        return None
    return health_line(u), limits.problems(u)


def health_lines(health: Health) -> list[str]:
    """The health lines as printed: 'GROUP: health: ...' (a group's) or 'health: ...' (the whole study's), with
    '  UNHEALTHY: ...' where it is over its limits."""
    return [(f"{group}: " if group else "") + line + ("  UNHEALTHY: " + "; ".join(problems) if problems else "")
            for group, (line, problems) in health.items()]


def one_health(health: Health) -> str | None:
    """The whole study's health line (None: its games made no LLM call)."""
    return health[""][0] if "" in health else None


def config_fingerprint(key: str, config: Any, may_change: Iterable[str], override: ModelSettings | None
                       ) -> dict[str, Any]:
    """A study config's fingerprint: the config without what a resume may change, and the model override."""
    return {key: config.model_dump(mode="json", exclude=set(may_change)),
            "model_override": override.public() if override else None}


def provenance(config_path: Path | None, **more: Any) -> dict[str, Any]:
    """What produced a study's numbers: the framework's version and commit, Python, the date, the config file
    and its digest, then `more`."""
    from avalon_agents import __version__

    return {"avalon_agents": __version__, "commit": commit(), "python": platform.python_version(),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "config": str(config_path) if config_path else None,
            "config_sha256": hashlib.sha256(config_path.read_bytes()).hexdigest()[:16] if config_path else None,
            **more}


def write_report(out: Path, stem: str, tables: dict[str, pd.DataFrame], record: dict[str, Any],
                 markdown: Sequence[str], prov: dict[str, Any]) -> tuple[Path, Path]:
    """A study's files: OUT/<table>.csv for each table, OUT/<stem>.json (`record`) and OUT/<stem>.md (`markdown`,
    then the provenance). Returns (OUT/<stem>.csv, OUT/<stem>.md)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        frame.to_csv(out / f"{name}.csv", index=False)
    (out / f"{stem}.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    md = [*markdown, "", "## Provenance", "", "```json", json.dumps(prov, indent=2, default=str), "```", ""]
    (out / f"{stem}.md").write_text("\n".join(md))
    return out / f"{stem}.csv", out / f"{stem}.md"


def markdown_head(title: str, intro: str, health: str | None, columns: Sequence[str]) -> list[str]:
    """A report's first lines: the title, what it measures, the run's health and the table's header."""
    return [f"# {title}", "", intro, "", f"Run {health or 'health: no LLM calls'}", "",
            "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def markdown_row(cells: Iterable[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"
