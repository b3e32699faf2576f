"""Programs as seats over HTTP (agents.web_seat, `external` with `url`), against real aiohttp servers on loopback:
a well-behaved server plays whole games; each POST carries the seat's messages since its last request, exactly
what a program over pipes is told; a server that is down, dies, hangs, fails or answers illegally costs only
recorded fallbacks and the game finishes; a 429 or 503 with a Retry-After is waited out, no fault."""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
import sys
import time

import pytest
from aiohttp import web

from avalon_agents import narrate
from avalon_agents.agents.registry import check_options
from avalon_agents.agents.web_seat import retry_after
from avalon_agents.core import make_rules
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.records.trace import SeatFault
from tests.helpers import seat_faults

SEAT = 2


def decide(m):
    """A legal answer to request message `m`, the same every time (so a game replays exactly)."""
    legal, kind = m["legal"], m["kind"]
    if kind == "propose":
        return {"team": legal["players"][:legal["team_size"]]}
    if kind == "vote":
        return {"vote": "approve"}
    if kind == "quest":
        return {"card": legal["options"][-1]}
    if kind == "assassinate":
        return {"merlin": legal["players"][0]}
    return {"text": "I trust Player 1."}


class Bot:
    """A server that plays the seat with `decide`, keeping every body it got (and how many POSTs came)."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.posts = 0

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        self.posts += 1
        body = await request.json()
        last = body["messages"][-1]
        reply = await self.reply(request, last)
        if reply.status == 200:
            self.bodies.append(body)
        return reply

    async def reply(self, request: web.Request, last: dict) -> web.StreamResponse:
        if last["type"] != "request":
            return web.Response(text="thanks")
        return web.json_response({"id": last["id"], "action": decide(last)})


async def serve(handler) -> tuple[web.AppRunner, str]:
    async def handle(request: web.Request) -> web.StreamResponse:
        return await handler(request)

    app = web.Application()
    app.router.add_post("/seat", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}/seat"


def play(handler=None, url: str | None = None, seed: int = 0, timeout: float = 30.0, seat: int = SEAT):
    rules = make_rules("official", 6)
    kinds = ["external" if s == seat else "rulebot" for s in rules.seats]

    async def main():
        runner, served = await serve(handler or Bot())
        try:
            setups = [AgentSetup(options={"url": url or served, "timeout": timeout}) if s == seat else AgentSetup()
                      for s in rules.seats]
            return await play_one(rules, kinds, seed, setups=setups)
        finally:
            await runner.cleanup()

    return asyncio.run(main())


def faults(host) -> list[SeatFault]:
    return [r for r in host.tracer.records if isinstance(r, SeatFault)]


def test_a_server_plays_games_without_a_fault():
    for seed, seat in ((0, 2), (1, 5)):
        bot = Bot()
        host = play(bot, seed=seed, seat=seat)
        assert host.engine.is_over and faults(host) == []
        assert host.meta["seats"][seat] == "external"
        assert host.agents[seat].transport.session.closed  # one session per seat per game, closed at its end
        assert bot.bodies[-1]["messages"][-1]["type"] == "end"  # the end is POSTed too
        assert {b["seat"] for b in bot.bodies} == {seat}


def test_each_post_carries_what_the_seat_may_know_since_its_last_request_as_over_pipes(tmp_path):
    """The same game (same seed, same answers) over pipes and over HTTP: the messages POSTed, in order, are
    exactly the lines the program over pipes read; each body ends with the request (the last one: the end), holds
    no other request, and the start comes once, first."""
    log = tmp_path / "seen.jsonl"
    program = tmp_path / "recorder.py"
    program.write_text(f"import json, sys\n{inspect.getsource(decide)}\nlog = open({str(log)!r}, 'w')\n"
                       "for line in sys.stdin:\n    log.write(line); log.flush()\n    m = json.loads(line)\n"
                       "    if m['type'] == 'request':\n"
                       "        print(json.dumps({'id': m['id'], 'action': decide(m)}), flush=True)\n")
    rules = make_rules("official", 6)
    for seed, seat in ((0, 1), (3, 4)):
        kinds = ["external" if s == seat else "rulebot" for s in rules.seats]
        setups = [AgentSetup(options={"command": [sys.executable, str(program)]}) if s == seat else AgentSetup()
                  for s in rules.seats]
        piped = asyncio.run(play_one(rules, kinds, seed, setups=setups))
        bot = Bot()
        host = play(bot, seed=seed, seat=seat)
        assert faults(piped) == faults(host) == []
        over_pipes = [json.loads(line) for line in log.read_text().splitlines()]
        over_http = [m for body in bot.bodies for m in body["messages"]]
        # each names its own game (two games in memory), and every message and body names it and the seat
        assert {m.pop("game") for m in over_pipes} == {piped.agents[seat].game}
        assert {m.pop("game") for m in over_http} == {b["game"] for b in bot.bodies} == {host.agents[seat].game}
        assert {m["seat"] for m in over_http} == {seat}
        assert over_http == over_pipes
        assert over_http[0]["type"] == "start" and over_http[0]["seat"] == seat
        assert [m["type"] for m in over_http].count("start") == 1
        for body in bot.bodies[:-1]:
            assert [m["type"] for m in body["messages"]][-1] == "request"
            assert [m["type"] for m in body["messages"]].count("request") == 1
        assert [m["type"] for m in bot.bodies[-1]["messages"]][-1] == "end"
        visible = [e for e in host.engine.events if (e.visible_to == "all" or seat in e.visible_to)
                   and e.type not in ("game_started", "role_assigned")]
        events = [m for m in over_http if m["type"] == "event"]
        assert [m["event"]["seq"] for m in events] == [e.seq for e in visible]
        assert [m["text"] for m in events] == [narrate.announce(e, host.rules) or "" for e in visible]


def test_one_server_plays_the_same_seat_of_two_games_at_once():
    """Two games at once, seat 2 of each asked by the same server: every body and every message names its game,
    the two ids differ, and each game's messages alone are a whole game (one start first, the end last); no
    fault."""
    rules = make_rules("official", 6)
    kinds = ["external" if s == SEAT else "rulebot" for s in rules.seats]
    bot = Bot()

    async def main():
        runner, url = await serve(bot)
        try:
            setups = [AgentSetup(options={"url": url, "timeout": 30}) if s == SEAT else AgentSetup()
                      for s in rules.seats]
            return await asyncio.gather(*(play_one(rules, kinds, seed, setups=setups) for seed in (0, 1)))
        finally:
            await runner.cleanup()

    hosts = asyncio.run(main())
    games = [host.agents[SEAT].game for host in hosts]
    assert len(set(games)) == 2 and all(faults(host) == [] for host in hosts)
    for game in games:
        bodies = [b for b in bot.bodies if b["game"] == game]
        messages = [m for b in bodies for m in b["messages"]]
        assert all(m["game"] == game and m["seat"] == SEAT for m in messages)
        assert [m["type"] for m in messages].count("start") == 1 and messages[0]["type"] == "start"
        assert messages[-1]["type"] == "end"
    firsts = [bot.bodies.index(next(b for b in bot.bodies if b["game"] == g)) for g in games]
    lasts = [max(i for i, b in enumerate(bot.bodies) if b["game"] == g) for g in games]
    assert max(firsts) < min(lasts)  # the two games' bodies interleaved: played at once


class Dies(Bot):
    """Plays well for five requests, then its connections break (as when its process is killed)."""

    async def reply(self, request, last):
        if self.posts > 5:
            request.transport.abort()
        return await super().reply(request, last)


class Hangs(Bot):
    async def reply(self, request, last):
        await asyncio.sleep(3600)
        return await super().reply(request, last)


class Fails(Bot):
    async def reply(self, request, last):
        return web.Response(status=500, text="Internal Server Error")


class Illegal(Bot):
    async def reply(self, request, last):
        return web.json_response({"id": last.get("id", ""), "answer": "banana"})


class Garbles(Bot):
    async def reply(self, request, last):
        return web.Response(text="{not json")


class Floods(Bot):
    """Answers a body longer than a line may be."""

    async def reply(self, request, last):
        return web.Response(body=b" " * (1 << 21) + json.dumps({"id": last.get("id", ""), "answer": "hi"}).encode())


@pytest.mark.parametrize("bot, problem, posts", [(Dies, "crash", 6), (Hangs, "timeout", 1), (Fails, "crash", 1),
                                                 (Illegal, "illegal", None), (Garbles, "bad_json", None),
                                                 (Floods, "bad_json", None)])
def test_a_broken_server_costs_only_recorded_fallbacks(bot, problem, posts):
    server = bot()
    # a short timeout only where it is the fault under test (a server that never answers): the others answer
    # within the default's time however slow the machine
    host = play(server, **({"timeout": 0.5} if problem == "timeout" else {}))
    found = seat_faults(host, SEAT, problem)
    agent = host.agents[SEAT]
    assert agent.transport.session.closed
    if problem in ("crash", "timeout"):  # down at once: asked nothing more (not even the end), no waiting again
        assert agent.down is not None
        assert [f.problem for f in found].count(problem) == 1
        downed = next(i for i, f in enumerate(found) if f.problem == problem)
        assert all(f.problem == "fallback" for f in found[downed + 1:])
        assert server.posts == posts


def test_a_server_that_is_down_from_the_start_costs_fallbacks():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    host = play(url=f"http://127.0.0.1:{port}/")
    assert host.engine.is_over
    found = faults(host)
    assert found[0].problem == "crash" and found[0].kind and "ClientConnectorError" in found[0].detail
    assert all(f.problem == "fallback" for f in found[1:]) and len(found) > 5


class SlowsDown(Bot):
    """Every request's first POST is refused with `status` and Retry-After: `wait` (alternating 429 and 503)."""

    def __init__(self, wait: str) -> None:
        super().__init__()
        self.wait, self.refused = wait, []

    async def reply(self, request, last):
        if last["type"] == "request" and last["id"] not in {m["messages"][-1]["id"] for m in self.refused}:
            self.refused.append(await request.json())
            return web.Response(status=(429, 503)[len(self.refused) % 2], headers={"Retry-After": self.wait})
        return await super().reply(request, last)


