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
from avalon_agents.view.game import game_data, write_replay
from avalon_agents.view.game.pages import page_name
from avalon_agents.records.run_dir import EVENTS, META, RESULT, TRACE
from tests.browser import assert_accessible, chromium, console_errors

pytestmark = pytest.mark.slow

ROLES = ("Merlin", "Percival", "Loyal Servant", "Morgana", "Assassin", "Mordred", "Oberon", "Minion")
# each timeline entry the browser lays out (a hidden one has no box): its type, visible_to and record seat
SHOWN = """return [...document.querySelectorAll('#timeline .item')].filter(n => n.getClientRects().length > 0)
  .map(n => [n.dataset.type, n.dataset.visible, n.dataset.seat || null, n.classList.contains('record')]);"""


@pytest.fixture(scope="module")
def browser() -> Iterator:
    driver = chromium(1400, 1600)
    yield driver
    driver.quit()


def open_page(driver, page: Path, fragment: str = "") -> None:
    """Load a page (afresh, with `fragment` in its URL if given) and check that the browser logged no error (a
    script error, a blocked load)."""
    if fragment:
        driver.get("about:blank")  # else a page already open only takes the new fragment
    driver.get(page.as_uri() + fragment)
    assert console_errors(driver) == []


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
    roles = json.loads((game / RESULT).read_text())["roles"]
    return min(int(s) for s, r in roles.items() if r == role)


def seats_of(game: Path, role: str) -> list[int]:
    roles = json.loads((game / RESULT).read_text())["roles"]
    return sorted(int(s) for s, r in roles.items() if r == role)


def view_as(driver, seat: int | str) -> list[list]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, "seat-filter")).select_by_value(str(seat))
    return driver.execute_script(SHOWN)


def test_the_page_shows_every_event_of_the_game(browser, replay_run, tmp_path):
    from selenium.webdriver.common.by import By

    for game in game_dirs(replay_run):
        open_page(browser, replay_run / "replay" / page_name(game.name))
        events = jsonl(game / EVENTS)
        shown = browser.execute_script(SHOWN)
        assert sorted(t for t, _, _, record in shown if not record) == sorted(e["type"] for e in events)
        records = jsonl(game / TRACE)
        assert len([s for s in shown if s[3]]) == len(records)
        speeches = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".item.ev-speech")]
        assert [s.split(": ", 1)[1] for s in speeches] == [e["text"] for e in events if e["type"] == "speech"]
        assert browser.find_elements(By.CSS_SELECTOR, ".method.json")  # the model seats' decisions
    screenshot(browser, tmp_path, "replay-game")


def test_a_loyal_servant_sees_only_what_it_could_see(browser, replay_run, tmp_path):
    # a Loyal Servant played by a model (a rule bot's decisions leave no record: only model seats' are recorded)
    game, servant = next((g, s) for g in game_dirs(replay_run) for s in seats_of(g, "Loyal Servant")
                         if json.loads((g / META).read_text())["seats"][str(s)] != "rulebot")
    open_page(browser, replay_run / "replay" / page_name(game.name))
    everything = view_as(browser, "all")
    assert any(s[3] and int(s[2]) != servant for s in everything)  # other seats' private records exist
    shown = view_as(browser, servant)
    events = jsonl(game / EVENTS)
    visible = [e for e in events if e["visible_to"] == "all" or servant in e["visible_to"]]
    assert sorted(t for t, _, _, record in shown if not record) == sorted(e["type"] for e in visible)
    assert len(visible) < len(events)
    for kind, visible_to, seat, record in shown:
        assert visible_to == "all" or str(servant) in visible_to.split(","), (kind, visible_to)
        assert not record or seat == str(servant), (kind, seat)
    assert [v for t, v, _, _ in shown if t == "night_info"] == [str(servant)]
    own = [r for r in jsonl(game / TRACE) if r["seat"] == servant]
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
    (night,) = [e for e in jsonl(game / EVENTS) if e["type"] == "night_info" and e["seat"] == merlin]
    assert night["known_as"] == "evil" and night["seats"]
    assert all(f"Player {s}" in nights[0].text for s in night["seats"])
    screenshot(browser, tmp_path, "replay-merlin")


