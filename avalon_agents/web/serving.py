"""What every response of a local site is (aiohttp): every refusal one JSON object `{"error": "<why>"}` with its
status, whatever refused it (a handler's `Refused`, or aiohttp's routing: no such address, a wrong method, a body
too large); a bug a JSON 500 with the traceback in the diagnostic log, never sent to the client; no caching, no
referrer, no content sniffing (`guard`). A page is one self-contained file served with a Content Security Policy
that lets only its own inline scripts run (`html_response`). A token is compared in constant time (`token_is`).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from typing import Any

from aiohttp import web
from loguru import logger

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


def guard(what: str):
    """The middleware of a local site (`what`: "the table", "the viewer"): every refusal as JSON (`_refusal`), a bug
    a JSON 500 naming nothing of the code (the traceback in the diagnostic log); then no caching (the tokens are in
    the addresses), no referrer sent on, no content sniffing, on every response."""

    @web.middleware
    async def middleware(request: web.Request, handler) -> web.StreamResponse:
        try:
            response = await handler(request)
        except Refused as exc:
            response = error(exc.status, exc.message)
        except web.HTTPException as exc:  # aiohttp's own refusals: routing, a body over client_max_size
            response = error(exc.status, _refusal(request, exc))
            if "Allow" in exc.headers:
                response.headers["Allow"] = exc.headers["Allow"]
        except Exception:  # a bug: the client learns nothing of the code, the log keeps the traceback
            logger.opt(exception=True).error(f"{what}: {request.method} {request.path} failed")
            response = error(500, f"{what} failed to answer this request (its log has the details)")
        response.headers.update({"Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
                                 "X-Content-Type-Options": "nosniff"})
        return response

    return middleware


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
        logger.info(f"web table: {message % args}{why}")

    def debug(self, message: str, *args: Any, **kw: Any) -> None:
        self.exception(message, *args, **kw)


HTTP_LOG = _HttpLog()
"""The `logger` the table's aiohttp runner is given."""


def token_is(request: web.Request, token: str) -> bool:
    """The address's `?token=` is `token` (compared in constant time, as bytes: a token may hold any character)."""
    return secrets.compare_digest(request.query.get("token", "").encode("utf-8", "surrogatepass"), token.encode())
