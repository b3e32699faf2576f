"""A study's own result on its run page: a tournament's leaderboard, a red team's attack table and a bias study's
paired table, in the JSON API and drawn in the page (a real browser), read through records.study_report from the
files the commands wrote; a declaration naming a file out of the run, or linking out of the viewed folders, is not
read. And the run page's other labels: a run of many models counted in its index cell, a run of people said so,
the calls page's judges' calls said, a judged run's every figure and each judged table's judge and model."""

from __future__ import annotations

import asyncio
import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from selenium.webdriver.common.by import By

from avalon_agents.records.study_report import RESULT_TABLES, study_tables
from avalon_agents.view.pages import View
from avalon_agents.view.server import ViewServer
from tests.helpers import avalon
from tests.view.runs import BIAS, REDTEAM

pytestmark = pytest.mark.slow  # three studies played by their commands

TOURNAMENT = "name: tourney\nentrants:\n  bots: {kind: rulebot}\n  rand: {kind: random}\nblocks: 1\nseries: 1\n"
EXPECTED = {  # run -> (each table's title, its file, a column and the values it must hold)
    "tourney": [("Leaderboard", "tournament/leaderboard.csv", "agent", {"bots", "rand"}),
                ("Head to head", "tournament/head_to_head.csv", "opponent", {"bots", "rand"})],
    "redteam": [("Attacks", "redteam.csv", "attack", {"host_vote_cancelled"})],
    "bias": [("Paired comparisons", "bias.csv", "list", {"players"})],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("studies")
    for command, name, config in (("tournament", "tourney", TOURNAMENT), ("redteam", "redteam", REDTEAM),
                                  ("bias", "bias", BIAS)):
        (folder / f"{name}.yaml").write_text(config)
        done = avalon(command, str(folder / f"{name}.yaml"), "--out", str(folder / name))
        assert done.returncode == 0, done.stderr
    return folder


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_each_study_page_and_its_json_show_its_result(runs):
    view = View([runs])

    async def go():
        async with TestClient(TestServer(ViewServer(view, None).app())) as client:
            for run, tables in EXPECTED.items():
                answer = await client.get(f"/api/runs/{run}")
                assert answer.status == 200, run
                result = (await answer.json())["result"]
                assert [(t["title"], t["file"]) for t in result] == [(t, f) for t, f, _, _ in tables]
                for table, (_, file, column, values) in zip(result, tables):
                    written = csv_rows(runs / run / file)
                    assert table["total"] == len(written) == len(table["rows"]) > 0
                    assert table["columns"] == list(written[0]) and {r[column] for r in table["rows"]} == values
                page = await (await client.get(f"/runs/{run}")).text()
                assert '"result": [{"title": "' + tables[0][0] in page  # the page holds it for its script

    asyncio.run(go())


@pytest.fixture(scope="module")
def browser() -> Iterator:
    from tests.browser import chromium

    driver = chromium(1300, 1400)
    yield driver
    driver.quit()


def test_the_result_tables_are_drawn_in_the_browser(runs, browser, tmp_path):
    from tests.browser import console_errors
    from tests.view.test_browser import Served, cells, wait_for

    served = Served(runs)
    try:
        for run, tables in EXPECTED.items():
            browser.get(served.url + f"runs/{run}")
            for title, file, column, values in tables:
                table = "r-" + "".join(c if c.isalnum() or c in "_-" else "-" for c in file)
                rows = wait_for(browser, lambda d, t=table: cells(d, t))
                heads = [h.text for h in browser.find_elements(By.CSS_SELECTOR, f"#{table} thead th")]
                assert {r[heads.index(column)] for r in rows} == values, (run, title)
                assert title in [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#app h2")]
            assert console_errors(browser) == []
    finally:
        browser.get("about:blank")  # its page polls no stopped server (a console error in the next test)
        served.stop()


def test_many_models_are_counted_in_the_index_and_listed_on_the_page(tmp_path, browser):
    """A run of six agents (a tournament's entrants ran to 275 characters): its index cell is their count and the
    first two (the whole list its title), its page lists all six."""
    from avalon_agents.records.run_dir import META
    from tests.browser import console_errors
    from tests.view.test_browser import Served, cells, wait_for

    done = avalon("play", "--games", "1", "--seats", ",".join(["rulebot"] * 6), "--out", str(tmp_path / "batch"))
    assert done.returncode == 0, done.stderr
    names = [f"entrant-{i}-with-a-long-name" for i in range(1, 7)]
    meta = next((tmp_path / "batch").rglob(META))
    data = json.loads(meta.read_text())
    data["seats"] = dict(zip(data["seats"], names))
    meta.write_text(json.dumps(data))
    served = Served(tmp_path)
    try:
        browser.get(served.url)
        rows = wait_for(browser, lambda d: cells(d, "runs"))
        heads = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#runs thead th")]
        cell = rows[0][heads.index("models")]
        assert cell == f"6: {names[0]}, {names[1]}, …", cell
        browser.get(served.url + "runs/batch")
        wait_for(browser, lambda d: d.find_elements(By.ID, "games"))
        text = browser.find_element(By.ID, "app").text
        assert "6 models: " + ", ".join(names) in text and console_errors(browser) == []
    finally:
        browser.get("about:blank")  # its page polls no stopped server (a console error in the next test)
        served.stop()


def test_a_declaration_is_read_only_inside_the_run(runs, tmp_path):
    """A declared file out of the run (`..`, absolute) is left out; a table linking out of the viewed folders
    refuses the page (404, naming it), as every file a page reads."""
    run = tmp_path / "viewed" / "t"
    run.parent.mkdir()
    import shutil

    shutil.copytree(runs / "tourney", run)
    secret = tmp_path / "secret.csv"
    secret.write_text("password\nhunter2\n")
    (run / RESULT_TABLES).write_text(json.dumps({"layout": 1, "tables": [
        {"title": "up", "file": "../../secret.csv"}, {"title": "abs", "file": str(secret)},
        {"title": "Leaderboard", "file": "tournament/leaderboard.csv"}]}))
    assert [t["title"] for t in study_tables(run)] == ["Leaderboard"]
    view = View([tmp_path / "viewed"])
    assert [t["title"] for t in view.run("t")["result"]] == ["Leaderboard"]
    (run / "tournament" / "leaderboard.csv").unlink()
    (run / "tournament" / "leaderboard.csv").symlink_to(secret)
    from avalon_agents.view.confine import Unreadable

    with pytest.raises(Unreadable, match="leaderboard.csv is a link out of the viewed folders"):
        View([tmp_path / "viewed"]).run("t")


def test_an_import_of_people_says_so_on_its_page(tmp_path):
    """The provenance of a run of people says "models none (people)", not "none (bots)"."""
    from tests.view.runs import ROOT

    done = avalon("import", "avalon-nlu", str(ROOT / "tests/importers/avalon_nlu"), "--out", str(tmp_path / "humans"))
    assert done.returncode == 0, done.stderr
    page = View([tmp_path]).run("humans")
    assert "models none (people);" in page["provenance"] and "bots" not in page["provenance"]


def test_the_calls_page_says_its_total_holds_judge_calls(tmp_path, browser):
    """A run whose judges made calls: the calls page's total says how many of its calls are judges'."""
    import shutil

    from avalon_agents.records.run_dir import JUDGE_TRACE, META
    from avalon_agents.records.trace import LLMCall, to_line
    from avalon_agents.view.site import Site, page_html
    from tests.view.runs import ROOT

    shutil.copytree(ROOT / "tests/data/replay/run", tmp_path / "r")
    game = sorted(p.parent for p in (tmp_path / "r").rglob(META))[0]
    (game / JUDGE_TRACE).write_text("".join(to_line(LLMCall(
        stage="judge", name="goal", prompt_id="judge/x", prompt_hash="h", reply=r, settings={"spec": "scripted"},
        input_tokens=40, output_tokens=3)) + "\n" for r in ("yes", "no")))
    page = View([tmp_path], Site(export=True)).calls("r", {})
    exported = tmp_path / "calls.html"
    exported.write_text(page_html(page["title"], page))
    browser.get(exported.as_uri())
    text = browser.find_element(By.ID, "app").text
    assert f"{page['run_total']} LLM calls (2 of them judges' calls: stage judge)" in text, text[:300]


def test_a_judged_run_shows_every_figure_and_labels_its_judged_tables(tmp_path, browser):
    """A run judged by `avalon analyze --judge-model scripted`: its page draws every figure the report drew (as many
    as analysis/figures holds), names the judges' model in its provenance and each judged table's judge and model."""
    import shutil

    from avalon_agents.records.analysis_dir import FIGURES, analysis_dir
    from tests.browser import console_errors
    from tests.view.runs import ROOT
    from tests.view.test_browser import Served, wait_for

    shutil.copytree(ROOT / "tests/data/replay/run", tmp_path / "r")
    done = avalon("analyze", str(tmp_path / "r"), "--judge-model", "scripted")
    assert done.returncode == 0, done.stderr
    drawn = sorted(p.stem for p in (analysis_dir(tmp_path / "r") / FIGURES).glob("*.png"))
    assert len(drawn) == 9
    served = Served(tmp_path)
    try:
        browser.get(served.url + "runs/r")
        images = wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "figure img")) == len(drawn)
                          and d.find_elements(By.CSS_SELECTOR, "figure img"))
        assert all(browser.execute_script("return arguments[0].naturalWidth", i) > 100 for i in images)
        text = browser.find_element(By.ID, "app").text
        assert "judge scripted: canned labels" in text and "judge none" not in text
        labels = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#app h3")]
        assert "camouflage_shares · judge camouflage, model scripted" in labels, labels
        assert console_errors(browser) == []
    finally:
        browser.get("about:blank")  # its page polls no stopped server (a console error in the next test)
        served.stop()
