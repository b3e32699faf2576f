"""The web table as people use it: two headless Chromium sessions take two seats against rule bots and play a
whole game by clicking through the page, each page showing what its seat knows (its night information on the
seats, in its panel and in its choices), speeches as typed (markup shown as text, never run), at desktop and phone
width, with no serious accessibility violation (axe-core) on the seats', the spectator's and the replay's pages
(slow)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from avalon_agents.core.rules import make_rules
from avalon_agents.host.play import AgentSetup
from avalon_agents.records.run_dir import EVENTS, RESULT
from avalon_agents.table.serve import TableGame, serve_table
from tests.browser import assert_accessible, chromium, console_errors

pytestmark = pytest.mark.slow

ATTACKS = ['<script>window.__pwned = 1</script>', '<img src=x onerror="window.__pwned = 1">',
           '"><svg onload="window.__pwned = 1">']
SEATS = (2, 5)
SEED = 6  # seat 2 the Assassin (asked to strike at the end), seat 5 Merlin (sees the evil seats, seat 2 among them)


@pytest.fixture(scope="module")
def browsers() -> Iterator[list]:
    drivers = [chromium(1200, 1000) for _ in SEATS]
    yield drivers
    for d in drivers:
        d.quit()


def serve(game: TableGame, out: Path, linger: float = 30.0):
    """`game`'s table in a thread of its own (selenium blocks): (its addresses by seat for each person's seat and
    'watch', the thread)."""
    addresses: queue.Queue = queue.Queue()

    def ready(table, address) -> None:
        addresses.put({**{s: address.url(table.seat_path(s)) for s in game.humans},
                       "watch": address.url(table.watch_path())})

    thread = threading.Thread(target=lambda: asyncio.run(serve_table(game, out, port=0, ready=ready, linger=linger)),
                              daemon=True)
    thread.start()
    return addresses.get(timeout=60), thread


def start_table(out: Path, linger: float = 30.0):
    """The two people's game (SEATS, SEED) served: (its addresses, the thread)."""
    rules = make_rules("official", 6).model_copy(update={"first_leader": SEATS[0]})  # a person leads a proposal
    return serve(TableGame(rules=rules, kinds=tuple("human" if s in SEATS else "rulebot" for s in rules.seats),
                           seed=SEED, setup=AgentSetup(), decision_timeout=120), out, linger)


def act(driver, speeches: list[str]) -> str | None:
    """Answer the open request by clicking, as a person would; the request's kind, or None if none is open."""
    from selenium.webdriver.common.by import By

    if driver.find_element(By.ID, "request").get_attribute("hidden") is not None:
        return None
    choices = driver.find_elements(By.CSS_SELECTOR, "#choices .choice")
    picks = driver.find_elements(By.CSS_SELECTOR, "#choices input.pick")
    if picks:  # propose: tick players until the Send button allows it
        submit = driver.find_element(By.ID, "submit")
        for box in picks:
            if submit.is_enabled():
                break
            box.click()
        submit.click()
        return "propose"
    if choices:  # vote, quest, assassinate
        wanted = [c for c in choices if c.get_attribute("data-answer") in ("approve", "success")]
        (wanted or choices)[0].click()
        return "choice"
    speech = driver.find_element(By.ID, "speech")
    if speech.is_displayed():
        speech.send_keys(speeches.pop(0) if speeches else "I have nothing to add.")
        driver.find_element(By.ID, "submit").click()
        return "speak"
    return None


# what a page shows at a moment: the open request's kind, the window's title, each choice (its text, whether it
# is marked as the seat's evil teammate)
LOOK = """const req = document.getElementById('request');
  return {kind: req.hidden ? null : req.dataset.kind, title: document.title,
          choices: [...document.querySelectorAll('#choices .choice, #choices label')]
            .map((n) => [n.textContent.trim(), n.classList.contains('mate')])};"""
# the log's numbers: inside the log's box (not clipped at its left edge), and the log not wider than its box
NUMBERS = """const log = document.getElementById('log'), items = [...log.children];
  const left = log.getBoundingClientRect().left;
  return {count: items.length, number: getComputedStyle(items[items.length - 1], '::before').content,
          inside: items.every((li) => li.getBoundingClientRect().left >= left - 0.5),
          overflow: log.scrollWidth - log.clientWidth};"""
# a phone-width page: wider than the window? where the request and the table are
PHONE = """return {wide: document.documentElement.scrollWidth - innerWidth,
  request: document.getElementById('request').getBoundingClientRect().top,
  table: document.getElementById('board').getBoundingClientRect().top};"""


