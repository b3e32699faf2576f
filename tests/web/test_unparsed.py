"""A request aiohttp cannot read as HTTP (garbage, a bad request line or header, TLS on the plain port, a line over
8 KB) is answered like every other refusal of a local site: a 400 JSON `{"error": ...}` with the site's headers,
never aiohttp's plain text; sent over a raw socket to `avalon view` and the web table (`avalon serve`) on loopback.
web.serving reaches into aiohttp for it (no supported hook): the first test fails loudly if aiohttp changes the
shape it relies on."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import subprocess
import sys

import pytest
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from avalon_agents.web import serving
from tests.table.helpers import open_table

GARBAGE = {
    "not HTTP": (b"GARBAGE\r\n\r\n", "Invalid method"),
    "a bad header": (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n", "Invalid header"),
    "TLS on the plain port": (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", "HTTPS traffic"),
    "a request line over 8 KB": (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "8190 bytes"),
    "a bad version": (b"GET / HTTP/9.x\r\nHost: 127.0.0.1\r\n\r\n", "version"),
}


async def sent(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """What the site at `port` answers `raw` with: status, headers (lower-case names), body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 30)  # the site closes the connection after such an answer
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


async def garbage_then(port: int, raw: bytes, path: str) -> tuple[tuple, tuple]:
    """What the site at `port` answers `raw`, then a GET of `path` on a new connection."""
    garbage = await sent(port, raw)
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    return garbage, await sent(port, request.encode())


def assert_json_refusal(answer: tuple[int, dict[str, str], bytes], words: str) -> None:
    status, headers, body = answer
    assert status == 400 and headers["content-type"] == "application/json; charset=utf-8", answer
    assert headers["cache-control"] == "no-store" and headers["x-content-type-options"] == "nosniff", answer
    error = json.loads(body)["error"]
    assert list(json.loads(body)) == ["error"] and error.startswith("the request cannot be read as HTTP: ")
    assert words in error and "\n" not in error and "^" not in error, error


def test_aiohttp_still_has_the_shape_the_json_refusals_rely_on():
    """If this fails, aiohttp changed what web.serving.runner reaches into: its Server's protocol factory building a
    RequestHandler with the Server's loop and keyword arguments, and RequestHandler.handle_error's parameters. The
    sites then answer unparsed requests as plain text again (and the other tests here fail)."""
    assert list(inspect.signature(RequestHandler.handle_error).parameters) == [
        "self", "request", "status", "exc", "message"]

    async def main():
        runner = serving.runner(web.Application())
        await runner.setup()
        try:
            server = runner.server
            return type(server), type(server())
        finally:
            await runner.cleanup()

    server, handler = asyncio.run(main())
    assert server is serving._JsonServer and handler is serving._JsonRefusals
    assert serving.hooked(web.Server(lambda request: None, loop=asyncio.new_event_loop()))
    assert not serving.hooked(object())


@pytest.mark.parametrize("name", GARBAGE)
def test_the_web_table_answers_garbage_as_json(tmp_path, name):
    """The table as `avalon serve` runs it (serve_table): garbage answered 400 JSON, and the seat's page after it
    is answered as before."""
    raw, words = GARBAGE[name]

    async def main():
        task, table, base = await open_table(tmp_path, humans=(1,), lobby=True)
        port = int(base.rsplit(":", 1)[1])
        try:
            return await garbage_then(port, raw, f"/api/seat/1?token={table.tokens[1]}")
        finally:
            task.cancel()

    garbage, after = asyncio.run(main())
    assert_json_refusal(garbage, words)
    assert after[0] == 200 and json.loads(after[2])["seat"] == 1


@pytest.mark.parametrize("name", GARBAGE)
def test_avalon_view_answers_garbage_as_json(tmp_path, capsys, name):
    """`avalon view`'s own serving (cli.view._serve, in this process): garbage answered 400 JSON, the index's data
    after it as before."""
    from avalon_agents.cli.view import _serve

    raw, words = GARBAGE[name]

    async def main():
        task = asyncio.create_task(_serve([tmp_path], "127.0.0.1", 0, True, 1 << 20))
        for _ in range(600):
            told = capsys.readouterr().out
            if told:
                break
            await asyncio.sleep(0.05)
        port = int(re.search(r":(\d+)/", json.loads(told)["url"]).group(1))
        try:
            return await garbage_then(port, raw, "/api/runs")
        finally:
            task.cancel()

    garbage, after = asyncio.run(main())
    assert_json_refusal(garbage, words)
    assert after[0] == 200 and json.loads(after[2])["runs"] == []


@pytest.mark.slow  # two processes of their own: seconds of imports
def test_the_real_commands_answer_garbage_as_json(tmp_path):
    """`avalon view` and `avalon serve` as people start them: every kind of garbage answered 400 JSON."""
    view = subprocess.Popen([sys.executable, "-m", "avalon_agents.cli", "view", str(tmp_path), "--port", "0",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    serve = subprocess.Popen([sys.executable, "-m", "avalon_agents.cli", "serve", "--human", "2", "--port", "0",
                              "--out", str(tmp_path / "table")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        ports = [int(re.search(r":(\d+)/", json.loads(view.stdout.readline())["url"]).group(1)),
                 int(re.search(r"127\.0\.0\.1:(\d+)/seat/2", serve.stdout.readline()).group(1))]
        for port in ports:
            for raw, words in GARBAGE.values():
                assert_json_refusal(asyncio.run(sent(port, raw)), words)
    finally:
        for process in (view, serve):
            process.terminate()
            process.wait(timeout=30)
