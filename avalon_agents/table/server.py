"""The web table's HTTP side (aiohttp): each person's seat page and its JSON API, the spectator's, and the replay
once the game is over.

Every address needs its token (`?token=`, made with `secrets`); a wrong or missing one is 403, whatever the
seat. The pages are one self-contained file (table/page.html: no external resource) served with a Content
Security Policy that lets only its own script run, so nothing a person typed can ever run as a script (the page
also shows every line as text). Request bodies are JSON objects of at most MAX_BODY bytes.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import secrets
from importlib.resources import files
from typing import Any

from aiohttp import web

from avalon_agents.core.types import Seat
from avalon_agents.table.desk import WebDesk
from avalon_agents.table.watch import Spectator

MAX_BODY = 16 * 1024
"""The largest request body taken (bytes): a speech is capped far below (table.desk.MAX_SPEECH)."""
_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def csp(page: str) -> str:
    """The Content Security Policy of a page: its own inline scripts (by hash) and styles, requests to this
    server only, nothing else (no other script, frame, form target or external resource)."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'"
                      for s in _SCRIPT.findall(page))
    return (f"default-src 'none'; script-src {hashes or chr(39) + 'none' + chr(39)}; style-src 'unsafe-inline'; "
            "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def html_response(page: str) -> web.Response:
    return web.Response(text=page, content_type="text/html", headers={"Content-Security-Policy": csp(page)})


@web.middleware
async def _headers(request: web.Request, handler) -> web.StreamResponse:
    """No caching (the tokens are in the addresses), no referrer sent on, no content sniffing."""
    response = await handler(request)
    response.headers.update({"Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
                             "X-Content-Type-Options": "nosniff"})
    return response


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


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
        self.replay_page: str | None = None
        self.page = files("avalon_agents.table").joinpath("page.html").read_text()
        self.joined: set[Seat] = set()  # the seats whose page has asked for their state
        self.everyone_joined = asyncio.Event()
        self.started = False

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[_headers])
        app.add_routes([web.get("/seat/{n}", self._seat_page), web.get("/api/seat/{n}", self._seat_state),
                        web.post("/api/seat/{n}/answer", self._answer), web.get("/watch", self._watch_page),
                        web.get("/api/watch", self._watch_state), web.get("/replay", self._replay)])
        return app

    def seat_path(self, seat: Seat) -> str:
        return f"/seat/{seat}?token={self.tokens[seat]}"

    def watch_path(self) -> str:
        return f"/watch?token={self.watch_token}"

    def game_over(self, replay_page: str | None) -> None:
        """The replay is written: every view links it."""
        self.replay_page = replay_page
        if replay_page is not None:
            for seat, desk in self.desks.items():
                desk.replay = f"/replay?token={self.tokens[seat]}"
            self.spectator.replay = f"/replay?token={self.watch_token}"

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
        given = request.query.get("token", "")
        for seat, token in self.tokens.items():
            if request.match_info.get("n") == str(seat) and secrets.compare_digest(given, token):
                return self.desks[seat]
        return None

    def _watching(self, request: web.Request) -> bool:
        return secrets.compare_digest(request.query.get("token", ""), self.watch_token)

    async def _seat_page(self, request: web.Request) -> web.Response:
        return html_response(self.page) if self._desk(request) else _error(403, "wrong or missing token")

    async def _watch_page(self, request: web.Request) -> web.Response:
        return html_response(self.page) if self._watching(request) else _error(403, "wrong or missing token")

    async def _seat_state(self, request: web.Request) -> web.Response:
        desk = self._desk(request)
        if desk is None:
            return _error(403, "wrong or missing token")
        self._join(desk.seat)
        return web.json_response({**desk.state(), **self._lobby()})

    async def _watch_state(self, request: web.Request) -> web.Response:
        if not self._watching(request):
            return _error(403, "wrong or missing token")
        return web.json_response({**self.spectator.state(), **self._lobby()})

    async def _answer(self, request: web.Request) -> web.Response:
        desk = self._desk(request)
        if desk is None:
            return _error(403, "wrong or missing token")
        body = await _json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("answer"), str) or set(body) != {"answer"}:
            return _error(400, 'the body is one JSON object: {"answer": "<your answer as text>"}')
        reason = desk.answer(body["answer"])
        return _error(422, reason) if reason else web.json_response({"ok": True})

    async def _replay(self, request: web.Request) -> web.Response:
        allowed = self._watching(request) or any(
            secrets.compare_digest(request.query.get("token", ""), t) for t in self.tokens.values())
        if not allowed:
            return _error(403, "wrong or missing token")
        if self.replay_page is None:
            return _error(404, "the replay is written when the game is over")
        return html_response(self.replay_page)


async def _json_body(request: web.Request) -> Any:
    try:
        return json.loads(await request.text())
    except (ValueError, UnicodeDecodeError):
        return None
