"""avalon view reads only what it was given, over real HTTP on loopback: a path out of the viewed folders (absolute,
`..`, percent-encoded), a run or a file linking out, a file over the size cap, a corrupt trace and a newer layout
are each refused (404 or 422, JSON, naming the file) and named on the run's row; a request for another host or from
another site's page is refused on every route; one run's slow page holds no other page."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from avalon_agents.records.run_dir import META, TRACE
from avalon_agents.view.pages import View
from avalon_agents.view.server import ViewServer
from tests.view.runs import ROOT

RECORDED = ROOT / "tests/data/replay/run"
GAME = "main/series-1/game-00001"
CAP = 2 * 2**20
"""The size cap the tests' viewer is given (the recorded run's files are far smaller)."""
SECRET = "secret-of-another-folder"
"""A word only the run outside the viewed folders holds."""


def recorded(folder: Path, name: str) -> Path:
    """A copy of the recorded run (an LLM run: traces with prompts) as `folder/name`."""
    shutil.copytree(RECORDED, folder / name, ignore=shutil.ignore_patterns(".tables", ".lock"))
    return folder / name


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> tuple[Path, Path]:
    return hostile_folders(tmp_path_factory.mktemp("hostile"))


def hostile_folders(base: Path) -> tuple[Path, Path]:
    """The viewed folder (a good run and one of each hostile kind) and a folder beside it, not viewed."""
    viewed, other = base / "viewed", base / "other"
    viewed.mkdir()
    other.mkdir()
    outside = recorded(other, "x")
    trace = outside / GAME / TRACE
    trace.write_text(trace.read_text().replace("Player", SECRET, 1))
    recorded(viewed, "ok")
    os.symlink(outside, viewed / "escape")  # a run linking out
    linked = recorded(viewed, "linked") / GAME / TRACE
    linked.unlink()
    os.symlink(outside / GAME / TRACE, linked)  # a file linking out
    os.symlink(outside / GAME, recorded(viewed, "linkedgame") / "main/series-1/game-00002")  # a game linking out
    big = recorded(viewed, "big") / GAME / TRACE
    with open(big, "r+b") as f:  # sparse: over the cap, no disk spent
        f.truncate(CAP + 1)
    (recorded(viewed, "corrupt") / GAME / TRACE).write_text("root:x:0:0:root:/root:/bin/bash\n")
    meta = recorded(viewed, "newer") / GAME / META
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "layout": 99}))
    return viewed, other


def served(view: View) -> TestClient:
    return TestClient(TestServer(ViewServer(view).app()))


async def get(client: TestClient, path: str, **headers: str) -> tuple[int, str, str]:
    answer = await client.get(path, headers=headers)
    return answer.status, answer.headers.get("Content-Type", ""), await answer.text()


def test_each_hostile_run_is_named_on_its_row_and_refused_by_its_pages(folders):
    viewed, other = folders
    view = View([viewed], max_bytes=CAP)
    expected = {"linked": (404, "unreadable", f"{GAME}/trace.jsonl is a link out of the viewed folders"),
                "linkedgame": (404, "unreadable", "main/series-1/game-00002 is a link out of the viewed folders"),
                "big": (422, "unreadable", f"{GAME}/trace.jsonl is 2.0 MB, over the viewer's cap of 2.0 MB"),
                "corrupt": (422, "unreadable", f"{GAME}/trace.jsonl is corrupt: not JSON lines (it starts with b'r')"),
                "newer": (422, "newer layout", "holds a game of layout 99")}

    async def go():
        async with served(view) as client:
            index = json.loads((await get(client, "/api/runs"))[2])
            pages = {}
            for run in expected:
                for page in (f"/runs/{run}", f"/api/runs/{run}", f"/api/runs/{run}/calls", f"/runs/{run}/calls",
                             f"/api/runs/{run}/games/{GAME}", f"/runs/{run}/games/{GAME}"):
                    pages[page] = await get(client, page)
            good = await get(client, f"/api/runs/ok/games/{GAME}")
            return index, pages, good

    index, pages, good = asyncio.run(go())
    rows = {row["id"]: row for row in index["runs"]}
    assert set(rows) == {"ok", *expected}  # the run linking out is not listed
    assert rows["ok"]["state"] == "done" and rows["ok"]["unreadable"] == []
    for run, (status, state, words) in expected.items():
        assert rows[run]["state"] == state and words in rows[run]["unreadable"][0], rows[run]
    for page, (status, kind, body) in pages.items():
        want, _, words = expected[page.split("/runs/")[1].split("/")[0]]
        assert (status, kind) == (want, "application/json; charset=utf-8"), (page, status, body[:200])
        assert list(json.loads(body)) == ["error"] and words in json.loads(body)["error"], (page, body)
        assert SECRET not in body and "root:" not in body.replace("with b'r'", "")
    assert good[0] == 200 and json.loads(good[2])["game"] == GAME


@pytest.mark.parametrize("path", [
    "/api/runs/ok/games/{other}", "/runs/ok/games/{other}", "/api/runs/ok/games/..%2F..%2Fother%2Fx%2F" + GAME,
    "/api/runs/ok/games/%2E%2E/%2E%2E/other/x/" + GAME, "/api/runs/ok/games/main/series-1/..%2F..%2F..%2Fescape",
    "/api/runs/ok/games/../../escape/" + GAME, "/api/runs/escape", "/runs/escape/games/" + GAME,
    "/api/runs/%2Fetc", "/api/runs/ok%2F..%2F..%2Fother%2Fx", "/api/runs/ok/calls/..%2F..%2Fescape"])
def test_a_path_out_of_the_viewed_folders_is_a_404_that_reads_nothing(folders, path):
    viewed, other = folders
    path = path.format(other=str(other / "x" / GAME).replace("/", "%2F"))

    async def go():
        async with served(View([viewed], max_bytes=CAP)) as client:
            return await get(client, path)

    status, kind, body = asyncio.run(go())
    assert (status, kind) == (404, "application/json; charset=utf-8"), (status, body[:300])
    assert list(json.loads(body)) == ["error"] and SECRET not in body


@pytest.mark.parametrize("headers", [{"Host": "attacker.example"}, {"Host": "attacker.example:8100"},
                                     {"Host": "127.0.0.1.attacker.example"}, {"Origin": "http://attacker.example"},
                                     {"Origin": "null"}])
def test_another_site_is_refused_on_every_route(folders, headers):
    """DNS rebinding: a page whose name resolves to 127.0.0.1 sends its own Host; another site's script its
    Origin. Every route refuses them before reading anything; this machine's own names are answered."""
    viewed, _ = folders

    async def go():
        async with served(View([viewed], max_bytes=CAP)) as client:
            port = client.server.port
            refused = [await get(client, path, **headers) for path in (
                "/", "/api/runs", "/runs/ok", "/api/runs/ok/calls", f"/api/runs/ok/games/{GAME}", "/compare",
                "/no/such/page")]
            own = [await get(client, "/api/runs", Host=name) for name in (
                f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost")]
            same = await get(client, "/api/runs", Origin=f"http://127.0.0.1:{port}")
            return refused, own, same

    refused, own, same = asyncio.run(go())
    for status, kind, body in refused:
        assert (status, kind) == (403, "application/json; charset=utf-8"), (status, body[:200])
        assert "ok" not in json.loads(body)["error"] and ("names only" in body or "another site" in body)
    assert [status for status, *_ in own] == [200] * 4 and same[0] == 200


def test_another_host_is_answered_when_bound_off_loopback(folders):
    """Bound to another address (people open it by its name, with the token), any Host is taken; another site's
    Origin still is not."""
    viewed, _ = folders

    async def go():
        server = ViewServer(View([viewed], max_bytes=CAP), token="t", bound="0.0.0.0")
        async with TestClient(TestServer(server.app())) as client:
            return (await get(client, "/api/runs?token=t", Host="avalon.lab.example:8100"),
                    await get(client, "/api/runs?token=t", Origin="http://attacker.example"))

    named, other = asyncio.run(go())
    assert named[0] == 200 and other[0] == 403


def test_one_runs_slow_page_holds_no_other_page(folders, monkeypatch):
    """The slow run's page held until released: the index, another run's page and its calls are answered
    meanwhile (one lock for every page held them all until the slow one was done)."""
    viewed, _ = folders
    view = View([viewed], max_bytes=CAP)
    release, entered = threading.Event(), threading.Event()
    page = view.runs.page

    def slow(run: Path):
        if run.name == "big":
            entered.set()
            release.wait()  # until the other pages answered (set however the test ends): not a clock
        return page(run)

    monkeypatch.setattr(view.runs, "page", slow)
    monkeypatch.setattr(view.catalog, "problem", lambda run: None)  # "big" read as a run that is only slow

    async def go():
        async with served(view) as client:
            held = asyncio.ensure_future(get(client, "/api/runs/big"))
            try:
                assert await asyncio.to_thread(entered.wait, 60)
                others = await asyncio.wait_for(asyncio.gather(
                    get(client, "/api/runs"), get(client, "/api/runs/ok"), get(client, "/api/runs/ok/calls")), 60)
                still_held = not held.done()
            finally:
                release.set()
            return others, still_held, await held

    others, still_held, held = asyncio.run(go())
    assert [status for status, *_ in others] == [200, 200, 200] and still_held
    assert held[0] in (200, 422)


def test_a_corrupt_line_inside_a_trace_is_named_by_the_calls_page(tmp_path):
    """A trace whose first and last lines are records and one in between is not: the calls page (which reads every
    line) names the file and the line's byte instead of counting it as no call; from then on the run's row says it,
    and its other pages refuse with the same line."""
    run = recorded(tmp_path, "mid")
    trace = run / GAME / TRACE
    lines = trace.read_bytes().splitlines(keepends=True)
    at = sum(len(line) for line in lines[:2])
    trace.write_bytes(b"".join(lines[:2]) + b"root:x:0:0\n" + b"".join(lines[2:]))

    async def go():
        async with served(View([tmp_path], max_bytes=CAP)) as client:
            before = json.loads((await get(client, "/api/runs"))[2])["runs"][0]
            pages = [await get(client, path) for path in (
                "/api/runs/mid/calls", "/runs/mid/calls", "/api/runs/mid", f"/api/runs/mid/games/{GAME}")]
            return before, pages, json.loads((await get(client, "/api/runs"))[2])["runs"][0]

    before, pages, after = asyncio.run(go())
    said = f"{GAME}/trace.jsonl is corrupt: the line at byte {at} is not a JSON record"
    for status, kind, body in pages:
        assert (status, kind) == (422, "application/json; charset=utf-8"), body[:300]
        assert json.loads(body)["error"] == said
    assert (before["state"], before["unreadable"]) == ("done", [])  # two bytes cannot tell
    assert (after["state"], after["unreadable"]) == ("unreadable", [said])


def test_the_export_leaves_an_unreadable_run_to_its_index_row(folders, tmp_path):
    from avalon_agents.view.export import export

    viewed, _ = folders
    said: list[str] = []
    written = export([viewed], tmp_path / "site", progress=said.append, max_bytes=CAP)
    runs = {p.relative_to(tmp_path / "site").parts[1] for p in written if p.parts[-3:-2] != ("site",)
            and "runs" in p.relative_to(tmp_path / "site").parts[:1]}
    assert runs == {"ok"}
    assert any(line.startswith("corrupt: not exported (") and "trace.jsonl is corrupt" in line for line in said)
    index = (tmp_path / "site" / "index.html").read_text()
    assert "is a link out of the viewed folders" in index and SECRET not in index


@pytest.mark.slow  # a process of its own
def test_the_command_caps_files_and_answers_its_own_names_only(folders):
    """`avalon view --max-file-mb 1`, the real process: the 2 MB trace's run is listed unreadable naming the cap,
    and a request naming another host is refused."""
    import subprocess
    import urllib.error
    import urllib.request

    from tests.helpers import AVALON

    viewed, _ = folders
    process = subprocess.Popen([AVALON, "view", str(viewed), "--port", "0", "--json", "--max-file-mb", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = json.loads(process.stdout.readline())["url"]
        rows = {r["id"]: r for r in json.load(urllib.request.urlopen(url + "api/runs", timeout=60))["runs"]}
        big = rows["big"]
        assert big["state"] == "unreadable" and "over the viewer's cap of 1.0 MB" in big["unreadable"][0]
        assert rows["ok"]["state"] == "done"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url + "api/runs", headers={"Host": "attacker.example"}),
                                   timeout=60)
        assert refused.value.code == 403 and "names only" in json.loads(refused.value.read())["error"]
    finally:
        process.terminate()
        process.wait(timeout=10)
