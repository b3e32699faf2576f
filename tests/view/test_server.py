"""avalon view's server over real HTTP on loopback: each page and its JSON, a token off loopback, every refusal
JSON, a hostile name served as text, a run's page live as a run grows."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp.test_utils import TestClient, TestServer

from avalon_agents.records.run_record import write_run_record
from avalon_agents.view.pages import View
from avalon_agents.view.server import ViewServer, loopback
from avalon_agents.view.site import Site
from tests.view.runs import experiment


def served(view: View, token: str | None = None):
    """A TestClient of the viewer's app (a real aiohttp server on a free loopback port)."""
    return TestClient(TestServer(ViewServer(view, token).app()))


async def get(client, path: str):
    answer = await client.get(path)
    body = await answer.text()
    return answer.status, answer.headers.get("Content-Type", ""), body


@pytest.mark.slow  # runs of every kind, the run page's metrics and figures
def test_each_page_and_its_json(tmp_path):
    run = experiment(tmp_path, name="abl", games=2)
    view = View([tmp_path])

    async def go():
        async with served(view) as client:
            status, kind, body = await get(client, "/")
            assert status == 200 and kind.startswith("text/html") and "Content-Security-Policy" in (
                await client.get("/")).headers
            status, _, body = await get(client, "/api/runs")
            runs = json.loads(body)["runs"]
            assert status == 200 and [r["id"] for r in runs] == ["abl"] and runs[0]["link"] == "/runs/abl"
            status, _, body = await get(client, "/api/runs/abl")
            page = json.loads(body)
            assert status == 200 and page["page"] == "run" and page["run"]["games_finished"] == 2
            assert {r["side"] for r in page["headline"]} == {"good", "evil"} and page["figures"]
            assert page["figures"][0]["src"].startswith("data:image/svg+xml;base64,")
            game = page["games"][0]
            assert game["link"] == f"/runs/abl/games/{game['game']}"
            status, kind, body = await get(client, game["link"])
            assert status == 200 and "Avalon replay" in body and "/runs/abl" in body
            status, _, body = await get(client, f"/api/runs/abl/games/{game['game']}")
            assert json.loads(body)["result"]["winner"] in ("good", "evil")
            for path in ("/runs/nope", "/api/runs/nope", "/api/runs/abl/games/game-99999", "/runs/abl/whatever",
                         "/no/such/page", "/api/runs/abl/games/../../x"):
                status, kind, body = await get(client, path)
                assert status == 404 and kind.startswith("application/json") and "error" in json.loads(body), path

    asyncio.run(go())


@pytest.mark.slow  # runs of every kind, the run page's metrics and figures
def test_a_token_off_loopback(tmp_path):
    experiment(tmp_path, name="t", games=1)
    token = "s3cret"
    view = View([tmp_path], Site(token=token))

    async def go():
        async with served(view, token) as client:
            for path in ("/", "/api/runs", "/runs/t", "/api/runs/t"):
                status, _, body = await get(client, path)
                assert status == 403 and "token" in json.loads(body)["error"], path
                status, _, body = await get(client, path + "?token=wrong")
                assert status == 403, path
                status, _, body = await get(client, path + "?token=s3cret")
                assert status == 200, path
            runs = json.loads((await get(client, "/api/runs?token=s3cret"))[2])
            assert runs["runs"][0]["link"] == "/runs/t?token=s3cret" and runs["api"].endswith("token=s3cret")

    asyncio.run(go())
    assert loopback("127.0.0.1") and loopback("::1") and loopback("localhost") and not loopback("0.0.0.0")


def test_a_hostile_name_is_data_not_markup(tmp_path):
    run = experiment(tmp_path, name="x", games=1)
    write_run_record(run, "run", '</script><script>alert(1)</script>', plugins=[])  # the name the page shows
    view = View([tmp_path])

    async def go():
        async with served(view) as client:
            _, _, body = await get(client, "/")
            assert "</script><script>alert(1)" not in body and "\\u003c/script>" in body

    asyncio.run(go())


@pytest.mark.slow  # runs of every kind, the run page's metrics and figures
def test_the_api_follows_a_growing_run(tmp_path):
    experiment(tmp_path, name="g", games=3, max_games=1)
    view = View([tmp_path])

    async def go():
        async with served(view) as client:
            first = json.loads((await get(client, "/api/runs/g"))[2])
            await asyncio.to_thread(experiment, tmp_path, name="g", games=3)
            then = json.loads((await get(client, "/api/runs/g"))[2])
            assert (first["run"]["games_finished"], then["run"]["games_finished"]) == (1, 3)
            assert sum(r["games"] for r in then["headline"] if r["side"] == "good") == 3

    asyncio.run(go())


@pytest.mark.parametrize("bad", ["/runs/", "/api/runs/", "/runs/r/games/"])
def test_refusals_are_json(tmp_path, bad):
    experiment(tmp_path, name="r", games=1)

    async def go():
        async with served(View([tmp_path])) as client:
            status, kind, body = await get(client, bad)
            assert status in (404, 422) and kind.startswith("application/json") and json.loads(body)["error"]

    asyncio.run(go())


@pytest.mark.slow  # a process of its own
def test_the_command_prints_its_address_as_json(tmp_path):
    import subprocess

    from tests.helpers import AVALON

    experiment(tmp_path, name="j", games=1)
    process = subprocess.Popen([AVALON, "view", str(tmp_path), "--port", "0", "--json"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        told = json.loads(process.stdout.readline())
        assert told["url"].startswith("http://127.0.0.1:") and told["token"] is None
        import urllib.request

        runs = json.load(urllib.request.urlopen(told["url"] + "api/runs", timeout=30))["runs"]
        assert [r["id"] for r in runs] == ["j"]
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_user_mistakes_are_one_line(tmp_path):
    from tests.cli.test_bad_inputs import one_line_error
    from tests.helpers import avalon

    one_line_error(avalon("view", str(tmp_path / "none")), "folders")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    one_line_error(avalon("view", str(tmp_path), "--export", str(tmp_path / "full")), "not empty")
    one_line_error(avalon("view", str(tmp_path), "--compare", "a,b"), "--compare goes with --export")
