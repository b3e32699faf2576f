"""WebSeat: the seat protocol over HTTP (agents.protocol's Transport). Each time the seat must act, one POST to the
server's URL carries the seat's messages since its last request, ending with the request; the response body is
the answer. The game's `end` is POSTed too (its response is not read).

The body: `{"game": "3f9a2c1b7d4e/main/series-1/game-00001", "seat": 3, "messages": [<start, the first time>,
<event>..., <request>]}` (one server may play several seats of several games at once: `game` and `seat` tell them
apart). A 429 or 503 with a Retry-After that ends before the request's deadline is waited out and the POST sent
again (no fault); a refused or reset connection, any other status that is no 2xx, or no answer in time is the
server down (SeatDown).
"""

from __future__ import annotations

import asyncio
import email.utils
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from avalon_agents.agents.protocol import MAX_LINE, Answer, ProtocolError, SeatDown, dumps, read_line
from avalon_agents.aio import within

SLOW_DOWN = {429, 503}
"""Statuses by which a server asks to be asked again later (with a Retry-After)."""


class WebSeat:
    """One seat's server, asked over one aiohttp session (opened when the seat learns its role, closed at the
    game's end): `timeout` seconds for each POST and its answer, retries after a Retry-After included."""

    def __init__(self, url: str, game: str, seat: int, timeout: float) -> None:
        self.url = url
        self.game = game
        self.seat = seat
        self.timeout = timeout
        self.session = None  # an aiohttp.ClientSession, from `open`
        self.held: list[dict[str, Any]] = []  # the messages since the last request the server answered

    async def open(self) -> None:
        import aiohttp  # here, not at import: the CLI's start stays light

        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))

    async def send(self, message: dict[str, Any]) -> None:
        if self.session is None or self.session.closed:
            return
        self.held.append(message)
        if message["type"] == "end":
            await self._post("the end message")

    async def ask(self, message: dict[str, Any], stray: Callable[[Answer], None]) -> Answer:
        """The answer in the response body; an answer to another id is a ProtocolError (`unknown_id`): one POST,
        one answer."""
        id = message["id"]
        self.held.append(message)
        answer = read_line(await self._post(f"{message['kind']} request {id}"))
        if answer.id != id:
            raise ProtocolError("unknown_id", f"an answer to {answer.id!r}, not to the open request {id!r}")
        return answer

    def abandon(self) -> None:
        self.held = []

    async def close(self) -> None:
        if self.session is not None and not self.session.closed:
            await self.session.close()

    async def _post(self, what: str) -> bytes:
        """POST the held messages; the response body. SeatDown for no 2xx answer within the timeout."""
        import aiohttp

        data = dumps({"game": self.game, "seat": self.seat, "messages": self.held}).encode()
        try:
            return await within(self._exchange(data, what), self.timeout)
        except TimeoutError:
            raise SeatDown("timeout", f"no answer to {what} in {self.timeout:g} s") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise SeatDown("crash", f"{what}: {type(exc).__name__}: {exc}") from None

    async def _exchange(self, data: bytes, what: str) -> bytes:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            async with self.session.post(self.url, data=data, allow_redirects=False,
                                         headers={"Content-Type": "application/json"}) as response:
                status = f"HTTP {response.status} {response.reason or ''}".strip()
                if response.status in SLOW_DOWN:
                    wait = retry_after(response.headers.get("Retry-After"))
                    if wait is None:
                        raise SeatDown("crash", f"{what}: {status} without a Retry-After")
                    if loop.time() + wait >= deadline:
                        raise SeatDown("timeout", f"{what}: {status} asks to wait {wait:g} s, past the request's "
                                                  f"{self.timeout:g} s")
                elif not 200 <= response.status < 300:
                    raise SeatDown("crash", f"{what}: {status}")
                else:
                    self.held = []  # delivered
                    return await _body(response)
            await asyncio.sleep(wait)


async def _body(response) -> bytes:
    """The response body, at most MAX_LINE bytes (ProtocolError `bad_json` for a longer one)."""
    body = bytearray()
    async for chunk in response.content.iter_chunked(1 << 16):
        body += chunk
        if len(body) > MAX_LINE:
            raise ProtocolError("bad_json", f"a body longer than {MAX_LINE} bytes")
    return bytes(body)


def retry_after(value: str | None) -> float | None:
    """Seconds a Retry-After header asks to wait (delay-seconds or an HTTP date); None if none can be read."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)
