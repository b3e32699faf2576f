"""avalon view in a real browser (Debian's headless chromium through selenium): the real `avalon view` process
serving runs; each page drawn with no script error and no serious accessibility problem (axe-core); sorting and
filtering; a hostile model name shown as text; the index following a run that plays in another process without a
reload; the export opened from disk."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from avalon_agents.records.run_dir import HEALTH
from avalon_agents.records.run_record import RUN

from tests.browser import assert_accessible, chromium, console_errors
from tests.helpers import AVALON, avalon
from tests.view.runs import ROOT, experiment

pytestmark = pytest.mark.slow

HOSTILE = '<img src=x id=pwned onerror="document.title=1">'
LIVE = """\
name: live
model: {model}
agents:
  ours: {{kind: llm}}
  bots: {{kind: rulebot}}
sides: {{good: ours, evil: bots}}
games_per_series: 4
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("runs")
    experiment(folder, name="bots", games=3)
    import shutil

    shutil.copytree(ROOT / "tests/data/replay/run", folder / "llm")
    (folder / "llm" / RUN).unlink()  # as a run recorded before run.json: read by what its other files say
    health = sorted((folder / "llm").rglob(HEALTH))[0]
    data = json.loads(health.read_text())
    data["by_model"] = {HOSTILE: next(iter(data["by_model"].values()))}
    health.write_text(json.dumps(data))
    return folder