def test_the_roles_button_reveals_the_roles(browser, replay_run):
    from selenium.webdriver.common.by import By

    game = game_dirs(replay_run)[1]
    open_page(browser, replay_run / "replay" / page_name(game.name))
    roles = json.loads((game / RESULT).read_text())["roles"]
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
        assert json.loads((game / RESULT).read_text())["winner"] in row.text
        row.find_element(By.TAG_NAME, "a").click()
        assert browser.find_element(By.ID, "title").text == f"Avalon replay: {game.name}"
        assert browser.get_log("browser") == []


def test_the_pages_have_no_serious_accessibility_violation(browser, replay_run):
    """axe-core on the index and on a game's page as it opens, filtered to a seat with the roles shown and every
    LLM call open."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    open_page(browser, replay_run / "replay" / "index.html")
    assert_accessible(browser)
    game = game_dirs(replay_run)[0]
    open_page(browser, replay_run / "replay" / page_name(game.name))
    assert_accessible(browser)
    view_as(browser, seat_of(game, "Merlin"))
    browser.find_element(By.ID, "roles-button").click()
    browser.execute_script("document.querySelectorAll('#timeline details').forEach((d) => { d.open = true; })")
    WebDriverWait(browser, 5).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".call-body"))
    assert_accessible(browser)


# the current entry: its id, the URL's hash, the counter, whether it lies in the window below the header
CURRENT = """const node = document.querySelector('#timeline .item.current');
  const all = document.querySelectorAll('#timeline .item.current').length;
  const box = node && node.getBoundingClientRect();
  const below = document.querySelector('header').getBoundingClientRect().bottom;
  return {id: node && node.id, count: all, hash: location.hash,
          position: document.getElementById('position').textContent,
          seen: !!box && box.top >= below - 1 && box.bottom <= innerHeight + 1};"""


def current(driver) -> dict:
    return driver.execute_script(CURRENT)


def press(driver, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    for key in keys:
        ActionChains(driver).send_keys(key).perform()


def entry_ids(driver) -> list[str]:
    """The ids of the entries the seat filter shows, in order."""
    return driver.execute_script("return [...document.querySelectorAll('#timeline .item')]"
                                 ".filter(n => !n.hidden).map(n => n.id);")


def test_stepping_moves_the_marker_and_the_hash(browser, replay_run, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    game = game_dirs(replay_run)[0]
    open_page(browser, replay_run / "replay" / page_name(game.name))
    ids = entry_ids(browser)
    total = len(ids)
    assert ids == [f"e-{n}" for n in range(1, total + 1)]
    assert current(browser) == {"id": None, "count": 0, "hash": "", "position": f"entry – of {total}", "seen": False}
    nxt, prev = browser.find_element(By.ID, "step-next"), browser.find_element(By.ID, "step-prev")
    nxt.click()
    assert current(browser) == {"id": "e-1", "count": 1, "hash": "#e-1", "position": f"entry 1 of {total}",
                                "seen": True}
    assert not prev.is_enabled() and nxt.is_enabled()
    for _ in range(10):
        nxt.click()
    browser.execute_script("document.getElementById('e-41').click()")  # a click on an entry selects it
    assert current(browser)["id"] == "e-41"
    nxt.click()
    prev.click()
    assert current(browser) == {"id": "e-41", "count": 1, "hash": "#e-41", "position": f"entry 41 of {total}",
                                "seen": True}
    press(browser, Keys.ARROW_RIGHT, "j")
    assert current(browser)["hash"] == "#e-43"
    press(browser, Keys.ARROW_LEFT, "k", "k")
    assert current(browser)["hash"] == "#e-40"
    prev.click()
    assert current(browser)["id"] == "e-39"
    press(browser, Keys.END)
    assert current(browser) == {"id": f"e-{total}", "count": 1, "hash": f"#e-{total}",
                                "position": f"entry {total} of {total}", "seen": True}
    assert not nxt.is_enabled() and prev.is_enabled()
    press(browser, "j")  # nothing after the last
    assert current(browser)["id"] == f"e-{total}"
    press(browser, Keys.HOME)
    assert current(browser)["hash"] == "#e-1" and current(browser)["seen"]
    browser.find_element(By.ID, "search").send_keys("jj")  # keys typed in the search box are not steps
    press(browser, Keys.ARROW_RIGHT)
    assert current(browser)["id"] == "e-1"
    screenshot(browser, tmp_path, "replay-stepping")

    servant = seat_of(game, "Loyal Servant")  # steps go through the entries the seat filter shows, only those
    view_as(browser, servant)
    shown = entry_ids(browser)
    assert len(shown) < total
    assert shown[:12] != ids[:12]
    browser.find_element(By.TAG_NAME, "h1").click()  # out of the seat filter's list
    press(browser, Keys.HOME)
    seen = [current(browser)["id"]]
    for _ in range(11):
        press(browser, "j")
        seen.append(current(browser)["id"])
    assert seen == shown[:12]
    press(browser, Keys.END)
    assert current(browser)["id"] == shown[-1]
    assert current(browser)["position"] == f"entry {len(shown)} of {len(shown)}"


def test_a_link_opens_its_entry(browser, replay_run, tmp_path):
    from selenium.webdriver.common.by import By

    game = game_dirs(replay_run)[0]
    page = replay_run / "replay" / page_name(game.name)
    items = game_data(game, game.name)["items"]
    n = next(i for i, item in enumerate(items) if item["type"] == "speech" and i > 60) + 1
    open_page(browser, page, f"#e-{n}")
    assert current(browser) == {"id": f"e-{n}", "count": 1, "hash": f"#e-{n}",
                                "position": f"entry {n} of {len(items)}", "seen": True}
    assert browser.find_element(By.ID, f"e-{n}").text.endswith(items[n - 1]["text"])
    screenshot(browser, tmp_path, "replay-link")
    browser.execute_script("location.hash = '#e-5'")  # a new hash selects its entry
    assert current(browser)["id"] == "e-5" and current(browser)["seen"]
    link = browser.find_element(By.CSS_SELECTOR, f"#e-{n} a.link")  # each entry links to itself
    assert link.get_attribute("href") == page.as_uri() + f"#e-{n}"
    link.click()  # the page follows the hash on its hashchange event: waited for, not read at once
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 30).until(lambda d: current(d)["id"] == f"e-{n}")

    servant = seat_of(game, "Loyal Servant")  # a link to an entry the seat filter hides shows everyone
    hidden = next(i for i, item in enumerate(items) if item["item"] == "record" and item["seat"] != servant) + 1
    view_as(browser, servant)
    assert not browser.find_element(By.ID, f"e-{hidden}").is_displayed()
    browser.execute_script(f"location.hash = '#e-{hidden}'")
    assert current(browser)["id"] == f"e-{hidden}" and current(browser)["seen"]
    assert browser.find_element(By.ID, "seat-filter").get_attribute("value") == "all"
    open_page(browser, page, "#e-99999")  # no such entry: nothing selected, no error
    assert current(browser)["id"] is None


def test_search_finds_a_speech_and_enter_steps_through_the_matches(browser, replay_run):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    game = game_dirs(replay_run)[0]
    open_page(browser, replay_run / "replay" / page_name(game.name))
    speeches = [e for e in jsonl(game / EVENTS) if e["type"] == "speech"]
    words = "am wary of"  # a rule bot's words
    said = [e for e in speeches if words in e["text"].lower()]
    assert 0 < len(said) < len(speeches)
    box = browser.find_element(By.ID, "search")
    box.send_keys(words.upper())
    hits = browser.find_elements(By.CSS_SELECTOR, "#timeline .item.match")
    assert all(words in h.get_attribute("textContent").lower() for h in hits)
    found = [h.text.split(": ", 1)[1] for h in hits if "ev-speech" in h.get_attribute("class")]
    assert found == [e["text"] for e in said]
    assert browser.find_element(By.ID, "matches").text == f"{len(hits)} matches"
    ids = [h.get_attribute("id") for h in hits]
    stepped = []
    for _ in range(len(ids) + 1):
        box.send_keys(Keys.ENTER)
        stepped.append(current(browser)["id"])
        assert current(browser)["seen"]
    assert stepped == ids + ids[:1]  # round the end to the first again
    assert browser.find_element(By.ID, "matches").text == f"match 1 of {len(hits)}"
    box.send_keys(Keys.SHIFT, Keys.ENTER)
    assert current(browser)["id"] == ids[-1]
    box.clear()
    box.send_keys("no such words anywhere")
    assert browser.find_element(By.ID, "matches").text == "no match"
    assert not browser.find_elements(By.CSS_SELECTOR, "#timeline .item.match")


def test_an_llm_call_opens_on_click_and_shows_its_prompt_and_reply(browser, replay_run, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    game = game_dirs(replay_run)[0]
    open_page(browser, replay_run / "replay" / page_name(game.name))
    data = game_data(game, game.name)
    n, call = next((i, item) for i, item in enumerate(data["items"])
                   if item["type"] == "llm_call" and item["request"] == "speak")
    entry = browser.find_element(By.ID, f"e-{n + 1}")
    details = entry.find_element(By.TAG_NAME, "details")
    assert details.get_attribute("open") is None and not entry.find_elements(By.CSS_SELECTOR, ".call-body")
    summary = entry.find_element(By.TAG_NAME, "summary")
    assert summary.text.startswith(f"Player {call['seat']} · LLM call · quest {call['quest']}")
    assert all(w in summary.text for w in (call["name"], "speak", "scripted", f"{call['input_tokens']} in",
                                           f"{call['output_tokens']} out tokens"))
    assert entry.size["height"] < 60  # collapsed: one line
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", summary)
    summary.click()
    body = WebDriverWait(browser, 5).until(lambda d: entry.find_element(By.CSS_SELECTOR, ".call-body"))
    messages = body.find_elements(By.CSS_SELECTOR, ".message")
    expected = [(m["role"], data["texts"][m["text"]]) for m in call["messages"]] + [("reply", call["reply"])]
    assert [(m.find_element(By.CSS_SELECTOR, ".speaker").get_attribute("textContent"),
             m.find_element(By.CSS_SELECTOR, "pre").get_attribute("textContent")) for m in messages] == expected
    assert all(m.is_displayed() for m in messages) and "Player" in messages[0].text
    screenshot(browser, tmp_path, "replay-llm-call")
    summary.click()
    assert details.get_attribute("open") is None and not messages[0].is_displayed()


PAYLOADS = ('<script>window.__pwned=1</script>', '<img src=x onerror="window.__pwned=1">')


def test_text_that_looks_like_html_is_shown_as_text(browser, replay_run, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    game = tmp_path / "game-00001"
    shutil.copytree(game_dirs(replay_run)[0], game)
    events = jsonl(game / EVENTS)
    speeches = [e for e in events if e["type"] == "speech"]
    for e, payload in zip(speeches, PAYLOADS * len(speeches)):
        e["text"] = payload
    (game / EVENTS).write_text("".join(json.dumps(e) + "\n" for e in events))
    trace = jsonl(game / TRACE)
    for r in trace:  # the calls' prompts and replies, the module outputs
        if r["type"] == "llm_call":
            r["messages"][-1]["content"] += PAYLOADS[1]
            r["reply"] = PAYLOADS[0]
        if r["type"] == "module":
            r["text"] = PAYLOADS[1]
    (game / TRACE).write_text("".join(json.dumps(r) + "\n" for r in trace))
    page = write_replay(game, tmp_path / "pwned.html")
    open_page(browser, page)  # no console error: no image tried to load
    pwned = "return typeof window.__pwned"
    assert browser.execute_script(pwned) == "undefined"
    shown = [n.text.split(": ", 1)[1] for n in browser.find_elements(By.CSS_SELECTOR, ".item.ev-speech")]
    assert shown == [e["text"] for e in speeches] and set(shown) == set(PAYLOADS)
    browser.execute_script("document.querySelectorAll('#timeline details').forEach((d) => { d.open = true; })")
    WebDriverWait(browser, 5).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".call-body")) == len(
        [r for r in trace if r["type"] == "llm_call"]))
    replies = {p.get_attribute("textContent") for p in browser.find_elements(By.CSS_SELECTOR,
                                                                              ".message:last-child pre")}
    assert replies == {PAYLOADS[0]}
    box = browser.find_element(By.ID, "search")
    box.send_keys("<script>window.__pwned")  # search reads the text too
    assert browser.find_element(By.ID, "matches").text.endswith(" matches")
    assert not browser.find_elements(By.CSS_SELECTOR, "#timeline img, #timeline script")
    assert len(browser.find_elements(By.TAG_NAME, "script")) == 2
    assert browser.execute_script(pwned) == "undefined"
    assert console_errors(browser) == []
    screenshot(browser, tmp_path, "replay-html-as-text")


# at phone width: the page's overflow, the timeline's box, the widest entry's right edge, the seats table's box
PHONE = """const box = (n) => n.getBoundingClientRect();
  const items = [...document.querySelectorAll('#timeline .item')].filter((n) => n.getClientRects().length);
  return {wide: document.documentElement.scrollWidth - innerWidth, width: innerWidth,
          timeline: [box(document.getElementById('timeline')).left, box(document.getElementById('timeline')).right],
          items: Math.max(...items.map((n) => box(n).right)),
          seats: [box(document.getElementById('seats')).left, box(document.getElementById('seats')).right]};"""
# the text of each entry of a type as it reads on the screen: a secret the page hides reads "hidden" (page.css
# writes it before the hidden value)
TEXTS = """const read = (node) => [...node.childNodes].map((c) => c.nodeType === 3 ? c.data
    : c.classList.contains('role') && getComputedStyle(c.querySelector('.v')).display === 'none' ? 'hidden'
    : read(c)).join('');
  return [...document.querySelectorAll('#timeline .item.' + arguments[0])].map(read);"""


@pytest.fixture(scope="module")
def lady_run(tmp_path_factory) -> Path:
    """A recorded 8-player game of rule bots with the Lady of the Lake (quest cards, the Lady's results), its
    replay written by `avalon replay`."""
    from click.testing import CliRunner

    from avalon_agents.cli import cli

    run = tmp_path_factory.mktemp("lady") / "run"
    played = CliRunner().invoke(cli, ["play", "--players", "8", "--seats", ",".join(["rulebot"] * 8),
                                      "--lady-of-the-lake", "--seed", "2", "--out", str(run), "--json"])
    assert played.exit_code == 0, played.output
    assert CliRunner().invoke(cli, ["replay", str(run)]).exit_code == 0
    return run


def test_hidden_roles_hide_each_quest_card_and_what_the_lady_showed(browser, lady_run, replay_run):
    """Until the roles are shown, a seat's quest card, what the Lady of the Lake showed its holder and an extracted
    quest card read "hidden" (each tells a seat's side) and search does not find them; shown, they read as played."""
    from selenium.webdriver.common.by import By

    game = game_dirs(lady_run)[0]
    events = jsonl(game / EVENTS)
    cards = [e for e in events if e["type"] == "quest_card"]
    shown = [e for e in events if e["type"] == "lady_result"]
    assert cards and shown
    open_page(browser, lady_run / "replay" / page_name(game.name))
    assert browser.execute_script(TEXTS, "ev-quest_card") == [f"Player {e['seat']} plays hidden." for e in cards]
    assert browser.execute_script(TEXTS, "ev-lady_result") == [
        f"The Lady shows Player {e['holder']} that Player {e['target']} is hidden." for e in shown]
    search = browser.find_element(By.ID, "search")
    search.send_keys("plays fail")
    assert browser.find_element(By.ID, "matches").text == "no match"
    browser.find_element(By.ID, "roles-button").click()
    assert browser.execute_script(TEXTS, "ev-quest_card") == [
        f"Player {e['seat']} plays {'success' if e['success'] else 'fail'}." for e in cards]
    assert browser.execute_script(TEXTS, "ev-lady_result") == [
        f"The Lady shows Player {e['holder']} that Player {e['target']} is {e['loyalty']}." for e in shown]
    if not all(e["success"] for e in cards):
        assert browser.find_element(By.ID, "matches").text != "no match"
    # a quest card an LLM seat's answer was read as (an extraction record) is hidden too
    game = game_dirs(replay_run)[0]
    open_page(browser, replay_run / "replay" / page_name(game.name))
    read = [t for t in browser.execute_script(TEXTS, "rec-extraction") if "quest read by " in t]
    assert read and all("→ hidden" in t and "→ true" not in t and "→ false" not in t for t in read), read[:3]


def test_a_game_and_the_index_at_phone_width(browser, lady_run, tmp_path):
    """At 390 px the replay's page is no wider than the screen: the seats table above the timeline, both within
    the window, every entry inside it; the index's table scrolls in its own box; no serious axe-core violation."""
    game = game_dirs(lady_run)[0]
    browser.set_window_size(390, 844)
    try:
        open_page(browser, lady_run / "replay" / page_name(game.name))
        shape = browser.execute_script(PHONE)
        assert shape["wide"] <= 0, shape
        assert 0 <= shape["timeline"][0] and shape["timeline"][1] <= shape["width"], shape
        assert shape["items"] <= shape["width"] and shape["seats"][1] <= shape["width"], shape
        assert_accessible(browser)
        screenshot(browser, tmp_path, "replay-phone")
        open_page(browser, lady_run / "replay" / "index.html")
        assert browser.execute_script("return document.documentElement.scrollWidth - innerWidth") <= 0
        assert_accessible(browser)
    finally:
        browser.set_window_size(1400, 1600)
