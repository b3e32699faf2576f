"""Every bad request to the web table is answered `{"error": "..."}` as JSON with its 4xx status, never a 500 and
never plain text: each route and each way a request can be bad, over real HTTP on loopback, and bodies generated
by hypothesis (never 500, always JSON, and the game goes on)."""

from __future__ import annotations

import pytest

import asyncio
import gzip
import json

import aiohttp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from avalon_agents.records.run_dir import EVENTS
from avalon_agents.web.serving import MAX_BODY
from tests.table.helpers import answer_for, open_table

ANSWER = "/api/seat/1/answer"
JSON = {"Content-Type": "application/json"}
GZIP = {**JSON, "Content-Encoding": "gzip"}
STATUSES = {200, 400, 403, 404, 405, 409, 413, 415, 422, 429}
"""Every status the table answers a request with (docs/table.md)."""


async def _chunks(size: int):
    """A body sent in chunks, without a Content-Length."""
    for _ in range(size // 4096 + 1):
        yield b"x" * 4096


def cases(token: str, watch: str, open_id: str) -> dict[str, tuple[str, str, dict, object, dict, int, str]]:
    """name -> (method, path, query, body, headers, status, words of the error)."""
    own = {"token": token}
    return {
        "15,000 nested brackets": ("POST", ANSWER, own, b"[" * 15000, JSON, 400, "nests too deeply"),
        "nested answer": ("POST", ANSWER, own, b'{"answer": ' + b"[" * 8000 + b"]" * 8000 + b"}", JSON, 400,
                          "nests too deeply"),
        "a 1 MB body": ("POST", ANSWER, own, b"x" * 1_000_000, JSON, 413, f"at most {MAX_BODY} bytes"),
        "a large body in chunks": ("POST", ANSWER, own, "chunks", JSON, 413, f"at most {MAX_BODY} bytes"),
        "a broken gzip body": ("POST", ANSWER, own, b"abcd", GZIP, 415, "no Content-Encoding"),
        "a gzip bomb": ("POST", ANSWER, own, gzip.compress(b'{"answer": "' + b"a" * 10_000_000 + b'"}'), GZIP, 415,
                        "no Content-Encoding"),
        "a brotli body": ("POST", ANSWER, own, b"abcde", {**JSON, "Content-Encoding": "br"}, 415,
                          "no Content-Encoding (not 'br')"),
        "a brotli body without its token": ("POST", ANSWER, {"token": "x" * 24}, b"abcde",
                                            {**JSON, "Content-Encoding": "br"}, 403, "token"),
        "another site's Host": ("GET", "/api/seat/1", own, None, {"Host": "attacker.example"}, 403,
                                "this machine's names only"),
        "another site's page": ("GET", "/api/seat/1", own, None, {"Origin": "http://attacker.example"}, 403,
                                "another site"),
        "not JSON": ("POST", ANSWER, own, b"approve", JSON, 400, "not JSON"),
        "not UTF-8": ("POST", ANSWER, own, b'{"answer": "\xff"}', JSON, 400, "not UTF-8"),
        "a key twice": ("POST", ANSWER, own, b'{"answer": "approve", "answer": "reject"}', JSON, 400, "given twice"),
        "a number of 5,000 digits": ("POST", ANSWER, own, b"9" * 5000, JSON, 400, "not JSON"),
        "NaN": ("POST", ANSWER, own, b'{"answer": NaN}', JSON, 400, '{"answer"'),
        "an array": ("POST", ANSWER, own, b'["approve"]', JSON, 400, '{"answer"'),
        "another key": ("POST", ANSWER, own, b'{"vote": "approve"}', JSON, 400, '{"answer"'),
        "an extra key": ("POST", ANSWER, own, b'{"answer": "approve", "x": 1}', JSON, 400, '{"answer"'),
        "a number as the answer": ("POST", ANSWER, own, b'{"answer": 1}', JSON, 400, '{"answer"'),
        "a number as the id": ("POST", ANSWER, own, b'{"answer": "approve", "id": 1}', JSON, 400, '"id"'),
        "a lone surrogate": ("POST", ANSWER, own, b'{"answer": "I am \\ud800 good"}', JSON, 400, "lone surrogate"),
        "text/plain": ("POST", ANSWER, own, b'{"answer": "approve"}', {"Content-Type": "text/plain"}, 415,
                       "Content-Type: application/json"),
        "a form": ("POST", ANSWER, own, b"answer=approve", {"Content-Type": "application/x-www-form-urlencoded"},
                   415, "Content-Type: application/json"),
        "no content type": ("POST", ANSWER, own, b'{"answer": "approve"}', {}, 415, "Content-Type"),
        "an unknown seat": ("GET", "/api/seat/9", own, None, {}, 403, "token"),
        "a seat that is no number": ("GET", "/api/seat/one", own, None, {}, 403, "token"),
        "another seat's address": ("GET", "/api/seat/2", own, None, {}, 403, "token"),
        "a wrong token": ("POST", ANSWER, {"token": "x" * 24}, b'{"answer": "approve"}', JSON, 403, "token"),
        "a token of other characters": ("GET", "/api/seat/1", {"token": "é" * 24}, None, {}, 403, "token"),
        "no token": ("GET", "/api/watch", {}, None, {}, 403, "token"),
        "a seat's token to watch": ("GET", "/watch", own, None, {}, 403, "token"),
        "a stale request id": ("POST", ANSWER, own, {"answer": "approve", "id": "1-999"}, JSON, 409,
                               f"no longer open (the open one is {open_id})"),
        "a long answer": ("POST", ANSWER, own, {"answer": "x" * 1001, "id": open_id}, JSON, 422, "at most"),
        "GET on the answer": ("GET", ANSWER, own, None, {}, 405, "use POST"),
        "POST on the state": ("POST", "/api/seat/1", own, {"answer": "approve"}, JSON, 405, "use GET or HEAD"),
        "DELETE on the page": ("DELETE", "/seat/1", own, None, {}, 405, "DELETE is not taken"),
        "an unknown path under /api/": ("GET", "/api/seats", own, None, {}, 404, "no such address: /api/seats"),
        "an unknown path": ("GET", "/favicon.ico", {}, None, {}, 404, "no such address"),
        "the replay before the end": ("GET", "/replay/1", {}, None, {}, 404, "when the game is over"),
        "the replay of a game not played": ("GET", "/replay/7", {"token": watch}, None, {}, 404,
                                            "no replay of game 7"),
        "a replay not named by number": ("GET", "/replay/x", {}, None, {}, 404, "no such address"),
    }


async def _send(session: aiohttp.ClientSession, base: str, method: str, path: str, query: dict, body, headers: dict):
    data = _chunks(MAX_BODY * 4) if body == "chunks" else json.dumps(body) if isinstance(body, dict) else body
    async with session.request(method, base + path, params=query, data=data, headers=headers) as r:
        return r.status, r.headers.get("Content-Type", ""), dict(r.headers), await r.text()


async def _open_request(session: aiohttp.ClientSession, base: str, token: str) -> dict:
    while True:
        async with session.get(f"{base}/api/seat/1", params={"token": token}) as r:
            request = (await r.json())["request"]
        if request is not None:
            return request
        await asyncio.sleep(0.01)


def test_every_bad_request_is_a_json_error_with_its_status(tmp_path):
    async def main():
        task, table, base = await open_table(tmp_path, humans=(1, 2), decision_timeout=None)
        # a connection each: the server closes one whose body it could not read
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session:
            request = await _open_request(session, base, table.tokens[1])
            got = {name: (case, await _send(session, base, *case[:5]))
                   for name, case in cases(table.tokens[1], table.watch_token, request["id"]).items()}
            still_open = await _open_request(session, base, table.tokens[1])
        task.cancel()
        return request, got, still_open

    request, got, still_open = asyncio.run(main())
    for name, ((method, *_, status, words), (got_status, content_type, headers, text)) in got.items():
        assert (got_status, content_type) == (status, "application/json; charset=utf-8"), (name, got_status, text)
        body = json.loads(text)
        assert list(body) == ["error"] and words in body["error"], (name, body)
        assert headers["Cache-Control"] == "no-store", name
    assert got["GET on the answer"][1][2]["Allow"] == "POST"
    assert still_open["id"] == request["id"]  # no bad request answered it


def test_an_empty_speech_is_a_speech(tmp_path):
    """A person may say nothing, as a program may and as the fallback does: the same rule at every seat."""
    async def main():
        task, table, base = await open_table(tmp_path, humans=(1,), decision_timeout=None)
        async with aiohttp.ClientSession() as session:
            while (request := await _open_request(session, base, table.tokens[1]))["kind"] != "speak":
                await _send(session, base, "POST", ANSWER, {"token": table.tokens[1]},
                            {"answer": answer_for(request)}, JSON)
            taken = await _send(session, base, "POST", ANSWER, {"token": table.tokens[1]},
                                {"answer": "   ", "id": request["id"]}, JSON)
            again = await _send(session, base, "POST", ANSWER, {"token": table.tokens[1]},
                                {"answer": "and another thing", "id": request["id"]}, JSON)
        task.cancel()
        return taken, again

    taken, again = asyncio.run(main())
    assert (taken[0], json.loads(taken[3])) == (200, {"ok": True})
    assert again[0] == 409 and "open" in json.loads(again[3])["error"]  # none open, or the next one
    events = [json.loads(line) for line in (tmp_path / "game-00001" / EVENTS).read_text().splitlines()]
    assert [e["text"] for e in events if e["type"] == "speech" and e["seat"] == 1] == [""]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
    | st.sampled_from(["approve", "reject", "Player 2", "aprove", "success", "\ud800"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["answer", "id", "x"]) | st.text(
        max_size=5), inner, max_size=3), max_leaves=12)
