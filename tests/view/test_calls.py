"""The Calls page of `avalon view` over a scripted run: every LLM call counted, each filter narrowing, paging, dollars,
re-asks and fallbacks, each call's link landing on its entry of the game's replay, the cache, the export's calls,
and bad parameters refused as JSON 400s through the real server."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from avalon_agents.prices import Price, Prices
from avalon_agents.records.run_dir import RESULT, TRACE, read_trace
from avalon_agents.records.trace import LLMCall
from avalon_agents.records.usage import usage
from avalon_agents.view import calls as call_pages
from avalon_agents.view.pages import View
from avalon_agents.view.server import ViewServer
from avalon_agents.view.site import Site

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(2)> '
PUZZLED = "I cannot decide."


def _respond():
    """The scripted model, except that every vote is answered with no vote in it (asked again twice, then the
    fallback decides) and every free-text answer starts with markup."""
    from avalon_agents.llm import ScriptedChatModel
    from avalon_agents.llm.scripted import _schema_of

    model = ScriptedChatModel()

    def respond(messages, kwargs):
        schema = _schema_of(kwargs)
        if schema is not None and "approve" in json.dumps(schema):
            return PUZZLED
        answer = model._default(messages, kwargs)
        return answer if schema is not None else HOSTILE + answer

    return ScriptedChatModel(respond=respond)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run of two games (LLM seats on the scripted model above, rule bots), written as games are."""
    from avalon_agents.core import make_rules
    from avalon_agents.host.play import play_one
    from avalon_agents.llm import ModelSettings
    from tests.helpers import scripted_setup

    root = tmp_path_factory.mktemp("calls") / "runs"
    setup = scripted_setup(_respond(), settings=ModelSettings(spec="scripted"), extractor=None)
    for n, seed in ((1, 3), (2, 4)):
        asyncio.run(play_one(make_rules("official", 5), ["llm", "rulebot", "llm", "rulebot", "llm"], seed,
                             out=root / "r" / f"game-{n:05d}", setups=setup))
    return root


def records(run: Path) -> dict[str, list[LLMCall]]:
    return {g: [r for r in read_trace(run / "r" / g) if isinstance(r, LLMCall)] for g in ("game-00001", "game-00002")}


def every(view: View, **query) -> list[dict]:
    """Every call the query keeps, through the pages."""
    found, offset = [], 0
    while True:
        page = view.calls("r", {**query, "offset": str(offset), "limit": "1000"})
        found += page["calls"]
        offset += 1000
        if offset >= page["total"]:
            return found


def test_every_call_of_the_run_is_counted_with_its_tokens(run):
    view = View([run])
    page = view.calls("r", {})
    games = [read_trace(run / "r" / g) for g in ("game-00001", "game-00002")]
    counted = usage(r for g in games for r in g)
    assert page["page"] == "calls" and page["run_total"] == page["total"] == counted["llm_calls"] > 50
    shown = min(100, page["total"])
    assert page["limit"] == 100 and [c["n"] for c in page["calls"]] == list(range(1, shown + 1))
    assert page["sums"]["input_tokens"] == counted["input_tokens"]
    assert page["sums"]["output_tokens"] == counted["output_tokens"]
    assert page["links"]["run"] == "/runs/r" and page["api"] == "/api/runs/r/calls"
    first = records(run)["game-00001"][0]
    call = page["calls"][0]
    assert (call["seat"], call["step"], call["module"], call["model"]) == (first.seat, first.step,
                                                                           first.purpose.label, "scripted")
    assert [page["texts"][m["text"]] for m in call["messages"]] == [m.content for m in first.messages]
    assert call["reply"] == first.reply
    assert page["options"]["seats"] == [1, 3, 5] and page["options"]["games"] == ["game-00001", "game-00002"]


def test_each_filter_narrows_to_the_calls_it_names(run):
    view = View([run])
    calls = [c for g in records(run).values() for c in g]
    checks = {
        "seat": ("3", lambda c: c.seat == 3),
        "step": ("8", lambda c: c.step == 8),
        "module": ("vanilla", lambda c: c.purpose.label == "vanilla"),
        "model": ("scripted", lambda c: True),
        "game": ("game-00002", None),
        "stage": ("agent", lambda c: c.stage == "agent"),
        "flag": ("failed", lambda c: c.outcome == "failed"),
    }
    for key, (value, keep) in checks.items():
        found = every(view, **{key: value})
        want = (len(records(run)["game-00002"]) if key == "game" else sum(map(keep, calls)))
        assert len(found) == view.calls("r", {key: value})["total"] == want, key
        if key == "game":
            assert {c["game"] for c in found} == {"game-00002"}
    assert 0 < len(every(view, seat="3", step="8")) < len(every(view, seat="3"))
    assert view.calls("r", {"model": "openai:gpt-4o"})["total"] == 0


