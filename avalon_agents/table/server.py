"""The web table's HTTP side (aiohttp): each person's seat page and its JSON API, the spectator's, and each game's
replay once that game is over.

Every address of the live game needs its token (`?token=`, made with `secrets`); a wrong or missing one is 403,
whatever the seat. A finished game's replay (`/replay/N`) asks none, so its link can be shared and carries no
token: once a game has ended its roles are shown to everyone at the table (the spectator's view too), and the
replay opens with them hidden until its reader asks; a game not over has no replay (404), so nothing private of
a live game is served without its seat's token. The pages are one self-contained file (table/page.html: no
external resource) served with a Content Security Policy that lets only its own script run, so nothing a person
typed can ever run as a script (the page also shows every line as text). Request bodies are JSON objects of at
most MAX_BODY bytes.

Every refusal is one JSON object `{"error": "<why>"}` with its status, whatever refused it (this module's checks or
aiohttp's routing: no such address, a wrong method, a body too large); a bug is a JSON 500 with the traceback in
the diagnostic log, never sent to the client (web.serving.guard, the toolkit `avalon view` uses too). Every address
also checks `Host` and `Origin` (bound to loopback: loopback names only) and each client's pace (web.serving.Pace:
a client asking hundreds of times a second waits its turn, then is answered 429, and the other seats' pages are
answered as before).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any

from aiohttp import web

from avalon_agents.core.types import Seat
from avalon_agents.table.desk import WebDesk
from avalon_agents.table.page import page
from avalon_agents.table.watch import Spectator
from avalon_agents.web.serving import MAX_BODY, Pace, Refused, error, guard, html_response, token_is


class Table:
    """The addresses of one game's table.

    Args:
        desks: the people's seats.
        spectator: the public view.
        games: how many games the session plays.
    """

    def __init__(self, desks: dict[Seat, WebDesk], spectator: Spectator, games: int = 1) -> None:
        self.desks = desks
        self.games = games
        self.spectator = spectator
        self.tokens = {seat: secrets.token_urlsafe(18) for seat in desks}
        self.watch_token = secrets.token_urlsafe(18)
        self.replays: dict[int, str] = {}  # game number (1, 2, ...) -> its replay page, once the game is over
        self.page = page()
        self.joined: set[Seat] = set()  # the seats whose page has asked for their state
        self.everyone_joined = asyncio.Event()
        self.started = False

    def app(self, bound: str = "127.0.0.1", pace: Pace | None = None) -> web.Application:
        """The table's site, listening on `bound` (its Host checks), each client paced by `pace` (default `Pace()`).
        """
        middleware = guard("the table", bound, pace or Pace())
        app = web.Application(client_max_size=MAX_BODY, middlewares=[middleware])
        app.add_routes([web.get("/seat/{n}", self._seat_page), web.get("/api/seat/{n}", self._seat_state),
                        web.post("/api/seat/{n}/answer", self._answer), web.get("/watch", self._watch_page),
                        web.get("/api/watch", self._watch_state), web.get("/replay/{n:[0-9]{1,6}}", self._replay)])
        return app

    def seat_path(self, seat: Seat) -> str:
        return f"/seat/{seat}?token={self.tokens[seat]}"

    def watch_path(self) -> str:
        return f"/watch?token={self.watch_token}"

    @staticmethod
    def replay_path(game: int) -> str:
        """Game `game`'s replay (no token: see the module's docstring)."""
        return f"/replay/{game}"

    def game_over(self, game: int, replay_page: str | None) -> None:
        """Game `game` (1, 2, ...) is over and its replay written: served from now on, and every view links it."""
        if replay_page is not None:
            self.replays[game] = replay_page
            for desk in self.desks.values():
                desk.replay = self.replay_path(game)
            self.spectator.replay = self.replay_path(game)

    def _join(self, seat: Seat) -> None:
        self.joined.add(seat)
        if self.joined >= set(self.desks):
            self.everyone_joined.set()

    def _lobby(self) -> dict[str, Any]:
        """Whether the game has started, who has joined, and whom the game waits for (public)."""
        return {"games": self.games, "started": self.started, "joined": sorted(self.joined),
                "people": sorted(self.desks), "waiting": self.spectator.waited_on()}

    # ------------------------------------------------------------------ handlers

    def _desk(self, request: web.Request) -> WebDesk | None:
        """The seat the address names, if its token is right."""
        for seat, token in self.tokens.items():
            if request.match_info.get("n") == str(seat) and token_is(request, token):
                return self.desks[seat]
        return None

    def _watching(self, request: web.Request) -> bool:
        return token_is(request, self.watch_token)

    async def _seat_page(self, request: web.Request) -> web.Response:
        return html_response(self.page) if self._desk(request) else error(403, "wrong or missing token")

    async def _watch_page(self, request: web.Request) -> web.Response:
        return html_response(self.page) if self._watching(request) else error(403, "wrong or missing token")

    async def _seat_state(self, request: web.Request) -> web.Response:
        desk = self._desk(request)
        if desk is None:
            return error(403, "wrong or missing token")
        self._join(desk.seat)
        return web.json_response({**desk.state(), **self._lobby()})

    async def _watch_state(self, request: web.Request) -> web.Response:
        if not self._watching(request):
            return error(403, "wrong or missing token")
        return web.json_response({**self.spectator.state(), **self._lobby()})

    async def _answer(self, request: web.Request) -> web.Response:
        desk = self._desk(request)
        if desk is None:
            return error(403, "wrong or missing token")
        body = await answer_body(request)
        stale = desk.stale(body.get("id"))
        if stale:
            return error(409, stale)
        reason = desk.answer(body["answer"])
        return error(422, reason) if reason else web.json_response({"ok": True})

    async def _replay(self, request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        page = self.replays.get(n)
        if page is None:
            return error(404, f"no replay of game {n}: a game's replay is written when the game is over")
        return html_response(page)


SHAPE = 'the body is one JSON object: {"answer": "<your answer as text>"}, optionally with "id": "<the request\'s id>"'


async def answer_body(request: web.Request) -> dict[str, str]:
    """An answer's body, `{"answer": str}` and optionally the `"id"` of the request it answers; Refused (415, 413
    or 400) naming what is wrong with it."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise Refused(415, f"the body is sent as is: no Content-Encoding (not {encoding[:40]!r})")
    if request.content_type != "application/json":
        raise Refused(415, f"the body is JSON: send it with Content-Type: application/json, not "
                           f"{request.content_type}")
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise Refused(413, f"the body is at most {MAX_BODY} bytes, not {request.content_length}")
    try:
        raw = await request.read()  # a longer body without a length: aiohttp's 413, as JSON (_guard)
    except web.RequestPayloadError:
        raise Refused(400, "the body cannot be read as sent (its Content-Encoding or framing is broken)") from None
    try:
        body = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_repeated_keys)
    except UnicodeDecodeError:
        raise Refused(400, "the body is not UTF-8 text") from None
    except RecursionError:
        raise Refused(400, "the body is not JSON the table reads: it nests too deeply") from None
    except ValueError as exc:
        raise Refused(400, f"the body is not JSON the table reads: {str(exc)[:120]}") from None
    if (not isinstance(body, dict) or "answer" not in body or not set(body) <= {"answer", "id"}
            or not all(isinstance(v, str) for v in body.values())):
        raise Refused(400, SHAPE)
    for key, value in body.items():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise Refused(400, f"{key}: not text (it holds a lone surrogate such as \\ud800)") from None
    return body


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    body = dict(pairs)
    if len(body) < len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"key {twice!r} given twice")
    return body