BODIES = st.one_of(
    st.binary(max_size=300),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    st.builds(lambda answer, rid: json.dumps({"answer": answer, **({"id": rid} if rid else {})}).encode(),
              st.text(max_size=1200) | st.sampled_from(["approve", "", "Player 2, Player 3", "\u2028"]),
              st.sampled_from([None, "1-1", "1-2", "x"])),
    st.builds(lambda depth, open_, close: (open_ * depth + close * depth).encode(), st.integers(500, 15000),
              st.sampled_from(["[", '{"a":', '{"answer":[']), st.sampled_from(["]", "}", ""])),
    st.integers(MAX_BODY - 5, MAX_BODY + 5).map(lambda n: b'{"answer": "' + b"a" * n + b'"}'),
)
CONTENT_TYPES = st.sampled_from(["application/json"] * 6 + [None, "application/json; charset=latin-1", "text/plain",
                                                          "multipart/form-data; boundary=x"])
PATHS = st.sampled_from([ANSWER] * 8 + ["/api/seat/1", "/api/answer"])


def test_no_body_is_answered_with_a_500_or_plain_text(tmp_path):
    loop = asyncio.new_event_loop()
    task, table, base = loop.run_until_complete(open_table(tmp_path, humans=(1,), decision_timeout=None))
    session = loop.run_until_complete(_session())
    seen: dict[int, int] = {}

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(body=BODIES, content_type=CONTENT_TYPES, path=PATHS)
    @example(body=b'{"answer": "no such answer"}', content_type="application/json", path=ANSWER)  # a 422 every run
    def post(body: bytes, content_type: str | None, path: str) -> None:
        headers = {"Content-Type": content_type} if content_type else {}
        status, got_type, _, text = loop.run_until_complete(
            _send(session, base, "POST", path, {"token": table.tokens[1]}, body, headers))
        assert status in STATUSES and got_type == "application/json; charset=utf-8", (status, text[:200])
        answer = json.loads(text)
        assert answer == {"ok": True} if status == 200 else (list(answer) == ["error"] and answer["error"])
        seen[status] = seen.get(status, 0) + 1

    try:
        post()
        assert not task.done() or task.exception() is None  # no answer taken broke the game
    finally:
        task.cancel()
        loop.run_until_complete(session.close())
        loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
        loop.close()
    assert {400, 413, 415, 422} <= set(seen), seen