def on_a_phone(driver) -> None:
    """At 390 px (a phone), with the request open: nothing wider than the screen, the request above the table,
    no serious accessibility violation; then back to the desktop width."""
    driver.set_window_size(390, 844)
    time.sleep(0.3)
    shape = driver.execute_script(PHONE)
    assert shape["wide"] <= 0 and shape["request"] < shape["table"], shape
    assert_accessible(driver)
    driver.set_window_size(1200, 1000)


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_two_people_play_a_whole_game_in_chromium(browsers, tmp_path):
    from selenium.webdriver.common.by import By

    addresses, thread = start_table(tmp_path / "table")
    for seat, driver in zip(SEATS, browsers):
        driver.get(addresses[seat])
    speeches = {SEATS[0]: list(ATTACKS), SEATS[1]: []}
    done: dict[str, int] = {}
    looks: dict[int, dict[str, dict]] = {seat: {} for seat in SEATS}  # each kind's first request, as shown
    deadline = time.monotonic() + 600
    while not all(d.find_element(By.TAG_NAME, "body").get_attribute("data-over") == "yes" for d in browsers):
        assert time.monotonic() < deadline, "the game did not end in 10 minutes"
        for seat, driver in zip(SEATS, browsers):
            look = driver.execute_script(LOOK)
            assert look["title"].startswith("▶ Your turn") == bool(look["kind"]), look  # the title says so
            if look["kind"] and look["kind"] not in looks[seat]:
                looks[seat][look["kind"]] = look
                assert_accessible(driver)  # each kind of request's form
                if seat == SEATS[1] and look["kind"] == "speak":
                    on_a_phone(driver)
            kind = act(driver, speeches[seat])
            if kind:
                done[kind] = done.get(kind, 0) + 1
                time.sleep(0.3)  # the page sends and polls before the next look
        time.sleep(0.1)
    assert done.get("propose", 0) + done.get("choice", 0) >= 4 and done.get("speak", 0) >= 2, done
    assert speeches[SEATS[0]] == []  # every attack was said
    game = tmp_path / "table" / "game-00001"
    roles = {int(s): r for s, r in json.loads((game / RESULT).read_text())["roles"].items()}
    night = {e["seat"]: e for e in jsonl(game / EVENTS) if e["type"] == "night_info"}
    assassin, merlin = SEATS
    assert roles[assassin] == "Assassin" and roles[merlin] == "Merlin" and "assassinate" in looks[assassin]
    for seat, driver in zip(SEATS, browsers):
        assert driver.execute_script("return window.__pwned") is None
        log = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#log li")]
        said = [b.text for b in driver.find_elements(By.CSS_SELECTOR, "#log li.speech bdi.said")]
        assert all(attack in said for attack in ATTACKS), (seat, said)  # as typed, shown as text
        assert not [line for line in log if '\\"' in line]  # no JSON escapes (the narration's quoting)
        assert not driver.find_elements(By.CSS_SELECTOR, "#log img, #log script, #log svg")
        numbers = driver.execute_script(NUMBERS)
        assert numbers["count"] >= 20 and numbers["number"] == "counter(line) \".\"", numbers
        assert numbers["inside"] and numbers["overflow"] <= 0, numbers
        roles_shown = driver.find_elements(By.CSS_SELECTOR, "#roles tr")
        assert len(roles_shown) == 6 and "(you)" in roles_shown[seat - 1].text
        assert driver.find_element(By.ID, "winner").text.split()[0] in ("Good", "Evil")
        # what the seat knows, on its panel and on the seats it concerns
        side = "evil" if roles[seat] == "Assassin" else "good"
        assert driver.find_element(By.ID, "role").text == f"You are {roles[seat]} ({side})."
        assert driver.find_element(By.ID, "setup").text.startswith(  # the game's setup, public
            "Good: Merlin, Percival, 2 × Loyal Servant. Evil: Morgana, Assassin. Who strikes at Merlin: the Assassin.")
        known = driver.find_element(By.ID, "known").text
        seen = night[seat]["seats"]
        assert seen and all(f"Player {n}" in known for n in seen), known
        marked = driver.find_elements(By.CSS_SELECTOR, "#seats li.known-mate, #seats li.known-evil")
        assert sorted(int(li.get_attribute("data-seat")) for li in marked) == seen
        assert_accessible(driver)  # the end: the roles, the replay's link
        assert console_errors(driver) == []
    # the Assassin's targets: its teammates marked as such, the others not
    mates = night[assassin]["seats"]
    targets = looks[assassin]["assassinate"]["choices"]
    assert [t for t in targets if t[1]] == [[f"Player {n} (your evil teammate)", True] for n in mates], targets
    assert targets == [[f"Player {n}" + (" (your evil teammate)" if n in mates else ""), n in mates]
                       for n in range(1, 7) if n != assassin] and mates
    # a team picker: the seats the night showed marked
    words = {"evil": "seen as evil at night", "evil_teammates": "your evil teammate"}
    pickers = {seat: look["propose"]["choices"] for seat, look in looks.items() if "propose" in look}
    assert SEATS[0] in pickers, done  # the first leader (start_table)
    for seat, picker in pickers.items():
        marked = words[night[seat]["known_as"]]
        assert [t[0] for t in picker if marked in t[0]] == [f"Player {n} ({marked})" for n in night[seat]["seats"]]
    # the spectator, then the replay through the end's link
    watcher = browsers[0]
    watcher.get(addresses["watch"])
    time.sleep(1.5)
    public = "\n".join(li.text for li in watcher.find_elements(By.CSS_SELECTOR, "#log li"))
    assert "(night)" not in public and all(attack in public for attack in ATTACKS)
    assert not watcher.find_element(By.ID, "private").is_displayed()
    assert not watcher.find_elements(By.CSS_SELECTOR, "#seats li.known-mate, #seats li.known-evil")
    assert watcher.execute_script("return window.__pwned") is None
    assert_accessible(watcher)
    browsers[1].find_element(By.ID, "replay-link").click()
    browsers[1].switch_to.window(browsers[1].window_handles[-1])
    time.sleep(1.0)
    assert "Avalon replay" in browsers[1].title
    assert browsers[1].execute_script("return window.__pwned") is None
    assert_accessible(browsers[1])
    browsers[1].save_screenshot(str(tmp_path / "replay.png"))
    assert (game / RESULT).is_file()
    thread.join(timeout=0)  # it closes after its linger; the daemon thread ends with the tests