def test_text_search_reads_prompts_and_replies_in_any_case(run):
    view = View([run])
    calls = [c for g in records(run).values() for c in g]

    def holds(call: LLMCall, q: str) -> bool:
        return any(q.lower() in t.lower() for t in [m.content for m in call.messages] + [call.reply or ""])

    for q in (PUZZLED.upper(), "onerror=alert(2)", 'answer with json', '"', "Player 5", "nothing like this"):
        assert view.calls("r", {"q": q})["total"] == sum(holds(c, q) for c in calls), q
    votes = view.calls("r", {"q": PUZZLED, "limit": "1000"})
    assert votes["total"] > 0 and all(c["reply"] == PUZZLED for c in votes["calls"])
    assert view.calls("r", {"q": PUZZLED, "seat": "5"})["total"] == sum(
        c.reply == PUZZLED and c.seat == 5 for c in calls)


def test_reasks_and_fallbacks_come_from_the_decisions_the_calls_served(run):
    view = View([run])
    votes = every(view, q=PUZZLED)
    assert votes and all(c["decision"] == "vote" and c["method"] == "fallback" and c["fallback"] for c in votes)
    assert all(c["answers"] == 3 and c["valid"] is False for c in votes)
    assert sum(c["reask"] for c in votes) == 2 * len(votes) // 3  # each vote: its first answer, then two re-asks
    assert view.calls("r", {"flag": "reask"})["total"] == 2 * len(votes) // 3
    assert view.calls("r", {"flag": "fallback"})["total"] == len(votes)
    speeches = [c for c in every(view) if c["request"] == "speak"]
    assert speeches and all(c["decision"] == "speak" and not c["reask"] and not c["fallback"] for c in speeches)
    proposals = [c for c in every(view) if c["request"] == "propose"]
    assert proposals and all(c["method"] == "json" and c["valid"] and c["answers"] == 1 for c in proposals)


def test_paging_covers_every_call_once_in_order(run):
    view = View([run])
    total = view.calls("r", {})["total"]
    seen = []
    for offset in range(0, total, 7):
        page = view.calls("r", {"offset": str(offset), "limit": "7"})
        assert page["total"] == total and page["offset"] == offset and len(page["calls"]) == min(7, total - offset)
        seen += [c["n"] for c in page["calls"]]
    assert seen == list(range(1, total + 1))
    assert view.calls("r", {"offset": str(total + 5)})["calls"] == []
    slow = view.calls("r", {"sort": "tokens", "limit": "1000"})["calls"]
    sizes = [c["input_tokens"] + c["output_tokens"] for c in slow]
    assert sizes == sorted(sizes, reverse=True) and len(slow) == total


def test_dollars_follow_each_calls_model_and_tokens(run, tmp_path):
    copy = tmp_path / "runs"
    shutil.copytree(run, copy)
    trace = copy / "r" / "game-00001" / TRACE
    trace.write_text(trace.read_text().replace('"spec":"scripted"', '"spec":"openai:gpt-4o-mini"'))
    view = View([copy], prices=Prices({"gpt-4o-mini": Price(input=2.0, output=8.0, cached_input=1.0)}))
    paid = every(view, game="game-00001")
    assert paid and all(c["model"] == "openai:gpt-4o-mini" for c in paid)
    for c in paid:
        assert c["usd"] == pytest.approx((c["input_tokens"] * 2.0 + c["output_tokens"] * 8.0) / 1e6)
    page = view.calls("r", {"game": "game-00001"})
    assert page["sums"]["usd"] == pytest.approx(sum(c["usd"] for c in paid)) and page["sums"]["unpriced"] == 0
    free = every(view, game="game-00002")
    assert all(c["usd"] == 0 for c in free)  # the scripted model runs here: free
    dear = view.calls("r", {"sort": "usd", "limit": "3"})["calls"]
    assert [c["usd"] for c in dear] == sorted((c["usd"] for c in paid), reverse=True)[:3]
    unknown = View([copy], prices=Prices({}))
    page = unknown.calls("r", {"game": "game-00001"})
    assert page["calls"][0]["usd"] is None and page["sums"]["unpriced"] == len(paid)
    assert page["options"]["unpriced_models"] == ["openai:gpt-4o-mini"]