async def _session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True))


def test_a_bug_is_a_json_500_that_tells_nothing_of_the_code(tmp_path, monkeypatch):
    """The safety net under every route: what a handler raises is answered as JSON, its traceback only logged."""
    from avalon_agents.table.desk import WebDesk

    def broken(self):
        raise KeyError("secret detail")

    async def main():
        task, table, base = await open_table(tmp_path, humans=(1,), decision_timeout=None)
        monkeypatch.setattr(WebDesk, "state", broken)
        async with aiohttp.ClientSession() as session:
            got = await _send(session, base, "GET", "/api/seat/1", {"token": table.tokens[1]}, None, {})
        task.cancel()
        return got

    status, content_type, headers, text = asyncio.run(main())
    assert (status, content_type, headers["Cache-Control"]) == (500, "application/json; charset=utf-8", "no-store")
    assert list(json.loads(text)) == ["error"] and "secret" not in text and "Traceback" not in text


def test_a_client_that_leaves_mid_body_is_one_log_line(tmp_path):
    """A browser closed while it sends an answer: one line in the diagnostic log (no traceback), and the table goes
    on answering."""
    import socket
    import struct

    from loguru import logger

    said: list[str] = []
    logger.enable("avalon_agents")  # as the CLI does
    sink = logger.add(lambda m: said.append(str(m)), level="DEBUG")

    async def main():
        task, table, base = await open_table(tmp_path, humans=(1,), decision_timeout=None)
        port = int(base.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"POST {ANSWER}?token={table.tokens[1]} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"answer\"".encode())
        await writer.drain()
        await asyncio.sleep(0.2)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset, as a crash sends
        writer.close()
        async with aiohttp.ClientSession() as session:
            for _ in range(100):  # until the table has logged the reset
                if any("left" in line for line in said):
                    break
                await asyncio.sleep(0.05)
            request = await _open_request(session, base, table.tokens[1])
        task.cancel()
        return request

    try:
        request = asyncio.run(main())
    finally:
        logger.remove(sink)
        logger.disable("avalon_agents")
    left = [line for line in said if "left" in line]
    assert len(left) == 1 and "POST /api/seat/1/answer" in left[0] and left[0].count("\n") == 1, said
    assert not any("Traceback" in line or "failed" in line for line in said), said
    assert request["kind"]


