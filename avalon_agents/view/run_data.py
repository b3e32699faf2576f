"""What a run's page shows, as plain JSON: the outcome metrics with their intervals and n (computed by
`analysis.paper.report.compute`, the code behind `avalon analyze`), the behaviour metrics where the run was judged
(read from the analysis `avalon analyze --judge-model` wrote), every figure (an SVG data address), the health
and cost per variant, the config and provenance, and its games.

`RunPages` keeps what it computed per run with the catalog's signature of the run: nothing is computed again until
a file of the run changed, and a run's games are loaded through a cache of its tables (`analysis.load`), so a
run that grew by one game reads one game; the metrics and figures are computed again only when the tables changed
(a run playing changes its row with every call), and each game's health.json is read again only when rewritten;
a run whose metrics take long to count is answered at once after a change and counted again in a thread (`BEHIND`).
"""

from __future__ import annotations

import base64
import io
import math
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
from loguru import logger

from avalon_agents.analysis.load import RunData, load_run
from avalon_agents.analysis.paper import metrics
from avalon_agents.analysis.paper.report import Analysis, complete, compute, figures, provenance, sections
from avalon_agents.prices import Prices, cost_rows
from avalon_agents.records.analysis_dir import analysis_dir, metrics_json, read_manifest, read_metrics, written_at
from avalon_agents.records.health import Health
from avalon_agents.records.reader import Game, open_run
from avalon_agents.records.run_dir import HEALTH
from avalon_agents.view.catalog import Catalog

BEHIND = 2.0
"""Seconds: once a run's metrics and figures took longer to count, its page after a change is answered at once with
its newest row and games and the metrics of the games last counted (`computing` True, `metrics_of` of them),
counted again in a thread: a 10,000-game run's take seconds (resampling each interval's games), and a live page
asks every few seconds. A run's first page is always counted before it is answered (an export's pages too)."""
FIRST_IN_THREAD = 1000
"""Finished games over which a run's first page is answered at once (its row, games, config; `computing` True, no
metrics yet) while its games are loaded and its metrics counted in a thread: a 10,000-game run's first read takes
about 30 s (loading the games), and the live page fills in when they are counted."""
DRAWING = threading.Lock()
"""matplotlib draws one figure at a time (a page built in a thread draws too)."""