class Served:
    """`avalon view FOLDER --port 0` in its own process; `url` its address."""

    def __init__(self, folder: Path) -> None:
        self.process = subprocess.Popen([AVALON, "view", str(folder), "--port", "0"], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        assert " at http://" in line, (line, self.process.stderr.read() if self.process.poll() is not None else "")
        self.url = line.split(" at ")[1].split()[0]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def served(runs) -> Iterator[Served]:
    server = Served(runs)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def one_browser() -> Iterator:
    driver = chromium(1300, 1400)
    yield driver
    driver.quit()


@pytest.fixture
def browser(one_browser):
    """The module's browser on a blank page with its console log read empty: an earlier test's page, whose server
    has stopped, logs its failed polls into no later test's (the export test once read one: 1 in a whole run)."""
    one_browser.get("about:blank")
    one_browser.get_log("browser")
    return one_browser


def wait_for(driver, condition, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition(driver)
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"waited {timeout} s: {driver.current_url}")


def cells(driver, table: str) -> list[list[str]]:
    """The table's cells' texts, read in one script (a live page may draw itself again between two reads)."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(r => [...r.cells].map(c => c.innerText.trim()))",
        f"#{table} tbody tr")


def test_the_index_sorts_filters_and_shows_names_as_text(served, browser):
    browser.get(served.url)
    rows = wait_for(browser, lambda d: cells(d, "runs"))
    assert [r[1] for r in rows] == ["bots", "llm"]
    assert console_errors(browser) == [] and browser.find_elements(By.ID, "pwned") == []
    llm = next(r for r in rows if r[1] == "llm")
    assert HOSTILE in llm[6] and browser.title.startswith("avalon view")  # the name as text; its script never ran
    assert_accessible(browser)
    header = browser.find_element(By.XPATH, "//table[@id='runs']//th[.//button[text()='run']]")
    header.find_element(By.TAG_NAME, "button").click()
    header = browser.find_element(By.XPATH, "//table[@id='runs']//th[.//button[text()='run']]")
    header.find_element(By.TAG_NAME, "button").click()  # descending
    assert [r[1] for r in cells(browser, "runs")] == ["llm", "bots"]
    header = browser.find_element(By.XPATH, "//table[@id='runs']//th[.//button[text()='run']]")
    assert header.get_attribute("aria-sort") == "descending"
    box = browser.find_element(By.ID, "filter")
    box.send_keys("rulebot")
    assert [r[1] for r in wait_for(browser, lambda d: len(cells(d, "runs")) == 1 and cells(d, "runs"))] == ["bots"]


def test_a_run_page_shows_its_metrics_figures_and_games(served, browser):
    browser.get(served.url + "runs/llm")
    wait_for(browser, lambda d: d.find_elements(By.ID, "headline"))
    assert console_errors(browser) == []
    text = browser.find_element(By.ID, "app").text
    for part in ("Headline", "win rate", "quest engagement", "Figures", "Health", "Cost", "Games (", "Config ("):
        assert part in text, part
    images = browser.find_elements(By.CSS_SELECTOR, "figure img")
    assert images and all(browser.execute_script("return arguments[0].naturalWidth", i) > 100 for i in images)
    assert_accessible(browser)
    game = browser.find_element(By.CSS_SELECTOR, "#games tbody a")
    game.click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline .item"))
    assert "wins" in browser.find_element(By.ID, "outcome").text and console_errors(browser) == []
    assert_accessible(browser)


def test_the_index_follows_a_run_playing_in_another_process(tmp_path, browser):
    """A run of 4 games on a model answering in 0.2 s a call (a loopback server: each game takes seconds, longer
    than the page's poll) moves on the index while it plays."""
    from avalon_agents.llm.loopback import openai_server

    experiment(tmp_path, name="early", games=1)  # something to show before the live run starts
    with openai_server(latency=0.2) as model:
        config = tmp_path / "live.yaml"
        config.write_text(LIVE.format(model=f"openai-compatible:m@{model.base_url}"))
        follow(tmp_path, config, browser)


def follow(tmp_path, config, browser):
    server = Served(tmp_path)
    try:
        browser.get(server.url)
        wait_for(browser, lambda d: cells(d, "runs"))
        browser.execute_script("window.stillHere = true")  # gone if the page reloads
        run = subprocess.Popen([AVALON, "run", str(config), "--out", str(tmp_path / "live")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seen = set()

        def games(d):
            row = next((r for r in cells(d, "runs") if r[1] == "live"), None)
            if row:
                seen.add(row[4])
            return row is not None and row[4] == "4 / 4"

        wait_for(browser, games, timeout=120)
        assert run.wait(timeout=60) == 0
        assert browser.execute_script("return window.stillHere") is True
        assert len(seen) >= 2, seen  # it moved while the run played, not only once at the end
        assert "live: checked" in browser.find_element(By.ID, "status").text
    finally:
        server.stop()


def test_the_export_opens_from_disk(runs, tmp_path, browser):
    out = tmp_path / "site"
    done = avalon("view", str(runs), "--export", str(out))
    assert done.returncode == 0, done.stderr
    browser.get((out / "index.html").as_uri())
    wait_for(browser, lambda d: cells(d, "runs"))
    ids = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr td:first-child a")]
    assert ids == ["bots", "llm"] and console_errors(browser) == []
    assert browser.find_element(By.ID, "status").text == ""  # not live: nothing is asked of a server
    assert "Made by avalon_agents" in browser.find_element(By.ID, "stamp").text
    assert_accessible(browser)
    browser.find_element(By.LINK_TEXT, "llm").click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "headline"))
    images = browser.find_elements(By.CSS_SELECTOR, "figure img")
    assert images and browser.current_url.startswith("file://") and console_errors(browser) == []
    browser.find_element(By.CSS_SELECTOR, "#games tbody a").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline .item"))
    browser.find_element(By.CSS_SELECTOR, "p.back a").click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "headline"))
    assert browser.current_url.endswith("runs/llm/index.html")


def test_a_run_page_shows_the_environment_it_was_made_in(served, browser):
    browser.get(served.url + "runs/bots")
    rows = dict(wait_for(browser, lambda d: cells(d, "environment")))
    assert rows["python"].startswith("CPython") and rows["blas_kernel"] and rows["commit"]
    assert console_errors(browser) == []
    assert_accessible(browser)
    from avalon_agents.records.run_dir import EXPERIMENT, read_run_file

    browser.get(served.url + "runs/llm")  # recorded before run.json: its experiment.json's commit alone
    recorded = read_run_file(ROOT / "tests/data/replay/run", EXPERIMENT)["commit"]  # as re-recorded last
    assert dict(wait_for(browser, lambda d: cells(d, "environment"))) == {"commit": recorded}