def test_a_person_plays_the_lady_of_the_lake_in_chromium(browsers, tmp_path):
    """The Lady's request drawn from its legal answers (a button per player) and clicked; what the Lady showed
    appears in the holder's log alone."""
    from selenium.webdriver.common.by import By

    from avalon_agents.engine import AvalonEngine

    rules, seed = make_rules("official", 7, lady_of_the_lake=True), 3
    holder = next(e.holder for e in AvalonEngine(rules, seed).reset() if e.type == "lady_given")
    game = TableGame(rules=rules, kinds=tuple("human" if s == holder else "rulebot" for s in rules.seats),
                     seed=seed, setup=AgentSetup(), decision_timeout=120)
    addresses, _ = serve(game, tmp_path / "table")
    seat_url, watch_url = addresses[holder], addresses["watch"]
    driver = browsers[0]
    driver.get(seat_url)
    deadline = time.monotonic() + 600
    while driver.find_element(By.TAG_NAME, "body").get_attribute("data-over") != "yes":
        assert time.monotonic() < deadline, "the game did not end in 10 minutes"
        if act(driver, []):
            time.sleep(0.3)
        time.sleep(0.1)
    log = "\n".join(li.text for li in driver.find_elements(By.CSS_SELECTOR, "#log li"))
    assert "You examined Player" in log and "with the Lady of the Lake: Player" in log, log[-2000:]
    shown = [e for e in jsonl(tmp_path / "table" / "game-00001" / EVENTS) if e["type"] == "lady_result"
             and e["holder"] == holder]
    known = driver.find_element(By.ID, "known").text  # what the Lady showed, on the panel and on the seat
    assert shown and all(f"The Lady of the Lake showed you: Player {e['target']} is {e['loyalty']}." in known
                         for e in shown), known
    for e in shown:
        seat = driver.find_element(By.CSS_SELECTOR, f"#seats li[data-seat='{e['target']}']")
        assert f"{e['loyalty']} (Lady)" in seat.text and f"known-{e['loyalty']}" in seat.get_attribute("class")
    assert console_errors(driver) == []
    driver.get(watch_url)
    time.sleep(1.5)
    public = "\n".join(li.text for li in driver.find_elements(By.CSS_SELECTOR, "#log li"))
    assert "Lady of the Lake" in public and "You examined" not in public and "the Lady shows" not in public


