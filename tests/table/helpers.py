"""Playing the web table from tests: the answers a person would give, over HTTP (a browser's side) or straight
into the desks (the same checks, no sockets: for many games)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from avalon_agents.core.rules import make_rules
from avalon_agents.host.play import AgentSetup
from avalon_agents.table.serve import Address, TableGame, serve_table
from avalon_agents.table.server import Table

SPEECH = "I trust Player 2 more than the rest."


def answer_for(request: dict[str, Any]) -> str:
    """A person's plain answer to a request message, read off the choices the page draws from its legal answers:
    the first legal players, approve (misspelt, as people do), success, the first player offered (an
    assassination, the Lady of the Lake), a short speech."""
    legal = request["legal"]
    if "team_size" in legal:
        return ", ".join(f"Player {n}" for n in legal["players"][:legal["team_size"]])
    if "options" in legal:
        return "aprove" if "approve" in legal["options"] else legal["options"][0]
    if "players" in legal:
        return f"Player {legal['players'][0]}"
    return SPEECH


class Browser:
    """One person's side of the table over HTTP: polls the seat's state and answers each request."""

    def __init__(self, session: aiohttp.ClientSession, base: str, seat: int, token: str,
                 answer: Callable[[dict], str | None] = answer_for) -> None:
        self.session, self.base, self.seat, self.token, self.answer = session, base, seat, token, answer
        self.states: list[dict] = []
        self.posts: list[tuple[int, dict]] = []

    async def get(self) -> dict:
        async with self.session.get(f"{self.base}/api/seat/{self.seat}", params={"token": self.token}) as r:
            assert r.status == 200, await r.text()
            return await r.json()

    async def post(self, body: Any) -> tuple[int, dict]:
        async with self.session.post(f"{self.base}/api/seat/{self.seat}/answer", params={"token": self.token},
                                     json=body) as r:
            return r.status, await r.json()

    async def play(self) -> dict:
        """Answer every request until the session's last game is over; the last state."""
        answered = None
        while True:
            state = await self.get()
            self.states.append(state)
            if state["over"] and state["game"] == state["games"]:
                return state
            request = state["request"]
            if request is not None and request["id"] != answered:
                text = self.answer(request)
                if text is not None:
                    self.posts.append(await self.post({"answer": text}))
                    answered = request["id"]
            await asyncio.sleep(0.005)


async def open_table(out: Path, humans: tuple[int, ...] = (1,), players: int = 6, seed: int = 0,
                     decision_timeout: float | None = None, kinds: str = "rulebot", linger: float = 0.3,
                     lobby: bool = False, games: int = 1, lady: bool = False):
    """Start a table on a free port (the game starting at once, or with `lobby` once every person's page has
    asked for its state; `lady`: with the Lady of the Lake); returns (the serving task, the Table, its base URL)."""
    rules = make_rules("official", players, lady_of_the_lake=lady)
    seat_kinds = tuple("human" if s in humans else kinds for s in rules.seats)
    game = TableGame(rules=rules, kinds=seat_kinds, seed=seed, setup=AgentSetup(),
                     decision_timeout=decision_timeout, games=games)
    opened: asyncio.Future = asyncio.get_running_loop().create_future()

    def ready(table: Table, address: Address) -> None:
        opened.set_result((table, address.url("")))

    task = asyncio.create_task(serve_table(game, out, port=0, ready=ready, linger=linger, lobby=lobby))
    done, _ = await asyncio.wait({task, opened}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        task.result()  # raises what stopped it
    table, base = opened.result()
    return task, table, base
