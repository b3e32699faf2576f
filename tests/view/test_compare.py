"""The Compare page: runs and a run's variants side by side, each difference checked against analysis.stats
computed by hand from the same runs (rule bots, made in tmp_path), the flag, the warnings, the variants' syntax,
its JSON through the real server, and the page in Chromium (reached from a run page and from the index, the flag
filter, axe-core)."""

from __future__ import annotations

import asyncio
import re
import shutil

import numpy as np
import pytest
from aiohttp.test_utils import TestClient, TestServer

from avalon_agents.analysis import stats
from avalon_agents.analysis.paper import metrics
from avalon_agents.records.run_dir import write_json_atomic
from avalon_agents.records.run_record import RUN, read_run_record
from avalon_agents.view.catalog import UnknownRun
from avalon_agents.view.pages import View
from avalon_agents.view.server import ViewServer
from avalon_agents.view.site import Site
from tests.helpers import avalon
from tests.view.runs import BOTS, ROOT, experiment, settled

SLOW = pytest.mark.slow  # runs made by `avalon run`, each run page's metrics and figures

ABLATION = """\
name: abl
agents:
  bots: {kind: rulebot}
  rand: {kind: random}
sides: {good: bots, evil: rand}
games_per_series: 6
seed: 0
variants:
  base: {}
  swap: {sides: {good: rand, evil: bots}}
  reseed: {seed: 9}
"""


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    experiment(folder, "a", games=6, seed=0)
    experiment(folder, "b", games=6, seed=1)
    (folder / "abl.yaml").write_text(ABLATION)
    done = avalon("run", str(folder / "abl.yaml"), "--out", str(folder / "abl"))
    assert done.returncode == 0, done.stderr
    shutil.copytree(ROOT / "tests/data/replay/run", folder / "llm")  # games with LLM calls
    (folder / "five.yaml").write_text(BOTS.format(name="five", games=2, seed=0) + "players: 5\n")
    done = avalon("run", str(folder / "five.yaml"), "--out", str(folder / "five"))
    assert done.returncode == 0, done.stderr
    return View([folder])


def one_game(data, game):
    """The run's data of one game."""
    return type(data)(**{name: t[t["game"] == game] if "game" in t else t for name, t in data.tables().items()})


def by_key(rows, **key):
    (row,) = [r for r in rows if r["key"] == key]
    return row


@SLOW
def test_two_runs_side_by_side_with_the_methods_analysis_uses(view):
    data = view.compare(["a", "b"])
    assert data["page"] == "compare" and [s["label"] for s in data["sides"]] == ["a#main", "b#main"]
    assert data["reference"] == "a#main" and data["sides"][0]["link"] == "/runs/a"
    runs = [view.runs.analysis(view.run_path(r)) for r in ("a", "b")]
    for side in ("good", "evil"):  # the headline's win rate: Newcombe's interval and Fisher's p, b minus a
        row = by_key(data["headline"], side=side)
        (xa, na), (xb, nb) = [(round(h.win_rate * h.n), h.n) for h in
                              (r.headline[r.headline["side"] == side].iloc[0] for r in runs)]
        diff = row["differences"][1]
        assert row["differences"][0] is None and row["values"][0]["value"] == pytest.approx(xa / na)
        assert diff["diff"] == pytest.approx(xb / nb - xa / na) and diff["method"] == "newcombe"
        assert (diff["ci_low"], diff["ci_high"]) == pytest.approx(stats.newcombe(xb, nb, xa, na))
        assert diff["p_value"] == pytest.approx(stats.fisher_p(xb, nb, xa, na))
    # another rate: resampling each run's games independently, from the metric's own rows per game
    rows = data["metrics"]["quest_engagement"]["rows"]
    row = by_key(rows, agent="bots", role="Merlin")
    per_game = []
    for r in runs:
        tables = [metrics.quest_engagement(one_game(r.data, g), ("agent", "role")) for g in r.data.games["game"]]
        mine = [t[(t["agent"] == "bots") & (t["role"] == "Merlin")] for t in tables]
        mine = [t.iloc[0] for t in mine if len(t)]
        per_game.append((np.array([t["value"] * t["n"] for t in mine]), np.array([t["n"] for t in mine], float)))
        assert per_game[-1][0].sum() / per_game[-1][1].sum() == pytest.approx(
            row["values"][len(per_game) - 1]["value"])
    (na_, da), (nb_, db) = per_game
    low, high, method = stats.difference_ci(nb_, db, na_, da)
    diff = row["differences"][1]
    assert (diff["ci_low"], diff["ci_high"], diff["method"]) == (pytest.approx(low), pytest.approx(high), method)
    assert diff["diff"] == pytest.approx(row["values"][1]["value"] - row["values"][0]["value"])
    assert diff["p_value"] is None and diff["excludes_zero"] == (low > 0 or high < 0)
    health = data["metrics"]["health"]  # not rates: side by side, a difference without an interval
    assert health["kind"] == "numbers" and by_key(health["rows"], measure="games")["values"] == [6, 6]
    assert not [w for w in data["warnings"] if "model" in w or "rules" in w]