def test_hostile_requests_in_the_browser(tmp_path):
    """In Chromium, against the real `avalon view`: a page of another name resolving to 127.0.0.1 (DNS rebinding,
    made with Chromium's host resolver rules) gets the JSON refusal and none of the runs; the index names each
    unreadable run's file on its row; a game address out of the viewed folders is a JSON 404 reading nothing."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from tests.browser import CHROMEDRIVER, CHROMIUM
    from tests.view.test_hostile import GAME, SECRET, hostile_folders

    viewed, other = hostile_folders(tmp_path)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--host-resolver-rules=MAP rebound.example 127.0.0.1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    server = Served(viewed)
    try:
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        driver.get(f"http://rebound.example:{port}/api/runs")
        refused = driver.find_element(By.TAG_NAME, "body").text
        assert "this machine's names only" in refused and "corrupt" not in refused, refused
        driver.get(server.url)
        rows = wait_for(driver, lambda d: cells(d, "runs"))
        state = {r[1]: r[3] for r in rows}
        assert state["ok"] == "done", state
        assert sorted(state) == ["big", "corrupt", "linked", "linkedgame", "newer", "ok"], state
        assert state["corrupt"].startswith("unreadable: ") and f"{GAME}/trace.jsonl is corrupt" in state["corrupt"]
        assert "link out of the viewed folders" in state["linked"] and state["newer"].startswith("newer layout: ")
        assert [e for e in console_errors(driver) if "rebound.example" not in e["message"]] == []
        outside = str(other / "x" / GAME).replace("/", "%2F")
        driver.get(f"{server.url}runs/ok/games/{outside}")
        body = driver.find_element(By.TAG_NAME, "body").text
        assert json.loads(body)["error"].startswith("no game") and SECRET not in driver.page_source
    finally:
        server.stop()
        driver.quit()


# at phone width: the page's overflow, and each cell of the table's rows: its column's label and its box's edges
CARDS = """const cells = [...document.querySelectorAll(arguments[0] + ' tbody td')];
  return {wide: document.documentElement.scrollWidth - innerWidth, width: innerWidth,
          headers: document.querySelectorAll(arguments[0] + ' thead th').length,
          rows: document.querySelectorAll(arguments[0] + ' tbody tr').length,
          cells: cells.map((c) => [c.dataset.label, c.getBoundingClientRect().left, c.getBoundingClientRect().right,
                                   c.getBoundingClientRect().width])};"""


def test_the_index_and_compare_at_phone_width(tmp_path, browser):
    """At 390 px every column of the index's rows and of compare's tables is on the screen (each row a card of
    labelled lines), the difference from the reference side included, and the page is no wider than the window;
    no serious axe-core violation."""
    experiment(tmp_path, name="one", games=4)
    experiment(tmp_path, name="two", games=4, seed=77)
    server = Served(tmp_path)
    browser.set_window_size(390, 844)
    try:
        for page, table in (("", "#runs"), ("compare?runs=one,two", "#c-headline"), ("compare?runs=one,two", "#sides")):
            browser.get(server.url + page)
            wait_for(browser, lambda d: d.execute_script(CARDS, table)["rows"] >= 2)
            shape = browser.execute_script(CARDS, table)
            assert shape["wide"] <= 0, (page, shape["wide"])
            assert len(shape["cells"]) == shape["rows"] * shape["headers"], (page, shape)
            for label, left, right, width in shape["cells"]:
                assert label and 0 <= left and right <= shape["width"] and width > 0, (page, label, left, right)
            if table == "#c-headline":  # the difference column, on the screen
                assert any("−" in label and "[95% CI]" in label for label, *_ in shape["cells"]), shape["cells"]
            assert_accessible(browser)
            assert console_errors(browser) == []
    finally:
        browser.set_window_size(1300, 1400)
        server.stop()