def test_a_server_asking_to_slow_down_is_asked_again_with_no_fault():
    server = SlowsDown("0")
    host = play(server)
    assert host.engine.is_over and faults(host) == []
    asked = [b for b in server.bodies if b["messages"][-1]["type"] == "request"]
    assert len(server.refused) == len(asked) > 5
    assert server.refused == asked  # each retry is the same body again


def test_a_retry_after_past_the_request_timeout_is_a_timeout():
    start = time.monotonic()
    host = play(SlowsDown("30"), timeout=10)
    assert time.monotonic() - start < 10  # neither the 30 s nor the timeout waited for
    found = faults(host)
    assert found[0].problem == "timeout" and "asks to wait 30 s" in found[0].detail
    assert all(f.problem == "fallback" for f in found[1:])


class WrongId(Bot):
    """Answers its first request with another id, then as it should."""

    async def reply(self, request, last):
        if self.posts == 1:
            return web.json_response({"id": "nope", "answer": "hi"})
        return await super().reply(request, last)


def test_an_answer_to_another_id_is_recorded_and_the_request_asked_again():
    server = WrongId()
    host = play(server)
    assert [f.problem for f in faults(host)] == ["unknown_id"]  # no fallback: the re-ask was answered
    again = server.bodies[1]["messages"]  # the second POST: the re-ask alone
    assert [m["type"] for m in again] == ["request"] and again[0]["id"] == f"{SEAT}-2"
    assert "unknown_id" not in again[0]["text"] and "nope" in again[0]["text"]


def test_retry_after_reads_seconds_and_dates():
    assert retry_after("0") == 0 and retry_after(" 7 ") == 7
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0  # past
    assert 50 < retry_after(time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60))) <= 60
    assert retry_after(None) is None and retry_after("soon") is None and retry_after("-1") is None


def test_url_options_are_checked_where_a_config_is_read():
    check_options("external", {"url": "http://127.0.0.1:8000/", "timeout": 2})
    check_options("external", {"url": "https://bots.example.org/seat"})
    for bad, field in (({}, "command or url"), ({"command": ["x"], "url": "http://h/"}, "command or url"),
                       ({"url": "ftp://h/"}, "url"), ({"url": "127.0.0.1:8000"}, "url"),
                       ({"url": "http://h:port/"}, "url"), ({"url": 3}, "url")):
        with pytest.raises(ValueError, match=f"^{field}:") as exc:
            check_options("external", bad)
        assert "\n" not in str(exc.value)