@SLOW
def test_a_runs_variants_and_the_flag(view):
    data = view.compare(["abl"])  # a run alone: each of its variants, in its config's order
    labels = ["abl#base", "abl#swap", "abl#reseed"]
    assert [s["label"] for s in data["sides"]] == labels
    named = view.compare(labels)
    assert named["headline"] == data["headline"] and named["metrics"] == data["metrics"]
    assert [s["label"] for s in view.compare(["abl#swap", "abl#base"])["sides"]] == ["abl#swap", "abl#base"]
    flags = [d for m in [data["headline"], *(m["rows"] for m in data["metrics"].values())] for r in m
             for d in r["differences"] if d and d["ci_low"] is not None]
    assert flags and all(d["excludes_zero"] == (d["ci_low"] > 0 or d["ci_high"] < 0) for d in flags)
    swapped = by_key(data["headline"], side="evil")["differences"][1]  # rule bots as evil win far more often
    assert swapped["excludes_zero"] and swapped["ci_low"] > 0
    reseeded = by_key(data["headline"], side="evil")["differences"][2]  # the run page's numbers (same agents)
    (page,) = [r for r in view.run("abl")["headline"] if r["variant"] == "reseed" and r["side"] == "evil"]
    assert (reseeded["diff"], reseeded["ci_low"], reseeded["ci_high"], reseeded["p_value"]) == pytest.approx(
        (page["diff"], page["diff_ci_low"], page["diff_ci_high"], page["diff_p_value"]))
    assert sum(d["excludes_zero"] for d in flags) < len(flags)
    assert view.run("abl")["links"]["compare"] == "/compare?runs=abl%23base%2Cabl%23swap%2Cabl%23reseed"
    assert view.run("a")["links"]["compare"] is None  # one variant: nothing to compare
    with pytest.raises(UnknownRun, match="no variant 'nope' .*base, swap, reseed"):
        view.compare(["abl#nope", "a"])
    with pytest.raises(ValueError, match="two runs or variants"):
        view.compare(["a", "a#main"])
    assert Site(export=True).path("compare", runs=["abl#base", "x/y"]) == "compare/abl@base--x~y.html"


@SLOW
def test_a_warning_where_the_sides_differ_in_model(view):
    data = view.compare(["a", "llm"])
    (warning,) = [w for w in data["warnings"] if "differ in model" in w]
    assert "a#main: no LLM; llm#main: scripted" in warning


