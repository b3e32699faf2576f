"""`avalon view`'s HTTP side (aiohttp, read-only): each page, and a JSON address mirroring it.

| page | JSON |
|---|---|
| `/` the index | `/api/runs` |
| `/runs/ID` a run | `/api/runs/ID` |
| `/runs/ID/calls` a run's LLM calls, filtered and paged (`?q=&seat=&...`: docs/view.md#calls) | `/api/runs/ID/calls` |
| `/runs/ID/games/GAME` a game's replay (the viewer's page) | `/api/runs/ID/games/GAME` |
| `/compare?runs=A,B` runs side by side | `/api/compare?runs=A,B` |

Bound to a loopback address, no token is asked, and a request naming another host than this machine's (`Host`) or
sent by another site's page (`Origin`) is refused (web.serving.guard: DNS rebinding); bound to any other, every
address needs `?token=` (made with `secrets`; a wrong or missing one is 403). Every refusal is JSON: a path that is
not a viewed run's, or that links out of the viewed folders, 404; a file over the size cap, corrupt or of a newer
layout, 422 naming it (confine.py). The pages are self-contained (site.py) under the table's Content Security
Policy; the computing runs in worker threads, one at a time per run (the index and each comparison their own), so
a slow run holds its own pages only.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from aiohttp import web

from avalon_agents.view.catalog import UnknownRun
from avalon_agents.view.confine import Unreadable
from avalon_agents.view.pages import View
from avalon_agents.view.site import page_html
from avalon_agents.web.hosts import loopback  # noqa: F401  (avalon view asks it of its --host)
from avalon_agents.web.serving import Refused, guard, html_response


class ViewServer:
    """The site's addresses over `view` (token: asked on every address when given; `bound`: the address it listens
    on, whose names it answers to)."""

    def __init__(self, view: View, token: str | None = None, bound: str = "127.0.0.1") -> None:
        self.view = view
        self.token = token
        self.bound = bound
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)  # one per run, index, comparison

    def app(self) -> web.Application:
        app = web.Application(middlewares=[guard("the viewer", self.bound), self._check_token])
        app.add_routes([web.get("/", self._index), web.get("/api/runs", self._api_index),
                        web.get("/runs/{rest:.+}", self._run), web.get("/api/runs/{rest:.+}", self._api_run),
                        web.get("/compare", self._compare), web.get("/api/compare", self._api_compare)])
        return app

    @web.middleware
    async def _check_token(self, request: web.Request, handler) -> web.StreamResponse:
        if self.token is not None:
            given = request.query.get("token", "")
            if not hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode()):
                raise Refused(403, "this address needs its token (?token=...): the one `avalon view` printed")
        return await handler(request)

    async def _work(self, compute: Callable[[], Any], key: str = "index") -> Any:
        """Compute in a worker thread, one page of `key` (a run's id, "index", "compare") at a time."""
        async with self._locks[key]:
            try:
                return await asyncio.to_thread(compute)
            except UnknownRun as exc:
                raise Refused(404, str(exc)) from None
            except Unreadable as exc:  # a file not read: named, 404 (outside the viewed folders) or 422
                raise Refused(exc.problem.status, str(exc)) from None
            except (ValueError, FileNotFoundError) as exc:  # a run that cannot be read: say which, in one line
                raise Refused(422, (str(exc).splitlines() or [type(exc).__name__])[0]) from None

    async def _index(self, request: web.Request) -> web.Response:
        data = await self._work(self.view.index)
        return html_response(page_html("avalon view: runs", data))

    async def _api_index(self, request: web.Request) -> web.Response:
        return web.json_response(await self._work(self.view.index))

    async def _run(self, request: web.Request) -> web.Response:
        kind, data = await self._work(lambda: self._route(request.match_info["rest"], request.query),
                                      self._run_key(request))
        if kind == "game":
            return html_response(data)
        return html_response(page_html(data["title"], data))

    async def _api_run(self, request: web.Request) -> web.Response:
        kind, data = await self._work(lambda: self._route(request.match_info["rest"], request.query, api=True),
                                      self._run_key(request))
        return web.json_response(data)

    def _run_key(self, request: web.Request) -> str:
        """Which run an address under /runs/ names (its lock), by the ids found so far."""
        rest = request.match_info["rest"].strip("/")
        found = [i for i in self.view.catalog.ids() if rest == i or rest.startswith(i + "/")]
        return "run:" + (max(found, key=len) if found else "?")  # no run: one lock for every such address

    def _route(self, rest: str, query: Any, api: bool = False) -> tuple[str, Any]:
        run_id, what = self.view.split(rest)
        if what == "":
            return "run", self.view.run(run_id)
        if what == "calls":
            return "calls", self.view.calls(run_id, dict(query))
        if what.startswith("games/"):
            game = what.removeprefix("games/")
            return "game", (self.view.game_data(run_id, game) if api else self.view.game_page(run_id, game))
        raise UnknownRun(f"no page {what!r} of run {run_id!r} (its page, calls or games/GAME)")

    async def _compare(self, request: web.Request) -> web.Response:
        data = await self._work(lambda: self.view.compare(_runs(request)), "compare")
        return html_response(page_html(data["title"], data))

    async def _api_compare(self, request: web.Request) -> web.Response:
        return web.json_response(await self._work(lambda: self.view.compare(_runs(request)), "compare"))


def _runs(request: web.Request) -> list[str]:
    return [r for r in request.query.get("runs", "").split(",") if r]


def new_token() -> str:
    return secrets.token_urlsafe(18)
