"""Each page's data, for the server and the export alike: `View` holds the catalog of runs, each run's page data
and where pages live (`site.Site`), and answers what a page or its JSON address shows. A run's pages read only what
its row found readable (catalog.py, confine.py): a run with a file linking out of the viewed folders, over the size
cap, corrupt or of a newer layout is refused (`Unreadable`, naming the file), and a game's page checks its folder's
files again when asked."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from avalon_agents.prices import Prices
from avalon_agents.records.analysis_dir import analysis_dir, read_judged
from avalon_agents.records.reader import UnknownGame, open_run
from avalon_agents.records.study_report import result_files, study_tables
from avalon_agents.view import calls as call_pages
from avalon_agents.view.calls import CallIndex
from avalon_agents.view.catalog import Catalog, UnknownRun
from avalon_agents.view.compare import VARIANT, Comparer, variants
from avalon_agents.view.confine import MAX_FILE_BYTES, Problem, Unreadable, analysis_file
from avalon_agents.view.run_data import RunPages, environment
from avalon_agents.view.site import Site, stamp


class View:
    """The site over `roots` (see the module's docstring).

    Args:
        roots: the folders viewed.
        site: where pages live (live addresses or export files).
        prices: what tokens cost (default: the shipped table).
        max_bytes: the largest file read (confine.py).
        run_plugins: load the plugins each run recorded when it is first found (view.catalog), a run started
            since the view's start too.
    """

    def __init__(self, roots: list[Path], site: Site | None = None, prices: Prices | None = None,
                 max_bytes: int = MAX_FILE_BYTES, run_plugins: bool = False) -> None:
        self.roots = [Path(r) for r in roots]
        self.site = site or Site()
        self.catalog = Catalog(self.roots, prices, max_bytes, run_plugins)
        self.runs = RunPages(self.catalog)
        self.comparer = Comparer(self.runs)
        self.call_index = CallIndex(self.catalog)

    def stamp(self) -> dict[str, Any]:
        return stamp([str(r) for r in self.roots])

    def run_path(self, run_id: str) -> Path:
        """The folder of a run id, if its pages may be read. Raises UnknownRun, Unreadable (naming the file)."""
        run = self.catalog.path(run_id)
        problem = self.catalog.problem(run)
        if problem is None:
            folder = analysis_dir(run)
            problem = self.catalog.confine.files(folder, folder.relative_to(run).as_posix(), deep=True,
                                                 read=analysis_file) if folder.is_dir() else None
        if problem is not None:
            raise Unreadable(problem)
        return run

    @contextlib.contextmanager
    def _noting(self, run: Path, what: str) -> Iterator[None]:
        """A file of the run found unreadable while a page read it (a corrupt line inside a trace, which the row's
        look at two bytes cannot see): named on the run's row (catalog.Catalog.note) until the run changes, and
        refused naming `what` was read."""
        try:
            yield
        except Unreadable as exc:
            self.catalog.note(run, exc.problem)
            raise
        except ValueError as exc:
            problem = Problem(422, f"{what} cannot be read: {(str(exc).splitlines() or [type(exc).__name__])[0]}")
            self.catalog.note(run, problem)
            raise Unreadable(problem) from None

    def split(self, rest: str) -> tuple[str, str]:
        """An address under /runs/ as (run id, what of it: "", "calls" or "games/GAME"): the longest run id that
        starts it (run ids may hold '/'). Raises UnknownRun."""
        rest = rest.strip("/")
        self.catalog.runs()
        ids = sorted(self.catalog.ids(), key=len, reverse=True)
        for run_id in ids:
            if rest == run_id or rest.startswith(run_id + "/"):
                return run_id, rest[len(run_id):].strip("/")
        raise UnknownRun(f"no run at {rest!r}")

    def index(self) -> dict[str, Any]:
        """The index page's data: one row per run with the links to its page and its calls."""
        here = self.site.path("index")
        rows = []
        for row in self.catalog.index():
            rows.append({**row, "link": self.site.link(here, "run", run=row["id"]),
                         "calls_link": self.site.link(here, "calls", run=row["id"])})
        return {"page": "index", "title": "Runs", "runs": rows, "api": self.site.api("index"),
                "compare": None if self.site.export else self.site.link(here, "compare", runs=[]),
                "links": {"index": self.site.link(here, "index")}, "stamp": self.stamp()}

    def run(self, run_id: str) -> dict[str, Any]:
        """A run's page data (run_data.RunPages.page) with its links: each game, its calls, the index."""
        run = self.run_path(run_id)
        here = self.site.path("run", run=run_id)
        with self._noting(run, "its games"):
            page = {**self.runs.page(run), **environment(run)}  # as its run record says now (a resume rewrites it)
            page["result"] = self.result(run)
        page["games"] = [{**g, "link": self.site.link(here, "game", run=run_id, game=g["game"])}
                         for g in page["games"]]
        return {**page, "page": "run", "title": f"Run {run_id}", "api": self.site.api("run", run=run_id),
                "links": {"index": self.site.link(here, "index"), "calls": self.site.link(here, "calls", run=run_id),
                          "compare": None if page.get("computing") and page.get("metrics_of") == 0
                          else self._variants_link(here, run_id)},  # no link until its games are counted
                "stamp": self.stamp()}

    def result(self, run: Path) -> list[dict[str, Any]]:
        """The study's result tables (records.study_report: a tournament's leaderboard, a red team's attack table, a
        bias study's paired table), each file checked as every file a page reads is (confine.py). Raises
        Unreadable naming a file linking out of the viewed folders or over the size cap."""
        for path in result_files(run):
            if path.parent.is_dir():
                problem = self.catalog.confine.files(path.parent, path.parent.relative_to(run).as_posix()
                                                     if path.parent != run else "", read=lambda n, f=path.name: n == f)
                if problem is not None:
                    raise Unreadable(problem)
        return study_tables(run)

    def calls(self, run_id: str, query: dict[str, Any]) -> dict[str, Any]:
        """A run's Calls page data (view.calls): the calls the query's filters keep (`total`), the page of them
        from `offset` (at most `limit`) with their prompts and replies, the filters applied and what each can take.
        An export holds the run's first calls (calls.EXPORT_LIMIT) and filters those in the page. Raises Refused
        (400) naming a bad parameter."""
        run = self.run_path(run_id)
        here = self.site.path("calls", run=run_id)
        asked = call_pages.parse_query(query, call_pages.EXPORT_LIMIT if self.site.export else
                                       call_pages.DEFAULT_LIMIT)
        with self._noting(run, "its calls"):
            found = self.call_index.run(run)
        shown = {game.name for game in open_run(run).games()}

        def link(game: str, entry: int | None) -> str | None:
            if game not in shown:
                return None
            return self.site.link(here, "game", run=run_id, game=game) + (f"#e-{entry}" if entry else "")

        return {"page": "calls", "title": f"Calls of run {run_id}", "run": run_id,
                **call_pages.page(found, asked, link, lambda i: self.call_index.entry(found, i)),
                "run_total": found.size,
                "run_judge_calls": int((found.columns["source"] != "game").sum()),  # of run_total: said on the page
                "filters": {**asked.filters, "sort": asked.sort},
                "options": call_pages.options(found, self.call_index.prices),
                "held": self.site.export, "export_limit": call_pages.EXPORT_LIMIT,
                "api": call_pages.api_address(self.site.api("calls", run=run_id), asked),
                "links": {"index": self.site.link(here, "index"), "run": self.site.link(here, "run", run=run_id)},
                "stamp": self.stamp()}

    def game_data(self, run_id: str, game: str) -> dict[str, Any]:
        """A game's replay data (view.game.timeline.game_data; a game still playing: so far)."""
        from avalon_agents.view.game.timeline import game_data

        run = self.run_path(run_id)
        try:
            folder = open_run(run).game(game)
        except UnknownGame:
            raise UnknownRun(f"no game {game!r} in run {run_id!r}") from None
        problem = self.catalog.confine.files(folder.path, game, folder.finished)  # as it is now
        if problem is not None:
            raise Unreadable(problem)
        with self._noting(run, game):
            data = game_data(folder.path, game)
        data["items"] = with_judged(data["items"], judged_rows(run, game))
        return data

    def game_page(self, run_id: str, game: str) -> str:
        """A game's replay page (the viewer's), with a link back to its run; a game still playing is drawn again
        every few seconds on the live site."""
        import html

        from avalon_agents.view.game.pages import game_page

        data = self.game_data(run_id, game)
        here = self.site.path("game", run=run_id, game=game)
        back = (f'<p class="back"><a href="{html.escape(self.site.link(here, "run", run=run_id))}">'
                f'&larr; run {html.escape(run_id)}</a> &middot; {html.escape(self.stamp()["framework"])}</p>')
        page = game_page(data).replace("<header>", "<header>\n" + back, 1)
        if data["result"]["winner"] is None and not self.site.export:
            page = page.replace("<head>", '<head>\n<meta http-equiv="refresh" content="5">', 1)
        return page

    def compare(self, run_ids: list[str]) -> dict[str, Any]:
        """The Compare page's data (view.compare.Comparer.compare: `sides`, `reference`, `warnings`, `headline`,
        `metrics`) with each side's run page linked. `run_ids`: runs and RUN#VARIANT names. Raises UnknownRun,
        ValueError (fewer than two sides), Unreadable."""
        self.catalog.runs()
        ids = sorted(self.catalog.ids(), key=len, reverse=True)
        for name in run_ids:  # each side's run readable (its id, or the longest id RUN#VARIANT starts with)
            found = next((i for i in ids if name == i or name.startswith(i + VARIANT)), None)
            if found is not None:
                self.run_path(found)
        data = self.comparer.compare(run_ids)
        here = self.site.path("compare", runs=run_ids)
        for side in data["sides"]:
            side["link"] = self.site.link(here, "run", run=side["run"])
        return {**data, "page": "compare", "title": "Compare " + ", ".join(s["label"] for s in data["sides"]),
                "api": self.site.api("compare", runs=run_ids), "links": {"index": self.site.link(here, "index")},
                "stamp": self.stamp()}

    def variant_sides(self, run_id: str) -> list[str]:
        """A run's variants as the sides of a comparison (RUN#VARIANT, in its config's order); [] with fewer than
        two. Raises UnknownRun."""
        run = self.run_path(run_id)
        analysis = self.runs.analysis(run)
        names = variants(run, analysis) if analysis is not None else []
        return [f"{run_id}{VARIANT}{v}" for v in names] if len(names) > 1 else []

    def _variants_link(self, here: str, run_id: str) -> str | None:
        """The comparison of a run's variants (None: fewer than two; an export writes it beside the run)."""
        sides = self.variant_sides(run_id)
        return self.site.link(here, "compare", runs=sides) if sides else None


def judged_rows(run: Path, game: str) -> list[dict[str, Any]]:
    """The judges' labels of a game's speeches, as `avalon analyze --judge-model` wrote them
    (analysis/metrics/judged_NAME.csv, records.analysis_dir.read_judged): one `judged` record per judge and speech,
    with the judge's answer."""
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for judge, rows in read_judged(analysis_dir(run)).items():
        for row in rows:
            if row.get("game") != game or not (row.get("seq") or "").isdigit():
                continue
            seat = int(row["seat"]) if (row.get("seat") or "").isdigit() else None
            found.setdefault((judge, int(row["seq"])), {
                "item": "record", "type": "judged", "judge": judge, "seq": int(row["seq"]), "seat": seat,
                "quest": int(row["quest"]) if (row.get("quest") or "").isdigit() else None,
                "answer": row.get("raw") or "", "valid": row.get("valid") == "True", "visible_to": []})
    return list(found.values())


def with_judged(items: list[dict[str, Any]], judged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The timeline with each judged record right after the speech it judges (by the speech's `seq`)."""
    if not judged:
        return items
    after: dict[int, list[dict[str, Any]]] = {}
    for record in judged:
        after.setdefault(record["seq"], []).append(record)
    out = []
    for item in items:
        out.append(item)
        if item.get("item") == "event" and item.get("type") == "speech":
            out += after.pop(item.get("seq"), [])
    return out + [r for rest in after.values() for r in rest]