def test_a_warning_names_what_differs_in_the_runs_environments_and_the_run_page_shows_it(view):
    b = view.run_path("b")
    record = read_run_record(b)
    kernel = record.environment["blas_kernel"]
    assert view.run("a")["environment"]["blas_kernel"] == kernel and view.run("a")["environment"]["python"]
    assert [w for w in view.compare(["a", "b"])["warnings"] if "environment" in w] == []
    write_json_atomic(b / RUN, record.model_copy(update={"environment": {
        **record.environment, "blas_kernel": "Prescott", "numpy": "0.1"}}).model_dump(mode="json"))
    try:
        (warning,) = [w for w in view.compare(["a", "b"])["warnings"] if "environment" in w]
        assert warning.startswith("Run b was made in another environment than a: ")
        assert f"blas_kernel: {kernel} -> Prescott" in warning and "numpy: " in warning and "commit" not in warning
        assert view.run("b")["environment"]["blas_kernel"] == "Prescott"
    finally:
        write_json_atomic(b / RUN, record.model_dump(mode="json"))


@SLOW
def test_the_json_and_its_refusals_through_the_server(view):
    async def main():
        async with TestClient(TestServer(ViewServer(view).app())) as client:
            answers = {}
            for query in ("a,b", "a,nope", "abl%23nope", "a", "abl%23base,abl%23swap"):
                answer = await client.get(f"/api/compare?runs={query}")
                answers[query] = (answer.status, await answer.json())
            page = await client.get("/compare?runs=abl")
            return answers, page.status, await page.text()

    answers, status, page = asyncio.run(main())
    assert answers["a,b"][0] == 200 and answers["a,b"][1]["api"] == "/api/compare?runs=a%2Cb"
    assert answers["a,nope"][0] == 404 and "no run 'nope'" in answers["a,nope"][1]["error"]
    assert answers["abl%23nope"][0] == 404 and "no variant 'nope'" in answers["abl%23nope"][1]["error"]
    assert answers["a"][0] == 422 and "two runs or variants" in answers["a"][1]["error"]
    assert [s["label"] for s in answers["abl%23base,abl%23swap"][1]["sides"]] == ["abl#base", "abl#swap"]
    assert status == 200 and '"page": "compare"' in page


@pytest.mark.parametrize("games", [3, 10, 40])
def test_the_difference_interval_and_its_floors(games):
    rng = np.random.default_rng(games)
    den_a, den_b = rng.integers(3, 6, games).astype(float), rng.integers(3, 6, games).astype(float)
    num_a, num_b = rng.binomial(den_a.astype(int), 0.6).astype(float), rng.binomial(den_b.astype(int), 0.3)
    low, high, method = stats.difference_ci(num_a, den_a, num_b, den_b)
    picks = np.random.default_rng(0)  # by hand: each side's games resampled independently, the same seed
    a, b = [(n[p].sum(axis=1) / d[p].sum(axis=1)) for n, d in ((num_a, den_a), (num_b, den_b))
            for p in [picks.integers(0, games, size=(stats.BOOTSTRAP, games))]]
    boot = np.percentile(a - b, [2.5, 97.5])
    assert low <= boot[0] + 1e-12 and high >= boot[1] - 1e-12
    ka, na, kb, nb = num_a.sum(), den_a.sum(), num_b.sum(), den_b.sum()
    if games < stats.SMALL:  # never narrower than Newcombe's of the counts as one trial a game
        floor = stats.newcombe(*stats.as_games(ka, na, games), *stats.as_games(kb, nb, games))
    elif games < stats.FLOOR:  # never narrower than Newcombe's of the pooled counts
        floor = stats.newcombe(ka, na, kb, nb)
    else:
        floor = None
        assert (low, high, method) == (pytest.approx(boot[0]), pytest.approx(boot[1]), "bootstrap")
    if floor is not None:
        assert low <= floor[0] + 1e-12 and high >= floor[1] - 1e-12
        assert method != "bootstrap" or (boot[0] <= floor[0] and boot[1] >= floor[1])