def test_each_link_lands_on_the_calls_entry_in_its_game(run):
    view = View([run])
    items = {g: view.game_data("r", g)["items"] for g in ("game-00001", "game-00002")}
    for call in every(view):
        m = re.fullmatch(r"/runs/r/games/(game-0000[12])#e-(\d+)", call["link"])
        assert m, call["link"]
        entry = items[m.group(1)][int(m.group(2)) - 1]
        assert entry["type"] == "llm_call" and (entry["seat"], entry["step"], entry["name"], entry["input_tokens"],
                                                entry["reply"]) == (call["seat"], call["step"], call["name"],
                                                                    call["input_tokens"], call["reply"])
    page = view.game_page("r", "game-00001")
    assert "function selectFromHash" in page and 'href: `#${entryId(i)}`' in page  # the page goes to #e-N


def test_the_index_is_read_again_only_where_a_file_changed(run, tmp_path, monkeypatch):
    copy = tmp_path / "runs"
    shutil.copytree(run, copy)
    view = View([copy])
    read = []
    real = call_pages.read_calls
    monkeypatch.setattr(call_pages, "read_calls", lambda path, *a: read.append(path.parent.name) or real(path, *a))
    total = view.calls("r", {})["total"]
    assert sorted(read) == ["game-00001", "game-00002"]
    view.calls("r", {"seat": "1"})
    assert len(read) == 2  # nothing changed: nothing read
    shutil.copytree(copy / "r" / "game-00002", copy / "r" / "game-00003")  # a game finished since
    assert view.calls("r", {})["total"] == total + len(records(run)["game-00002"])
    assert sorted(read) == ["game-00001", "game-00002", "game-00003"]
    trace = copy / "r" / "game-00003" / TRACE
    (copy / "r" / "game-00003" / RESULT).unlink()  # a game still playing: its trace is looked at each time
    assert view.calls("r", {})["total"] == total + len(records(run)["game-00002"])
    with open(trace, "a") as f:
        f.write(next(line for line in trace.read_text().splitlines(keepends=True) if '"type":"llm_call"' in line))
    assert view.calls("r", {})["total"] == total + len(records(run)["game-00002"]) + 1
    assert sorted(read) == ["game-00001", "game-00002", "game-00003", "game-00003"]


def test_the_judges_calls_are_counted_and_linked_to_their_game(run, tmp_path):
    from avalon_agents.records.trace import to_line

    copy = tmp_path / "runs"
    shutil.copytree(run, copy)

    def judge(name: str, reply: str, **about) -> str:
        return to_line(LLMCall(stage="judge", name=name, prompt_id="judge/x", prompt_hash="h", reply=reply,
                               settings={"spec": "scripted"}, input_tokens=40, output_tokens=3, about=about)) + "\n"

    (copy / "r" / "game-00001" / "judge.jsonl").write_text(judge("goal", "yes"))
    (copy / "r" / "analysis" / "judgments").mkdir(parents=True)
    (copy / "r" / "analysis" / "judgments" / "calls.jsonl").write_text(
        judge("camouflage", "no", game="game-00002", speech_seq=9) + judge("camouflage", "maybe"))
    view = View([copy])
    games = view.calls("r", {"stage": "agent"})["total"]
    judged = every(view, stage="judge")
    assert [(c["module"], c["reply"], c["game"], c["link"]) for c in judged] == [
        ("goal", "yes", "game-00001", "/runs/r/games/game-00001"),
        ("camouflage", "no", "game-00002", "/runs/r/games/game-00002"),
        ("camouflage", "maybe", None, None)]
    page = view.calls("r", {})
    assert page["total"] == games + 3 and "judge" in page["options"]["stages"]
    assert page["run_judge_calls"] == 3 and page["run_total"] == games + 3  # the page says its total holds them
    assert view.calls("r", {"game": "game-00002", "stage": "judge"})["total"] == 1


def test_an_export_holds_the_runs_first_calls_linked_relatively(run):
    view = View([run], Site(export=True))
    page = view.calls("r", {})
    assert page["api"] is None and page["held"] and page["limit"] == call_pages.EXPORT_LIMIT
    assert len(page["calls"]) == min(page["total"], call_pages.EXPORT_LIMIT)
    assert re.fullmatch(r"games/game-00001\.html#e-\d+", page["calls"][0]["link"])
    assert page["links"] == {"index": "../../index.html", "run": "index.html"}


def served(view: View):
    return TestClient(TestServer(ViewServer(view).app()))


