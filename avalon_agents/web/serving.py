"""What every response of a local site is (aiohttp): every refusal one JSON object `{"error": "<why>"}` with its
status, whatever refused it (a handler's `Refused`, or aiohttp's routing: no such address, a wrong method, a body
too large); a bug a JSON 500 with the traceback in the diagnostic log, never sent to the client; no caching, no
referrer, no content sniffing (`guard`). A page is one self-contained file served with a Content Security Policy
that lets only its own inline scripts run (`html_response`). A token is compared in constant time (`token_is`).

What every request of a local site must be, before any handler runs (`guard`): addressed to this site by a name it
answers to (`Host`; bound to a loopback address, loopback names only, so a web page whose name was pointed at
127.0.0.1 cannot read it: DNS rebinding), from its own pages or from no page at all (`Origin`, when sent, the same
as `Host`); and within its client's pace (`Pace`: a client asking faster than its share waits, then is answered
429). A client that leaves mid-request is one line in the diagnostic log. A body is read as sent: the servers run
with `runner` (no Content-Encoding decoded, so a compressed body is the handler's JSON refusal, after its token
check, never aiohttp's plain-text one; and a request aiohttp cannot read as HTTP, which no middleware sees, is
answered JSON too).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import inspect
import re
import secrets
import time
from collections import OrderedDict
from typing import Any

from aiohttp import __version__ as aiohttp_version
from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from loguru import logger
from yarl import URL

from avalon_agents.web.hosts import loopback

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


class Refused(Exception):
    """A request the table does not take: answered `{"error": message}` with `status`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def guard(what: str, bound: str = "127.0.0.1", pace: Pace | None = None):
    """The middleware of a local site (`what`: "the table", "the viewer") listening on `bound`: a request for
    another site or from another site's page refused (`foreign`), a client over its pace slowed then refused
    (`pace`), every refusal as JSON (`_refusal`), a client that left mid-request one line in the log, a bug a JSON
    500 naming nothing of the code (the traceback in the diagnostic log); then no caching (the tokens are in the
    addresses), no referrer sent on, no content sniffing, on every response."""

    @web.middleware
    async def middleware(request: web.Request, handler) -> web.StreamResponse:
        try:
            why = foreign(request, bound)
            if why:
                raise Refused(403, why)
            if pace is not None:
                await pace.wait(request)
            response = await handler(request)
        except Refused as exc:
            response = error(exc.status, exc.message)
            if exc.status == 429:
                response.headers["Retry-After"] = "1"
        except web.HTTPException as exc:  # aiohttp's own refusals: routing, a body over client_max_size
            response = error(exc.status, _refusal(request, exc))
            if "Allow" in exc.headers:
                response.headers["Allow"] = exc.headers["Allow"]
        except ConnectionError as exc:  # the client left mid-request: nobody reads an answer
            logger.info(f"{what}: a client left during {request.method} {request.path} ({type(exc).__name__})")
            response = error(400, "the connection was closed before the request was read")
        except Exception:  # a bug: the client learns nothing of the code, the log keeps the traceback
            logger.opt(exception=True).error(f"{what}: {request.method} {request.path} failed")
            response = error(500, f"{what} failed to answer this request (its log has the details)")
        response.headers.update(HEADERS)
        return response

    return middleware


HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"}
"""What every response of a local site carries: no caching (the tokens are in the addresses), no referrer sent on,
no content sniffing."""


def foreign(request: web.Request, bound: str) -> str | None:
    """Why a request is not this site's (None: it is): its `Host` is not a loopback name while the site listens on a
    loopback address (a page of another name resolved to 127.0.0.1: DNS rebinding), or its `Origin` (sent by a
    browser for a page's script) is another site than the one it asks."""
    host = request.headers.get("Host", "")
    name = _host_name(host)
    if loopback(bound) and not (name is not None and loopback(name)):
        return (f"this site answers to this machine's names only (localhost, 127.0.0.1, ::1), not Host: "
                f"{host[:80]!r}")
    origin = request.headers.get("Origin")
    if origin is not None:
        try:
            parsed = URL(origin)
            same = parsed.scheme in ("http", "https") and _netloc(parsed) == host.lower()
        except ValueError:
            same = False
        if not same:
            return f"a page of another site ({origin[:80]!r}) may not ask this one"
    return None


def _host_name(host: str) -> str | None:
    """The name of a `Host` header (its port and an IPv6 address's brackets off; None: not a host)."""
    try:
        return URL(f"http://{host}").host if host else None
    except ValueError:
        return None


def _netloc(url: URL) -> str:
    """An origin as a `Host` header names it (host, and port unless the scheme's own)."""
    host = f"[{url.host}]" if url.host and ":" in url.host else (url.host or "")
    return (host if url.explicit_port is None else f"{host}:{url.explicit_port}").lower()


