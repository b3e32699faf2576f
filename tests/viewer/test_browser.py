"""The replay pages in a real browser: Debian's headless chromium driven through its chromedriver by selenium.

Without chromium these tests fail (they do not skip): install it with
`apt-get install -y chromium chromium-driver` (CI's .ci/run does). A screenshot of each checked page is saved
under the test's tmp_path and, if AVALON_TEST_ARTIFACTS names a folder, there too.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from avalon_agents.analysis.load import game_dirs
from avalon_agents.viewer.pages import page_name

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ROLES = ("Merlin", "Percival", "Loyal Servant", "Morgana", "Assassin", "Mordred", "Oberon", "Minion")
# each timeline entry the browser lays out (a hidden one has no box): its type, visible_to and record seat
SHOWN = """return [...document.querySelectorAll('#timeline .item')].filter(n => n.getClientRects().length > 0)
  .map(n => [n.dataset.type, n.dataset.visible, n.dataset.seat || null, n.classList.contains('record')]);"""


@pytest.fixture(scope="module")
def browser() -> Iterator:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).is_file()]
    if missing:
        pytest.fail(f"the replay browser tests need Debian's chromium and its driver ({', '.join(missing)} missing): "
                    "apt-get install -y chromium chromium-driver", pytrace=False)
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("the replay browser tests need selenium: pip install -e '.[dev]'", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1600"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    yield driver
    driver.quit()


def open_page(driver, page: Path) -> None:
    """Load a page and check that the browser logged no error (a script error, a blocked load)."""
    driver.get(page.as_uri())
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == [], errors


def screenshot(driver, tmp_path: Path, name: str) -> Path:
    shot = tmp_path / f"{name}.png"
    driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    if folder := os.environ.get("AVALON_TEST_ARTIFACTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / shot.name)
    return shot


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def seat_of(game: Path, role: str) -> int:
    roles = json.loads((game / "result.json").read_text())["roles"]
    return min(int(s) for s, r in roles.items() if r == role)


def view_as(driver, seat: int | str) -> list[list]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, "seat-filter")).select_by_value(str(seat))
    return driver.execute_script(SHOWN)


def test_the_page_shows_every_event_of_the_game(browser, replay_run, tmp_path):
    from selenium.webdriver.common.by import By

    for game in game_dirs(replay_run):
        open_page(browser, replay_run / "replay" / page_name(game.name))
        events = jsonl(game / "events.jsonl")
        shown = browser.execute_script(SHOWN)
        assert sorted(t for t, _, _, record in shown if not record) == sorted(e["type"] for e in events)
        records = [r for r in jsonl(game / "trace.jsonl") if r["type"] != "llm_call"]
        assert len([s for s in shown if s[3]]) == len(records)
        speeches = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".item.ev-speech")]
        assert [s.split(": ", 1)[1] for s in speeches] == [e["text"] for e in events if e["type"] == "speech"]
        assert browser.find_elements(By.CSS_SELECTOR, ".method.json") and browser.find_elements(By.CSS_SELECTOR,
                                                                                                 ".method.typed")
    screenshot(browser, tmp_path, "replay-game")


def test_a_loyal_servant_sees_only_what_it_could_see(browser, replay_run, tmp_path):
    game = game_dirs(replay_run)[0]
    open_page(browser, replay_run / "replay" / page_name(game.name))
    servant = seat_of(game, "Loyal Servant")
    everything = view_as(browser, "all")
    assert any(s[3] and int(s[2]) != servant for s in everything)  # other seats' private records exist
    shown = view_as(browser, servant)
    events = jsonl(game / "events.jsonl")
    visible = [e for e in events if e["visible_to"] == "all" or servant in e["visible_to"]]
    assert sorted(t for t, _, _, record in shown if not record) == sorted(e["type"] for e in visible)
    assert len(visible) < len(events)
    for kind, visible_to, seat, record in shown:
        assert visible_to == "all" or str(servant) in visible_to.split(","), (kind, visible_to)
        assert not record or seat == str(servant), (kind, seat)
    assert [v for t, v, _, _ in shown if t == "night_info"] == [str(servant)]
    own = [r for r in jsonl(game / "trace.jsonl") if r["type"] != "llm_call" and r["seat"] == servant]
    assert len([s for s in shown if s[3]]) == len(own) > 0
    from selenium.webdriver.common.by import By

    browser.find_element(By.ID, "roles-button").click()
    table = browser.find_element(By.ID, "seats").text  # what the servant knows: its own role, no other
    assert "Loyal Servant" in table and not [r for r in ROLES if r != "Loyal Servant" and r in table]
    screenshot(browser, tmp_path, "replay-loyal-servant")


def test_merlin_sees_its_own_night_information(browser, replay_run, tmp_path):
    from selenium.webdriver.common.by import By

    game = game_dirs(replay_run)[0]
    open_page(browser, replay_run / "replay" / page_name(game.name))
    merlin = seat_of(game, "Merlin")
    view_as(browser, merlin)
    nights = [n for n in browser.find_elements(By.CSS_SELECTOR, ".item.ev-night_info") if n.is_displayed()]
    assert len(nights) == 1 and nights[0].get_attribute("data-visible") == str(merlin)
    browser.find_element(By.ID, "roles-button").click()
    (night,) = [e for e in jsonl(game / "events.jsonl") if e["type"] == "night_info" and e["seat"] == merlin]
    assert night["known_as"] == "evil" and night["seats"]
    assert all(f"Player {s}" in nights[0].text for s in night["seats"])
    screenshot(browser, tmp_path, "replay-merlin")


def test_the_roles_button_reveals_the_roles(browser, replay_run):
    from selenium.webdriver.common.by import By

    game = game_dirs(replay_run)[1]
    open_page(browser, replay_run / "replay" / page_name(game.name))
    roles = json.loads((game / "result.json").read_text())["roles"]
    table = browser.find_element(By.ID, "seats")
    assert not [r for r in ROLES if r in table.text]
    dealt = ".item.ev-role_assigned, .item.ev-night_info, .item.ev-game_ended"  # speeches may name roles
    assert not [r for r in ROLES for e in browser.find_elements(By.CSS_SELECTOR, dealt) if r in e.text]
    browser.find_element(By.ID, "roles-button").click()
    rows = {r.get_attribute("data-seat"): r.text for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")}
    assert rows.keys() == roles.keys()
    assert all(role in rows[seat] for seat, role in roles.items())
    deals = browser.find_elements(By.CSS_SELECTOR, ".item.ev-role_assigned")
    assert [d.text for d in deals] == [f"Player {s} is {r}." for s, r in sorted(roles.items(), key=lambda x: int(x[0]))]
    assert browser.find_element(By.ID, "roles-button").text == "Hide roles"


def test_the_index_links_every_game(browser, replay_run, tmp_path):
    from selenium.webdriver.common.by import By

    index = replay_run / "replay" / "index.html"
    open_page(browser, index)
    games = game_dirs(replay_run)
    links = browser.find_elements(By.CSS_SELECTOR, "#games a")
    assert sorted(a.text for a in links) == sorted(g.name for g in games)
    screenshot(browser, tmp_path, "replay-index")
    for game in games:
        open_page(browser, index)
        row = browser.find_element(By.XPATH, f"//tr[td/a[text()='{game.name}']]")
        assert json.loads((game / "result.json").read_text())["winner"] in row.text
        row.find_element(By.TAG_NAME, "a").click()
        assert browser.find_element(By.ID, "title").text == f"Avalon replay: {game.name}"
        assert browser.get_log("browser") == []