def records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """A table's rows as JSON objects (NaN as null)."""
    return [{k: _plain(v) for k, v in row.items()} for row in table.to_dict(orient="records")]


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        try:
            return _plain(value.item())
        except (ValueError, AttributeError):
            return str(value)
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def svg(fig) -> str:
    """A matplotlib figure as an SVG data address (an <img> cannot run anything it holds)."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode()


class RunPages:
    """Each run's page data, computed once per change of the run (see the module's docstring)."""

    def __init__(self, catalog: Catalog, prices: Prices | None = None) -> None:
        self.catalog = catalog
        self.prices = prices or catalog.prices
        self._pages: dict[Path, tuple[Any, dict[str, Any], Analysis | None]] = {}
        self._rows: dict = {}  # analysis.load's cache: each run's tables
        self._computed: dict[Path, tuple[RunData, Analysis, Any, float]] = {}  # metrics, by tables and judged, s
        self._health: dict[Path, tuple[Any, Health]] = {}  # each game's health by its health.json's stamp
        self._took: dict[Path, float] = {}  # seconds its metrics and figures took to count
        self._computing: set[Path] = set()  # runs counted again in a thread now
        self._again: set[Path] = set()  # runs changed again while their thread counts an older change
        self._threads: dict[Path, threading.Thread] = {}  # the last thread started counting a run's page
        self._counting: dict[Path, threading.Thread] = {}  # the thread counting a run's metrics alone (`start`)
        self._counted: dict[Path, tuple[Any, Analysis | None]] = {}  # `analysis`'s, by the run's row (`_key`)
        self._drawn: dict[Path, tuple[Analysis, list[dict[str, Any]]]] = {}  # the figures of a run's metrics
        self._run_locks: dict[Path, threading.Lock] = {}  # one count of a run's metrics at a time
        self._lock = threading.Lock()

    def analysis(self, run: Path) -> Analysis | None:
        """The run's metrics (None: no finished game yet), computed once per change of its tables (a thread already
        counting them is waited for, not counted beside: `_metrics`); not its page: a comparison needs no figures."""
        key = _key(self.catalog.row(run))
        cached = self._pages.get(run)
        if cached is not None and cached[0] == key and cached[2] is not None:
            return cached[2]
        counted = self._counted.get(run)
        if counted is not None and counted[0] == key:
            return counted[1]
        counting = self._counting.get(run)
        if counting is not None:
            counting.join()
        result = self._metrics(run, whole=False)[0]
        self._counted[run] = (key, result)
        return result

    def start(self, run: Path) -> None:
        """A big run's metrics (over FIRST_IN_THREAD games, not yet counted) counted in a thread, so that several
        runs' are counted at once (a comparison's sides; `analysis` then waits for it)."""
        row = self.catalog.row(run)
        cached, counted = self._pages.get(run), self._counted.get(run)
        if row["games_finished"] <= FIRST_IN_THREAD or (cached is not None and cached[0] == _key(row)
                                                        and cached[2] is not None) or (
                counted is not None and counted[0] == _key(row)):
            return
        with self._lock:
            if run not in self._counting or not self._counting[run].is_alive():
                self._counting[run] = threading.Thread(target=self._quietly, args=(run,), daemon=True,
                                                       name=f"view metrics {run.name}")
                self._counting[run].start()

    def _quietly(self, run: Path) -> None:
        try:
            self._metrics(run, whole=False)
        except Exception:  # the caller's own `analysis` counts it again, and says why
            logger.opt(exception=True).debug(f"view: counting {run}'s metrics failed")

    def page(self, run: Path) -> dict[str, Any]:
        """The run page's data: `run` (its index row), `metrics` (name -> rows), `headline`, `behaviour`,
        `figures` ([{name, title, src}]), `health`, `cost`, `config`, `provenance`, `games`, and `metrics_of`
        (the games the metrics count) and `computing` (True: newer games are being counted, see `BEHIND`)."""
        row = self.catalog.row(run)
        key = _key(row)
        cached = self._pages.get(run)
        if cached is not None and cached[0] == key:
            return cached[1]
        if cached is not None and cached[2] is not None and self._took.get(run, 0) > BEHIND:
            return self._meanwhile(run, row, key, cached)
        if (cached is None or cached[1].get("computing")) and row["games_finished"] > FIRST_IN_THREAD:
            return self._first(run, row, key)
        return self._build(run, row, key)

    def _first(self, run: Path, row: dict[str, Any], key: Any) -> dict[str, Any]:
        """A big run's first page at once: its row, games and config, no metrics yet (`computing`), while its games
        are loaded and counted in a thread (`FIRST_IN_THREAD`)."""
        page = {"run": row, "config": _config(run),
                "games": games(run, self.catalog.run_id(run), results=False),
                "metrics": {},
                "headline": [], "behaviour": {}, "figures": [], "health": [], "cost": [], "metrics_of": 0,
                "computing": True, "provenance": f"counting the metrics of {row['games_finished']:,} games"}
        with self._lock:
            self._pages[run] = (key, page, None)
            self._count_behind(run)
        return page

    def _build(self, run: Path, row: dict[str, Any], key: Any) -> dict[str, Any]:
        result, drawn = self._analysis(run)
        page = {"run": row, "config": _config(run),
                "games": games(run, self.catalog.run_id(run), _winners(result))}
        if result is None:
            page.update(metrics={}, headline=[], behaviour={}, figures=[], health=[], cost=[],
                        provenance="no finished game yet")
        else:
            health = result.tables["health"] if "health" in result.tables else metrics.health(result.data)
            page.update(
                metrics={name: records(t) for name, t in result.tables.items() if name != "headline"},
                headline=records(result.headline), behaviour=judged(run), figures=drawn,
                health=records(health), cost=self.cost(run, result), provenance=provenance(result))
        page.update(metrics_of=0 if result is None else len(result.data.games), computing=False)
        with self._lock:
            self._pages[run] = (key, page, result)
        return page

    def _meanwhile(self, run: Path, row: dict[str, Any], key: Any, cached: tuple) -> dict[str, Any]:
        """A changed run's page at once: its row and games as they are now, the metrics, figures and cost of the
        games last counted, while they are counted again in a thread (one per run at a time); kept until the
        thread's page or a newer change replaces it."""
        _, page, result = cached
        page = {**page, "run": row, "games": games(run, self.catalog.run_id(run), _winners(result)), "computing": True}
        with self._lock:
            if self._pages.get(run) is cached:  # not already replaced by a thread's
                self._pages[run] = (key, page, result)
            self._count_behind(run)
        return page

    def _count_behind(self, run: Path) -> None:
        """The run's page counted in a thread (`_behind`), one per run: a thread already counting an older change
        counts again when it is done (under `_lock`)."""
        if run in self._computing:
            self._again.add(run)
            return
        self._computing.add(run)
        thread = self._threads[run] = threading.Thread(target=self._behind, args=(run,), daemon=True,
                                                       name=f"view {run.name}")
        thread.start()

    def _behind(self, run: Path) -> None:
        """Count the run's page from its row as it is now, again while a page asked for a newer one meanwhile (the
        thread's page is stored under the row it read, older than the page a change asked for: it would leave that
        one `computing` with no thread counting it)."""
        while True:
            try:
                row = self.catalog.row(run)
                self._build(run, row, _key(row))
            except Exception:  # a run that cannot be read now: the next page is built in the request, and says why
                logger.opt(exception=True).debug(f"view: counting {run} again failed")
                with self._lock:
                    if self._pages.get(run, (None, {}))[1].get("computing"):
                        del self._pages[run]
                    self._computing.discard(run)
                    self._again.discard(run)
                return
            with self._lock:
                if run not in self._again:
                    self._computing.discard(run)
                    return
                self._again.discard(run)

    def _analysis(self, run: Path) -> tuple[Analysis | None, list[dict[str, Any]]]:
        """The run's metrics and figures: computed again only when its finished games changed (a run playing
        changes its row with every call, not its tables)."""
        result, behaviour = self._metrics(run)
        if result is None:
            return None, []
        drawn = self._drawn.get(run)
        if drawn is None or drawn[0] is not result:
            started = time.perf_counter()
            with DRAWING:
                drawn = self._drawn[run] = (result, figure_list(result, behaviour.get("tables", {})))
            self._took[run] = self._computed[run][3] + time.perf_counter() - started
        return result, drawn[1]

    def _metrics(self, run: Path, whole: bool = True) -> tuple[Analysis | None, dict[str, Any]]:
        """The run's metrics (None: no finished game) and the judges' tables analyze wrote (`judged`): computed
        again only when its finished games or judged tables changed, one thread at a time per run (another waits,
        then finds them counted). `whole` False: what a comparison reads (report.compute's), the rest added when a
        page asks (report.complete)."""
        with self._lock:
            lock = self._run_locks.setdefault(run, threading.Lock())
        with lock:
            started = time.perf_counter()
            try:
                data = load_run(run, cache=self._rows, write=False)  # a viewer writes nothing into a run
            except FileNotFoundError:
                return None, {}
            done = self._computed.get(run)
            behaviour = judged(run)  # the judges' tables analyze wrote: their figures drawn too
            if done is not None and done[0] is data and done[2] == behaviour.get("written"):
                return (complete(done[1]) if whole else done[1]), behaviour
            result = compute(data, run, analysis_dir(run), reference="auto", whole=whole)
            result.judge_spec = behaviour.get("model")  # the provenance and figures name the judges' model
            self._computed[run] = (data, result, behaviour.get("written"), time.perf_counter() - started)
            return result, behaviour

    def cost(self, run: Path, result: Analysis) -> list[dict[str, Any]]:
        """Per variant and model: calls, tokens and dollars, from the games' health.json (experiments.spend's
        rows: the same as `avalon run`'s cost.csv)."""
        variants = dict(zip(result.data.games["game"], result.data.games["variant"]))
        usages: dict[str, dict[str, Any]] = {}
        by_name = {game.name: game for game in open_run(run).games()}
        for game, variant in variants.items():
            health = self._game_health(by_name[game]) if game in by_name else Health()
            mine = usages.setdefault(variant, {"by_model": {}})["by_model"]
            for spec, tokens in health.by_model.items():
                totals = mine.setdefault(spec, {"calls": 0, "input_tokens": 0, "cached_tokens": 0,
                                                "output_tokens": 0})
                for k in totals:
                    totals[k] += tokens.get(k, 0)
        counts = result.data.games.groupby("variant").size().to_dict()
        return cost_rows(usages, self.prices, {k: int(v) for k, v in counts.items()})

    def _game_health(self, game: Game) -> Health:
        """A game's health (none if missing or unreadable), read again only when its health.json was written
        again."""
        stamp = game.file_stamp(HEALTH)
        kept = self._health.get(game.path)
        if kept is None or kept[0] != stamp:
            try:
                kept = self._health[game.path] = (stamp, game.health() if stamp is not None else Health())
            except (OSError, ValueError):
                return Health()
        return kept[1]