@pytest.mark.slow  # seconds of child processes or a flood: the fast suite keeps its minute
def test_a_flooding_client_waits_its_turn_and_the_other_seats_do_not(tmp_path):
    """One seat's client asking hundreds of times at once: over its share it waits, then is answered 429 (JSON,
    Retry-After); the other seat's page is answered 200 all along."""
    async def main():
        task, table, base = await open_table(tmp_path, humans=(1, 2), decision_timeout=None)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            async def flood():
                return await _send(session, base, "GET", "/api/seat/1", {"token": table.tokens[1]}, None, {})

            async def other():
                got = []
                for _ in range(10):
                    got.append(await _send(session, base, "GET", "/api/seat/2", {"token": table.tokens[2]}, None,
                                           {}))
                return got

            flooded, others = await asyncio.gather(asyncio.gather(*(flood() for _ in range(400))), other())
        task.cancel()
        return flooded, others

    flooded, others = asyncio.run(main())
    statuses = [status for status, *_ in flooded]
    refused = [(headers, json.loads(text)) for status, _, headers, text in flooded if status == 429]
    assert set(statuses) == {200, 429} and statuses.count(200) >= 100, statuses
    assert refused[0][0]["Retry-After"] == "1" and "too many requests" in refused[0][1]["error"]
    assert [status for status, *_ in others] == [200] * 10


def test_pace_gives_each_client_its_share():
    """The token bucket itself, on a clock of its own: a burst at once, then one turn per 1/rate seconds, a client's
    wait over `wait` refused without taking a turn, another client untouched."""
    from avalon_agents.web.serving import Pace

    pace = Pace(rate=10, burst=3, wait=0.5)
    a, b = ("127.0.0.1", "seat-1"), ("127.0.0.1", "seat-2")
    assert [pace.take(a, 0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert [round(pace.take(a, 0.0), 3) for _ in range(5)] == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert pace.take(a, 0.0) > 0.5 and round(pace.take(a, 0.0), 3) == 0.6  # refused: no turn taken
    assert pace.take(b, 0.0) == 0.0
    assert pace.take(a, 10.0) == 0.0  # refilled


def test_another_site_is_refused_on_every_route_of_the_table(tmp_path):
    """DNS rebinding and other sites' pages: every route, with the right token, refuses a Host that is not this
    machine's name and an Origin of another site; this machine's names and the table's own origin are answered."""
    async def main():
        task, table, base = await open_table(tmp_path, humans=(1,), decision_timeout=None)
        port = base.rsplit(":", 1)[1]
        seat, watch = {"token": table.tokens[1]}, {"token": table.watch_token}
        routes = [("GET", "/seat/1", seat, None), ("GET", "/api/seat/1", seat, None),
                  ("POST", ANSWER, seat, {"answer": "approve"}), ("GET", "/watch", watch, None),
                  ("GET", "/api/watch", watch, None), ("GET", "/replay/1", {}, None), ("GET", "/nope", {}, None)]
        async with aiohttp.ClientSession() as session:
            refused = [await _send(session, base, method, path, query, body, {**JSON, **headers})
                       for method, path, query, body in routes
                       for headers in ({"Host": "attacker.example"}, {"Host": f"attacker.example:{port}"},
                                       {"Origin": "http://attacker.example"}, {"Origin": f"http://localhost:{port}"})]
            own = [await _send(session, base, "GET", "/api/seat/1", seat, None, headers)
                   for headers in ({"Host": f"localhost:{port}"}, {"Host": f"[::1]:{port}"},
                                   {"Origin": f"http://127.0.0.1:{port}"})]
        task.cancel()
        return refused, own

    refused, own = asyncio.run(main())
    for status, kind, _, text in refused:
        assert (status, kind) == (403, "application/json; charset=utf-8"), (status, text)
        assert "names only" in json.loads(text)["error"] or "another site" in json.loads(text)["error"]
    assert [status for status, *_ in own] == [200, 200, 200]