def test_an_unknown_run_is_a_json_404(tmp_path):
    async def main():
        async with TestClient(TestServer(ViewServer(View([tmp_path])).app())) as client:
            answer = await client.get("/api/compare?runs=nope,other%23main")
            return answer.status, answer.content_type, await answer.json()

    status, kind, body = asyncio.run(main())
    assert (status, kind) == (404, "application/json") and "no run 'nope'" in body["error"]


@SLOW
def test_the_page_in_chromium(view):
    from selenium.webdriver.common.by import By

    from tests.browser import assert_accessible, chromium, console_errors
    from tests.view.test_browser import Served, cells, wait_for

    server, driver = Served(view.roots[0]), chromium(1300, 1400)
    try:
        driver.get(server.url + "runs/abl")  # the run page links the comparison of its variants
        link = wait_for(driver, lambda d: d.find_elements(By.LINK_TEXT, "compare its variants"))[0]
        shown = [c for r in cells(driver, "headline") for c in r if c.startswith(("+", "-"))]
        rows = [r for r in view.run("abl")["headline"] if r["diff"] == r["diff"] and r["diff"] is not None]
        assert len(shown) == len(rows) == 2  # reseed vs base (swap: other agents), signed, flagged by compare's rule
        for text in shown:
            assert re.fullmatch(r"[+-]\d+% \[[+-]\d+%, [+-]\d+%\] p=[\d.]+( not 0)?", text), text
        assert sorted(t.endswith("not 0") for t in shown) == sorted(
            (r["diff_ci_low"] > 0 or r["diff_ci_high"] < 0) and r["diff_p_value"] < 0.05 for r in rows)
        assert len(driver.find_elements(By.CSS_SELECTOR, "#headline .flag")) == sum(t.endswith("not 0") for t in shown)
        driver.get(server.url + "runs/llm")  # cost, health and judged tables: formats.py's numbers, no raw float
        wait_for(driver, lambda d: d.find_elements(By.ID, "headline"))
        text = driver.find_element(By.ID, "app").text
        numbers = "\n".join(" ".join(r) for t in ("headline", "cost", "health") for r in cells(driver, t))
        assert re.search(r"\d+% \[\d+%, \d+%\]", numbers) and re.search(r"\d,\d{3}\b", numbers)  # not 54773.0
        assert not re.search(r"\d{2,}\.\d{3}|\d\.\d{4,}|\d\.\d%|\$\d+\.\d{4}", numbers), numbers
        assert " · $0.00 · " in text  # formats.dollars
        driver.get(server.url + "runs/abl")
        link = wait_for(driver, lambda d: d.find_elements(By.LINK_TEXT, "compare its variants"))[0]
        link.click()
        wait_for(driver, lambda d: d.find_elements(By.ID, "c-headline"))
        data = view.compare(["abl"])
        assert driver.title == "Compare abl#base, abl#swap, abl#reseed" and not console_errors(driver)
        evil = next(r for r in cells(driver, "c-headline") if r[0] == "evil")
        assert all("%" in c for c in evil[1:4]) and "not 0" not in evil[5]
        assert "not 0" not in evil[4] and "interval and test disagree: not flagged" in evil[4]  # one rule
        assert re.fullmatch(r"[+-]\d+% \[[+-]\d+%, [+-]\d+%\]", evil[4].splitlines()[0])  # formats.difference_text
        assert "Holm p=" in evil[4]
        good = next(r for r in cells(driver, "c-headline") if r[0] == "good")
        assert "same games as headline side=evil" in good[4]  # each difference once
        note = driver.find_element(By.TAG_NAME, "body").text
        assert "flagged where the 95% interval excludes zero and" in note and "by chance alone" in note
        every = len(driver.find_elements(By.CSS_SELECTOR, "tbody tr"))
        driver.find_element(By.ID, "flagged").click()
        kept = driver.find_elements(By.CSS_SELECTOR, "tbody tr")
        flagged = [d for m in [data["headline"], *(m["rows"] for m in data["metrics"].values())] for r in m
                   for d in r["differences"] if d and d["flagged"]]
        assert 3 <= len(kept) < every and len(kept) >= 3 + len(flagged) // 2  # the sides' rows and flagged rows
        assert_accessible(driver)
        driver.get(server.url)  # the index: pick two runs, compare them
        for run in ("a", "b"):
            pick = f'[aria-label="pick {run} to compare"]'
            wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, pick))[0].click()
        driver.find_element(By.ID, "compare").click()
        wait_for(driver, lambda d: d.title == "Compare a#main, b#main")
        assert [r[0] for r in cells(driver, "sides")] == ["a#main", "b#main"] and not console_errors(driver)
    finally:
        driver.quit()
        server.stop()