def test_the_page_says_what_the_host_answered_when_time_ran_out(browsers, tmp_path):
    """A person who does not answer in time reads, in a box of its own and in the log, what the host answered for
    them (the state's timeout_notice)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    rules = make_rules("official", 5)
    game = TableGame(rules=rules, kinds=("human",) + ("rulebot",) * 4, seed=1, setup=AgentSetup(),
                     decision_timeout=0.5)
    addresses, _ = serve(game, tmp_path / "table", linger=1.0)
    driver = browsers[0]
    driver.get(addresses[1])

    def shown(words: str):
        return lambda d: (d.find_element(By.ID, "notice").is_displayed() and words in (
            text := d.find_element(By.ID, "notice-text").text) and text)

    notice = WebDriverWait(driver, 60).until(shown("No answer in 0.5 s, so the host answered for you: "))
    notes = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#log li.note")]
    assert notice in notes
    assert_accessible(driver)


def test_a_finished_games_replay_opens_without_a_token(browsers, tmp_path):
    """A browser that was never given a token: the replay's address while the game is played is a JSON 404 (no
    replay of a live game); once the game is over the seat's page links the replay with no token in the link, and
    that browser opens it there, its roles hidden until asked."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    rules = make_rules("official", 5)
    game = TableGame(rules=rules, kinds=("human",) + ("rulebot",) * 4, seed=1, setup=AgentSetup(),
                     decision_timeout=0.3)  # the person never answers: the fallback plays the seat
    addresses, _ = serve(game, tmp_path / "table")
    seat, stranger = browsers
    seat.get(addresses[1])
    WebDriverWait(seat, 60).until(lambda d: d.find_element(By.ID, "notice").is_displayed())  # the game is on
    base = addresses[1].split("/seat/")[0]
    stranger.get(f"{base}/replay/1")
    refused = json.loads(stranger.find_element(By.TAG_NAME, "body").text)
    assert seat.find_element(By.TAG_NAME, "body").get_attribute("data-over") != "yes"  # still on when asked
    assert refused == {"error": "no replay of game 1: a game's replay is written when the game is over"}
    loads = {e["message"].split(" - ")[0] for e in console_errors(stranger)}  # the 404 (and Chrome's favicon's)
    assert f"{base}/replay/1" in loads and loads <= {f"{base}/replay/1", f"{base}/favicon.ico"}, loads
    WebDriverWait(seat, 120).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-over") == "yes")
    link = seat.find_element(By.ID, "replay-link").get_attribute("href")
    assert link == f"{base}/replay/1" and "token" not in link
    stranger.get(link)
    WebDriverWait(stranger, 10).until(lambda d: d.title == "Avalon replay: game-00001")
    assert stranger.find_elements(By.CSS_SELECTOR, "#timeline > *")
    assert stranger.execute_script("return document.body.classList.contains('roles-shown')") is False
    assert stranger.find_element(By.ID, "roles-button").text == "Show roles"
    assert_accessible(stranger)
    assert console_errors(stranger) == []


def told(desk, spectator, rules, *events) -> None:
    """Show `events` to a seat's desk as its HumanAgent would (the role card as the system prompt, every other
    event narrated), and the public ones to the spectator."""
    from avalon_agents.core.events import RoleAssigned
    from avalon_agents.narrate import announce, system_prompt

    for e in events:
        if isinstance(e, RoleAssigned):
            desk.show(system_prompt(rules, e.seat, e.role), e)
        else:
            desk.show(announce(e, rules), e)
    spectator.delivered([e for e in events if e.visible_to == "all"])