class Pace:
    """Each client's share of a site: `rate` requests a second, `burst` at once (a token bucket per client: its
    address and the token it asks with, so each seat of a table has its own). A request over its share waits for
    its turn, up to `wait` seconds; one that would wait longer is refused (429, with Retry-After). A page polls a
    few times a second; a client asking hundreds of times a second is slowed to `rate`, and every other client's
    pages are answered as before."""

    def __init__(self, rate: float = 50.0, burst: float = 100.0, wait: float = 1.0, clients: int = 4096) -> None:
        self.rate, self.burst, self.wait_at_most, self.clients = rate, burst, wait, clients
        self._buckets: OrderedDict[tuple, tuple[float, float]] = OrderedDict()  # client -> (tokens, when)

    async def wait(self, request: web.Request) -> None:
        """Take a turn for the request's client: at once, after a wait, or Refused (429)."""
        delay = self.take((request.remote, request.query.get("token")), time.monotonic())
        if delay > self.wait_at_most:
            raise Refused(429, f"too many requests from this client: at most {self.rate:g} a second; try again "
                               "in a second")
        if delay > 0:
            await asyncio.sleep(delay)

    def take(self, client: tuple, now: float) -> float:
        """The seconds until the client's turn (0: now); a request refused takes no turn."""
        tokens, when = self._buckets.pop(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - when) * self.rate) - 1
        delay = max(0.0, -tokens / self.rate)
        if delay > self.wait_at_most:
            tokens += 1
        self._buckets[client] = (tokens, now)
        while len(self._buckets) > self.clients:  # the longest idle forgotten
            self._buckets.popitem(last=False)
        return delay


def _refusal(request: web.Request, exc: web.HTTPException) -> str:
    """aiohttp's refusal in the table's words."""
    path = request.path if len(request.path) <= 80 else request.path[:80] + "..."
    if isinstance(exc, web.HTTPNotFound):
        return f"no such address: {path}"
    if isinstance(exc, web.HTTPMethodNotAllowed):
        return f"{request.method} is not taken at {path}; use {' or '.join(sorted(exc.allowed_methods))}"
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        return f"the body is at most {MAX_BODY} bytes"
    return exc.reason


def error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


class _HttpLog:
    """Where aiohttp reports a request it could not even parse (a request line over 8 KB, broken framing; it
    answers those itself, 400): one line in the diagnostic log, not a traceback on the table's terminal."""

    def exception(self, message: str, *args: Any, exc_info: Any = None, **_: Any) -> None:
        why = f": {type(exc_info).__name__}: {str(exc_info)[:200]}" if isinstance(exc_info, BaseException) else ""
        logger.info(f"web: {message % args}{why}")

    def debug(self, message: str, *args: Any, **kw: Any) -> None:
        self.exception(message, *args, **kw)


HTTP_LOG = _HttpLog()
"""The `logger` the table's aiohttp runner is given."""

RUNNER: dict[str, Any] = {"access_log": None, "handle_signals": False, "logger": HTTP_LOG,
                          "auto_decompress": False}
"""How a local site's aiohttp runner is made (`runner`): no access log, aiohttp's own refusals one line in the
diagnostic log, and a body read as sent (a Content-Encoding is the handler's refusal)."""


def runner(app: web.Application) -> web.AppRunner:
    """The runner of a local site (`RUNNER`'s settings) whose every answer is JSON, aiohttp's own too: a request
    it cannot read as HTTP (garbage, a bad request line or header, TLS on the plain port, a line over 8 KB) is
    answered 400 `{"error": "the request cannot be read as HTTP: ..."}`, not aiohttp's plain text."""
    return _JsonRunner(app, **RUNNER)


# aiohttp (3.14) answers a request it cannot parse in RequestHandler.handle_error, before any middleware, as plain
# text, and has no supported hook to change it: web.Server builds a RequestHandler of its own class. The one place
# this code reaches in: the runner's Server is given a protocol factory (`__call__`) building _JsonRefusals, whose
# handle_error lets aiohttp's log it, check nothing is sent yet and close the connection, then answers JSON instead.
# `hooked` says whether aiohttp still has that shape; if not, the site serves on with aiohttp's plain text and one
# warning in the log (tests/web/test_unparsed.py fails loudly).


class _JsonRefusals(RequestHandler):
    __slots__ = ()

    def handle_error(self, request: BaseRequest, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        super().handle_error(request, status, exc, message)  # logged; ConnectionError if an answer went out
        if status == 400:
            why = f"the request cannot be read as HTTP: {_one_line(message or str(exc or 'malformed'))}"
        elif status == 504:
            why = "this site took too long to answer this request"
        else:
            why = "this site failed to answer this request (its log has the details)"
        response = error(status, why)
        response.headers.update(HEADERS)
        response.force_close()
        return response


class _JsonServer(web.Server):
    def __call__(self) -> RequestHandler:
        return _JsonRefusals(self, loop=self._loop, **self._kwargs)


class _JsonRunner(web.AppRunner):
    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        if hooked(server):
            server.__class__ = _JsonServer
        else:
            logger.warning(f"web: aiohttp {aiohttp_version} changed its request handler; a request it cannot parse "
                           "is answered as plain text")
        return server


def hooked(server: object) -> bool:
    """Whether aiohttp still has the shape `_JsonRunner` relies on: the runner's server a `web.Server` itself,
    holding the loop and keyword arguments it builds each connection's `RequestHandler` with, whose `handle_error`
    takes (request, status, exc, message)."""
    try:
        parameters = list(inspect.signature(RequestHandler.handle_error).parameters)
    except (TypeError, ValueError):
        return False
    return (type(server) is web.Server and isinstance(getattr(server, "_kwargs", None), dict)
            and hasattr(server, "_loop") and parameters == ["self", "request", "status", "exc", "message"])


def _one_line(message: str) -> str:
    """aiohttp's words for a request it cannot parse, on one line (its caret line under the bytes left out)."""
    words = " ".join(line.strip() for line in message.splitlines() if line.strip().strip("^"))
    return words if len(words) <= 200 else words[:200] + "..."


def token_is(request: web.Request, token: str) -> bool:
    """The address's `?token=` is `token` (compared in constant time, as bytes: a token may hold any character)."""
    return secrets.compare_digest(request.query.get("token", "").encode("utf-8", "surrogatepass"), token.encode())