def test_bad_parameters_are_json_400s_naming_them(run):
    view = View([run])
    bad = {"limit=abc": "limit", "offset=-1": "offset", "limit=0": "limit", "limit=5000": "limit",
           "seat=three": "seat", "step=1.5": "step", "flag=odd": "flag", "stage=boss": "stage", "sort=name": "sort",
           "sate=1": "sate"}

    async def go():
        async with served(view) as client:
            for query, name in bad.items():
                for path in ("/api/runs/r/calls", "/runs/r/calls"):
                    answer = await client.get(f"{path}?{query}")
                    body = await answer.json()
                    assert answer.status == 400 and body["error"].startswith(f"{name}: "), (path, query, body)
            answer = await client.get("/api/runs/r/calls?seat=3&limit=2&q=cannot+decide")
            page = await answer.json()
            assert answer.status == 200 and len(page["calls"]) == 2 and {c["seat"] for c in page["calls"]} == {3}
            assert page["api"] == "/api/runs/r/calls?q=cannot+decide&seat=3&limit=2"
            html = await (await client.get("/runs/r/calls?q=onerror")).text()
            assert "<script>alert" not in html and "onerror=alert" in html  # in the page's JSON, escaped

    asyncio.run(go())


class Served:
    """The viewer's app on a free loopback port in a thread of its own (selenium blocks), until `close`."""

    def __init__(self, view: View) -> None:
        import queue
        import threading

        from aiohttp import web

        self.loop = asyncio.new_event_loop()
        ready: queue.Queue = queue.Queue()

        async def start() -> None:
            self.runner = web.AppRunner(ViewServer(view).app())
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            ready.put(site._server.sockets[0].getsockname()[1])

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(start())
            self.loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        self.base = f"http://127.0.0.1:{ready.get(timeout=30)}"

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.mark.slow  # headless Chromium
def test_the_page_in_chromium_live_and_exported(run, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from avalon_agents.view.site import page_html
    from tests.browser import assert_accessible, chromium, console_errors

    shown = "#calls tbody tr"
    driver = chromium(1300, 1000)
    served = Served(View([run]))
    try:
        from selenium.common.exceptions import StaleElementReferenceException

        # a live page may draw itself again between finding an element and reading it: look again
        wait = WebDriverWait(driver, 20, ignored_exceptions=[StaleElementReferenceException])
        total = View([run]).calls("r", {"seat": "3"})["total"]
        driver.get(served.base + "/runs/r/calls")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, shown))
        Select(driver.find_element(By.ID, "calls-seat")).select_by_value("3")  # asks the server again
        wait.until(lambda d: d.current_url.endswith("?seat=3")
                   and f"of {total}" in d.find_element(By.CSS_SELECTOR, ".pager span").text)
        rows = driver.find_elements(By.CSS_SELECTOR, shown)
        assert rows and all(r.find_elements(By.TAG_NAME, "td")[2].text == "3" for r in rows)
        seconds = wait.until(lambda d: d.execute_script(  # in one read: a live page may draw itself again
            "return [...document.querySelectorAll(arguments[0])].map(r => r.innerText)",
            f"{shown} td[data-label=seconds]"))
        assert seconds and all(re.fullmatch(r"0\.\d{3}|[1-9]\d?\.\d{2}|\d{1,3}(,\d{3})*", t) for t in seconds), seconds
        assert_accessible(driver)
        link = driver.find_element(By.CSS_SELECTOR, f"{shown} td a")
        anchor = link.get_attribute("href").rsplit("#", 1)[1]
        link.click()  # the call's entry in its game's replay, selected
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".item.current"))
        current = driver.find_element(By.CSS_SELECTOR, ".item.current")
        assert current.get_attribute("id") == anchor and "Player 3 · LLM call" in current.text
        assert not console_errors(driver)

        exported = tmp_path / "calls.html"  # an export's page, opened from disk: it filters what it holds
        page = View([run], Site(export=True)).calls("r", {})
        exported.write_text(page_html(page["title"], page))
        driver.get(exported.as_uri())
        assert f"first {len(page['calls'])} of its {page['run_total']} calls" in driver.find_element(By.ID, "app").text
        box = driver.find_element(By.ID, "calls-q")
        box.send_keys("onerror")
        hostile = [c for c in page["calls"] if "onerror" in c["reply"] + "".join(
            page["texts"][m["text"]] for m in c["messages"])]
        wait.until(lambda d: f"of {len(hostile)}" in d.find_element(By.CSS_SELECTOR, ".pager span").text)
        driver.find_element(By.CSS_SELECTOR, f"{shown} details summary").click()
        texts = driver.execute_script("return [...document.querySelectorAll(arguments[0])].map(p => p.textContent)",
                                      f"{shown} details pre")  # every shown call's texts, opened or not
        assert any("<img src=x onerror=alert(2)>" in t for t in texts)  # the markup shown as text, not run
        assert not driver.find_elements(By.CSS_SELECTOR, "#app img, #app script")
        assert not console_errors(driver)
    finally:
        driver.quit()
        served.close()