def _key(row: dict[str, Any]) -> tuple:
    """What a run's page is computed from, of its index row: it changes when a file of the run did."""
    return row["games_finished"], row["updated"], row["state"], row["health"]["llm_calls"]


def _winners(result: Analysis | None) -> dict[str, tuple[str, str]]:
    """Each game of the run's tables: its winner and how."""
    if result is None:
        return {}
    games = result.data.games
    return dict(zip(games["game"], zip(games["winner"], games["reason"])))


def figure_list(result: Analysis, judged_tables: dict[str, list[dict[str, Any]]] | None = None
                ) -> list[dict[str, Any]]:
    """Every figure of the report, in its order, with its title and its SVG (the judged ones from the tables
    `avalon analyze --judge-model` wrote, `judged_tables`)."""
    titles = sections()
    tables = {**{name: pd.DataFrame(rows) for name, rows in (judged_tables or {}).items()}, **result.tables}
    return [{"name": name, "title": titles.get(name, (name,))[0], "src": svg(fig)}
            for name, fig in figures(tables).items()]


def judged(run: Path) -> dict[str, Any]:
    """The behaviour metrics `avalon analyze --judge-model` wrote for this run (its metrics.json's judged tables,
    records.analysis_dir), each table's judge (`judges`), the judges' model (`model`: the manifest's; None in a
    folder written before manifests were kept) and the time they were written; {} when the run was not judged."""
    from avalon_agents.analysis.paper.report import judged_figures

    folder = analysis_dir(run)
    written = read_metrics(folder) or {}
    judges = {f.table: judge for judge, f in judged_figures() if written.get(f.table)}
    when = written_at(folder) if judges else None
    if when is None:
        return {}
    manifest = read_manifest(folder)
    return {"tables": {table: written[table] for table in judges}, "judges": judges,
            "model": manifest.judge if manifest is not None else None,
            "written": when.isoformat(timespec="seconds"), "file": metrics_json(folder).relative_to(run).as_posix()}