@SLOW
def test_the_export_writes_each_runs_variants_comparison_linked_from_its_page(view, tmp_path):
    import json
    import re

    from avalon_agents.view.export import export

    written = export(view.roots, tmp_path / "site", [["a", "b"]])
    name = "compare/abl@base--abl@swap--abl@reseed.html"
    assert tmp_path / "site" / name in written and tmp_path / "site/compare/a--b.html" in written
    run_page = (tmp_path / "site/runs/abl/index.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', run_page, re.S)[1])
    assert data["links"]["compare"] == "../../" + name  # relative: opens from disk
    page = (tmp_path / "site" / name).read_text()
    assert '"page": "compare"' in page and '"api": null' in page and '"link": "../runs/abl/index.html"' in page


@SLOW
def test_a_run_whose_name_holds_the_variants_mark(view, tmp_path):
    shutil.copytree(view.roots[0] / "a", tmp_path / "a#1")
    shutil.copytree(view.roots[0] / "abl", tmp_path / "abl")
    other = View([tmp_path])
    sides = other.comparer.sides(["a#1#main", "abl#swap"])
    assert [(s.run_id, s.variant) for s in sides] == [("a#1", "main"), ("abl", "swap")]
    assert [s.label for s in other.comparer.sides(["a#1", "abl#base"])] == ["a#1#main", "abl#base"]
    with pytest.raises(UnknownRun, match="no run 'zz'"):
        other.comparer.sides(["zz#main", "a#1"])


def flat(data):
    """Every difference on a comparison's page, with the row it is in: (table name, row, difference)."""
    return [(name, r, d) for name, rows in [("headline", data["headline"]),
                                            *((n, m["rows"]) for n, m in data["metrics"].items())]
            for r in rows for d in r["differences"] if d is not None]


@SLOW
def test_one_rule_each_difference_once_and_holms_adjustment(view):
    data = view.compare(["abl"])
    found = flat(data)
    assert data["rule"].startswith("flagged where the 95% interval excludes zero and")
    for _, _, d in found:  # the interval and the test agree on every flagged row, and say where they do not
        assert d["agree"] == (d["p_value"] is None or d["excludes_zero"] == (d["p_value"] < 0.05))
        assert d["flagged"] == (d["excludes_zero"] and d["agree"] and d["same_as"] is None)
    swapped = by_key(data["headline"], side="evil")["differences"][1]  # Newcombe excludes 0, Fisher's p does not
    assert swapped["excludes_zero"] and swapped["p_value"] >= 0.05 and not swapped["agree"] and not swapped["flagged"]
    good = by_key(data["headline"], side="good")["differences"][1]  # the same games seen from good: shown once
    assert good["same_as"] == "headline side=evil" and good["diff"] == pytest.approx(-swapped["diff"])
    repeats = [d for name, _, d in found if name == "win_rate_by_role" and d["same_as"]]
    assert repeats and all(d["same_as"].startswith("headline ") for d in repeats)  # a role's rows are its side's
    distinct = [d for _, _, d in found if d["ci_low"] is not None and d["same_as"] is None]
    assert data["multiple"]["differences"] == len(distinct) and data["multiple"]["flagged"] == sum(
        d["flagged"] for d in distinct)
    tested = [d for d in distinct if d["p_value"] is not None]
    assert data["multiple"]["tests"] == len(tested) > 2
    ps = sorted(d["p_value"] for d in tested)  # Holm by hand: the k-th smallest times (m - k), running maximum
    by_hand = np.minimum(1, np.maximum.accumulate([(len(ps) - k) * p for k, p in enumerate(ps)]))
    assert sorted(d["p_adjusted"] for d in tested) == pytest.approx(list(by_hand))
    assert all(d["p_adjusted"] is None for _, _, d in found if d["same_as"] or d["p_value"] is None)


@SLOW
def test_a_warning_for_every_setup_difference(view):
    data = view.compare(["a", "five"])
    assert [(s["players"], s["plugins"]) for s in data["sides"]] == [(["6"], ["none"]), (["5"], ["none"])]
    (players,) = [w for w in data["warnings"] if "differ in players" in w]
    assert "a#main: 6; five#main: 5" in players
    (roles,) = [w for w in data["warnings"] if "differ in roles" in w]
    assert not [w for w in view.compare(["a", "b"])["warnings"] if "differ in" in w]
    b = view.run_path("b")
    record = read_run_record(b)
    write_json_atomic(b / RUN, {**record.model_dump(mode="json"), "plugins": [{"key": "/x/my_plugin.py"}]})
    try:
        (plugins,) = [w for w in view.compare(["a", "b"])["warnings"] if "differ in plugins" in w]
        assert "a#main: none; b#main: my_plugin.py" in plugins
    finally:
        write_json_atomic(b / RUN, record.model_dump(mode="json"))


@SLOW
def test_avalon_view_compare_json(view):
    import json

    folder = str(view.roots[0])
    done = avalon("view", folder, "--compare", "abl", "--compare", "a,five", "--json")
    assert done.returncode == 0, done.stderr
    abl, five = json.loads(done.stdout)
    assert abl["rule"].startswith("flagged where") and abl["multiple"] == view.compare(["abl"])["multiple"]
    assert [d["flagged"] for _, _, d in flat(abl)] == [d["flagged"] for _, _, d in flat(view.compare(["abl"]))]
    assert any("differ in players" in w for w in five["warnings"])
    wrong = avalon("view", folder, "--compare", "a,nope", "--json")
    assert wrong.returncode == 2 and wrong.stderr.strip().splitlines() == ["error: compare: no run 'nope' under "
                                                                           f"{folder}"]


@SLOW
def test_the_compare_page_counts_each_runs_metrics_once_in_threads_without_their_pages_figures(view, monkeypatch):
    """From a new View, the Compare page counts every big run's metrics (over run_data.FIRST_IN_THREAD games) in a
    thread of its own, all at once, and draws none of their run pages' figures; a run page opened after it draws its
    figures from those metrics, not counting them again, and its numbers are the page's."""
    from avalon_agents.view import run_data

    monkeypatch.setattr(run_data, "FIRST_IN_THREAD", 1)
    fresh = View(view.catalog.roots)
    counted = []
    real = run_data.compute
    monkeypatch.setattr(run_data, "compute", lambda data, run, *a, **k: counted.append(run.name) or real(data, run,
                                                                                                         *a, **k))
    data = fresh.compare(["a", "b"])
    assert sorted(counted) == ["a", "b"] and sorted(t.name for t in fresh.runs._counting.values()) == [
        "view metrics a", "view metrics b"]
    assert fresh.runs._drawn == {}  # the Compare page draws no run page's figures
    assert fresh.run("a")["computing"]  # a big run's first page: in a thread
    settled(fresh.runs)
    page = fresh.run("a")  # its figures drawn from the metrics counted for the comparison, not counted again:
    assert not page["computing"] and page["figures"] and sorted(counted) == ["a", "b"]
    (good,) = [r for r in page["headline"] if r["side"] == "good"]
    assert by_key(data["headline"], side="good")["values"][0]["value"] == good["win_rate"]