def test_the_page_draws_percivals_view_from_the_state_alone(browsers, tmp_path):
    """A seat's page drawn from a state made by hand (no game): Percival's two candidates on the seats, in the
    panel and in the team picker; a secret vote's counts with the seat's own vote; a speech with quotes and a
    right-to-left mark shown exactly as typed; the spectator, from the same events, shows no private mark."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from avalon_agents.core.actions import ActionRequest, RequestKind
    from avalon_agents.core.events import LeaderChosen, SpeechGiven, TeamProposed, VoteCast, VotesRevealed
    from avalon_agents.core.types import Role
    from avalon_agents.narrate import announce

    rules = make_rules("official", 7).model_copy(update={"votes_public": False})
    said = 'I am "good" \u202eand Player 4 is not'
    private = (3,)
    desk, table = hand_table(
        rules, 3, Role.PERCIVAL, (1, 5), "merlin_or_morgana",
        LeaderChosen(seq=3, quest=1, attempt=1, leader=2, team_size=2, fails_required=1, final=False),
        TeamProposed(seq=4, quest=1, attempt=1, leader=2, team=(2, 3)),
        SpeechGiven(seq=5, quest=1, attempt=1, seat=2, text=said),
        VoteCast(seq=6, quest=1, attempt=1, visible_to=private, seat=3, approve=True),
        VotesRevealed(seq=7, quest=1, attempt=1, team=(2, 3), approvals=(), rejections=(), approve_count=4,
                      reject_count=3, approved=False),
        LeaderChosen(seq=8, quest=1, attempt=2, leader=3, team_size=2, fails_required=1, final=False))
    request = ActionRequest(seat=3, kind=RequestKind.PROPOSE, quest=1, attempt=2, options=tuple(rules.seats),
                            team_size=2, leader=3)
    with served_table(table) as (base, loop):
        asyncio.run_coroutine_threadsafe(desk.ask(request, "Propose a team of 2."), loop)
        driver = browsers[0]
        driver.get(base + table.seat_path(3))
        WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#choices input.pick"))
        assert driver.title == "▶ Your turn · Avalon table: Player 3"
        assert driver.find_element(By.ID, "role").text == "You are Percival (good)."
        assert driver.find_element(By.ID, "known").text == (
            "Merlin and Morgana, one each (you cannot tell which): Player 1, Player 5.")
        marked = driver.find_elements(By.CSS_SELECTOR, "#seats li.known-candidate")
        assert [(li.get_attribute("data-seat"), "Merlin?" in li.text) for li in marked] == [("1", True), ("5", True)]
        picker = [label.text for label in driver.find_elements(By.CSS_SELECTOR, "#choices label")]
        assert picker[0] == "Player 1 (Merlin or Morgana)" and picker[2] == "Player 3 (you)" and picker[3] == "Player 4"
        history = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#history li")]
        assert history[0].endswith("Rejected 4–3 (a secret vote; you approved)") and "Player 3 leads" in history[1]
        assert "Votes are secret." in driver.find_element(By.ID, "setup").text
        assert [b.text for b in driver.find_elements(By.CSS_SELECTOR, "#log bdi.said")] == [said]
        assert announce(SpeechGiven(seq=5, quest=1, attempt=1, seat=2, text=said), rules) not in (
            driver.find_element(By.ID, "log").text)  # not the narration's JSON-quoted words
        assert_accessible(driver)
        driver.get(base + table.watch_path())
        WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#history li"))
        assert not driver.find_elements(By.CSS_SELECTOR, "#seats li[class*='known-']")
        assert not driver.find_element(By.ID, "private").is_displayed()
        assert "you approved" not in driver.find_element(By.ID, "history").text
        assert console_errors(driver) == []


# at 390 px: the page no wider than the window; the header's box; each quest's label against the next quest's;
# the private panel's top
PHONE_LAYOUT = """const box = (n) => n.getBoundingClientRect();
  const quests = [...document.querySelectorAll('#quests li')].map((li) => {
    const parts = [...li.querySelectorAll('span')].map(box);
    return {left: box(li).left, top: box(li).top, right: Math.max(...parts.map((r) => r.right)),
            widest: Math.max(...parts.map((r) => r.width))};
  });
  return {wide: document.documentElement.scrollWidth - innerWidth, quests,
          header: [box(document.querySelector('header')).top, box(document.querySelector('header')).bottom],
          private: box(document.getElementById('private')).top, board: box(document.getElementById('board')).top,
          height: innerHeight};"""


def test_a_ten_player_table_at_phone_width(browsers, tmp_path):
    """A seat of a 10-player game at 390 px (a state made by hand): the page no wider than the screen, no quest's
    label ("team 4", "2 fails") reaching the next quest's, the private panel above the table and one tap away from
    the header, which stays at the top as the page scrolls; the speech box takes the request's max_chars; the
    spectator shows a speech's right-to-left mark obeyed inside its <bdi>, never as a literal \\u202e."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from avalon_agents.core.actions import ActionRequest, RequestKind
    from avalon_agents.core.events import LeaderChosen, SpeechGiven, TeamProposed
    from avalon_agents.core.types import Role
    from avalon_agents.decisions.kinds import MAX_SPEECH

    rules = make_rules("official", 10, lady_of_the_lake=True)
    assert rules.fails_required[3] == 2  # quest 4 takes two fails: its label has two lines
    said = "Trust me \u202eon this\u202c, and \u2067Player 7\u2069 too"
    desk, table = hand_table(
        rules, 4, Role.MERLIN, (2, 6, 9), "evil",
        LeaderChosen(seq=3, quest=1, attempt=1, leader=2, team_size=3, fails_required=1, final=False),
        TeamProposed(seq=4, quest=1, attempt=1, leader=2, team=(2, 4, 7)),
        *[SpeechGiven(seq=5 + n, quest=1, attempt=1, seat=n, text=said if n == 1 else f"I am Player {n}.")
          for n in range(1, 11)])
    request = ActionRequest(seat=4, kind=RequestKind.SPEAK, quest=1, attempt=1, team=(2, 4, 7), leader=2)
    with served_table(table) as (base, loop):
        asyncio.run_coroutine_threadsafe(desk.ask(request, "Speak about the team."), loop)
        driver = browsers[0]
        driver.set_window_size(390, 844)
        try:
            driver.get(base + table.seat_path(4))
            WebDriverWait(driver, 10).until(lambda d: d.find_element(By.ID, "speak").is_displayed())
            time.sleep(0.3)
            shape = driver.execute_script(PHONE_LAYOUT)
            assert shape["wide"] <= 0, shape
            quests = shape["quests"]
            assert len(quests) == 5
            for here, there in zip(quests, quests[1:]):
                if here["top"] == there["top"]:  # side by side: this label ends before the next quest begins
                    assert here["right"] <= there["left"], quests
            assert all(q["widest"] < 60 for q in quests), quests  # short lines, never "team 4, 2 fails" on one
            assert shape["private"] < shape["board"], shape  # what the seat knows, before the round table
            assert driver.find_element(By.ID, "speech").get_attribute("maxlength") == str(MAX_SPEECH)
            assert driver.find_element(By.ID, "speech-max").text == str(MAX_SPEECH)
            driver.execute_script("window.scrollTo(0, document.body.scrollHeight)")
            time.sleep(0.2)
            top, bottom = driver.execute_script(PHONE_LAYOUT)["header"]
            assert top == 0 and bottom < 200  # the header stayed
            driver.find_element(By.ID, "to-private").click()  # one tap to what the seat knows
            time.sleep(0.3)
            after = driver.execute_script(PHONE_LAYOUT)
            assert after["header"][1] <= after["private"] < after["height"] / 2, after
            assert "Evil, as the night showed you" in driver.find_element(By.ID, "known").text
            assert_accessible(driver)
            driver.get(base + table.watch_path())
            WebDriverWait(driver, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#log bdi.said")) == 10)
            said_shown = driver.execute_script(
                "return [...document.querySelectorAll('#log bdi.said')].map((b) => b.textContent)")
            assert said_shown[0] == said and "\\u202e" not in driver.find_element(By.ID, "log").text
            assert driver.execute_script(PHONE_LAYOUT)["wide"] <= 0
            assert not driver.find_element(By.ID, "to-private").is_displayed()  # no private panel to go to
            assert_accessible(driver)
            assert console_errors(driver) == []
        finally:
            driver.set_window_size(1200, 1000)


def hand_table(rules, seat: int, role, seen: tuple[int, ...], known_as: str, *events):
    """A table of one person's seat dealt `role`, shown its night information (`seen`, `known_as`) and then
    `events`, the spectator the public ones, started: (its desk, the table)."""
    from avalon_agents.core.events import NightInfoRevealed, RoleAssigned
    from avalon_agents.table.desk import WebDesk
    from avalon_agents.table.server import Table
    from avalon_agents.table.watch import Spectator

    desk, spectator = WebDesk(seat, rules), Spectator(rules)
    table = Table({seat: desk}, spectator)
    table.started = True
    told(desk, spectator, rules,
         RoleAssigned(seq=1, quest=1, attempt=1, visible_to=(seat,), seat=seat, role=role),
         NightInfoRevealed(seq=2, quest=1, attempt=1, visible_to=(seat,), seat=seat, seats=seen, known_as=known_as),
         *events)
    return desk, table


@contextlib.contextmanager
def served_table(table):
    """`table`'s site on a free loopback port, its loop in a thread of its own: (its base URL, the loop)."""
    from aiohttp import web

    loop = asyncio.new_event_loop()
    runner = web.AppRunner(table.app())
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    threading.Thread(target=loop.run_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", loop
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