def games(run: Path, run_id: str, loaded: dict[str, tuple[str, str]] | None = None,
          results: bool = True) -> list[dict[str, Any]]:
    """Every game of the run (records.reader's walk): its path in the run, finished or playing, its winner and how
    (`loaded`: those the run's tables hold, game -> (winner, reason), not read again; `results` False: no result
    read, the winners left out)."""
    found = []
    for game in open_run(run).games():
        if loaded and game.name in loaded:
            winner, reason = loaded[game.name]
            found.append({"game": game.name, "state": "finished", "winner": winner, "reason": reason})
            continue
        entry = {"game": game.name, "state": "finished" if game.finished else "playing"}
        if game.finished and results:
            try:
                result = game.result()
                entry.update(winner=result.winner.value, reason=result.reason.value)
            except (OSError, ValueError):
                entry["state"] = "unreadable"
        found.append(entry)
    return found


def _config(run: Path) -> dict[str, Any] | None:
    """What the run's record says of its config: run.json's config (and command, name, started), else an older
    run's own record (experiment.json, study.json or import.json)."""
    opened = open_run(run)
    if opened.recorded:
        record = opened.record
        replays = {"replays": record.replays} if record.replays else {}  # the run whose records answered it
        return {"file": "run.json", "record": {"command": record.command, "name": record.name,
                                               "started": record.started, **replays, **record.config}}
    own = opened.own_record()
    return {"file": own[0], "record": own[1]} if own is not None else None


def environment(run: Path) -> dict[str, Any]:
    """The run's environment (records.environment: Python, packages, CPU, BLAS kernel, numpy SIMD, commit) and its
    plugins (each file's key and the start of its sha256), as its run record says; an older run: its commit alone."""
    record = open_run(run).record
    return {"environment": dict(record.environment),
            "plugins": [{"key": p.key, "sha256": (p.sha256 or "")[:12] or None} for p in record.plugins],
            "first_environment": getattr(record, "first_environment", None)}
