"""ExternalAgent: a program plays the seat, speaking the seat protocol (agents.protocol, docs/seats.md): as JSON
lines on its standard input and output (`command`, agents.pipes), or as HTTP POSTs to a server (`url`,
agents.web_seat). The re-asks, fallbacks and faults are here, the same over either transport."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from avalon_agents.agents.base import AgentBase
from avalon_agents.agents.pipes import Pipes
from avalon_agents.agents.protocol import Answer, ProtocolError, SeatDown, Transport, read_answer, request_message
from avalon_agents.agents.protocol import end as end_message
from avalon_agents.agents.protocol import event as event_message
from avalon_agents.agents.protocol import start as start_message
from avalon_agents.agents.web_seat import WebSeat
from avalon_agents.core.actions import Action, ActionRequest, Reply
from avalon_agents.core.events import GameEvent, GameResult, GameStarted, RoleAssigned
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat
from avalon_agents.decisions.kinds import kind_of
from avalon_agents.narrate import announce, reask, system_prompt
from avalon_agents.records.trace import SeatFault, Tracer, memory_game

TIMEOUT = 60.0
"""Seconds a program may take to answer a request (or to take in a message), by default."""
MAX_REASKS = 2
"""Answers after the first a request may take before its fallback decides (as the extractor's)."""
STRIKES = 3
"""Requests in a row decided by their fallback after which the program is asked nothing more this game."""


class ExternalAgent(AgentBase):
    """A program plays the seat: a process started when the seat learns its role and killed at the game's end (or
    when the game stops for any reason), or a server asked over one HTTP session per seat per game.

    It gets exactly what an LLM seat in its place is given: the seat's system prompt in `start`, then the host's
    narration of each event the seat may see (and the event itself), each request with the host's instruction
    and its legal answers. An answer no legal action can be read from (or one that is no JSON object) is asked
    again with the reason, as a person's is, up to `max_reasks` times; then the request kind's fallback decides
    (the extractor's, decisions.kinds). After `strikes` requests in a row so decided, after a timeout, or when
    the program ends or breaks its pipes (the server refuses, resets or answers an error status), every request
    of the rest of the game gets its fallback. Each protocol error and each fallback is a `seat_fault` trace
    record (the health counts them); the game always finishes.

    Args:
        seat: the seat it plays.
        seed: seeds the fallbacks' random choices.
        command: the program and its arguments, e.g. `["python3", "experiments/bots/random_bot.py"]`.
        url: instead of a command, the server's URL, e.g. `"http://127.0.0.1:8000/"`.
        timeout: seconds the program may take to answer one request (or to take in one message).
        tracer: where its seat_fault records go (the game's; None: kept in `faults` only).
        max_reasks: answers after the first one request may take.
        strikes: requests in a row decided by their fallback before the program is asked nothing more.
    """

    needs_tracer = True

    def __init__(self, *, seat: Seat, seed: int = 0, command: Sequence[str] | None = None, url: str | None = None,
                 timeout: float = TIMEOUT, tracer: Tracer | None = None, max_reasks: int = MAX_REASKS,
                 strikes: int = STRIKES) -> None:
        self.check_options({"command": command, "url": url, "timeout": timeout})
        self.seat = seat
        self.game = tracer.game if tracer is not None else memory_game()
        """The game's id every message carries (the tracer's: its run's id and its place in the run,
        unique across runs)."""
        self.timeout = float(timeout)
        self.transport: Transport = (Pipes([str(part) for part in command], self.timeout) if command is not None
                                     else WebSeat(url, self.game, seat, self.timeout))
        self.tracer = tracer
        self.max_reasks = max_reasks
        self.strikes = strikes
        self.rng = random.Random(seed)
        self.rules: RuleSet | None = None
        self.faults: list[SeatFault] = []
        self.down: str | None = None  # why the program is asked nothing more this game
        self._open = False
        self._asked = 0
        self._streak = 0
        self._closed = False

    @staticmethod
    def check_options(options: dict[str, Any]) -> None:
        """Raise ValueError for neither or both of `command` and `url`, a malformed one, or a `timeout` that is no
        positive number."""
        command, url = options.get("command"), options.get("url")
        if (command is None) == (url is None):
            raise ValueError(f"command or url: an external seat runs a program (command: [python3, bot.py]) or asks "
                             f"a server (url: http://127.0.0.1:8000/): give one, {'not both' if url else 'not none'}")
        if command is not None and (not isinstance(command, (list, tuple)) or not command
                                    or not all(isinstance(part, str) and part for part in command)):
            raise ValueError("command: the program and its arguments as a list of strings, e.g. "
                             "[python3, experiments/bots/random_bot.py]")
        if url is not None and not _is_http(url):
            raise ValueError(f"url: the seat's server as an http:// or https:// URL, e.g. http://127.0.0.1:8000/, "
                             f"not {url!r}")
        timeout = options.get("timeout", TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 3600:
            raise ValueError(f"timeout: seconds a request may take, above 0 and at most 3600, not {timeout!r}")

    # ------------------------------------------------------------------ the agent protocol

    async def observe(self, events: Sequence[GameEvent]) -> None:
        for e in events:
            if isinstance(e, GameStarted):
                self.rules = e.rules
            elif isinstance(e, RoleAssigned):
                if await self._start():
                    await self._send(start_message(self.game, self.seat, e.role, self.rules,
                                                   system_prompt(self.rules, self.seat, e.role)))
            else:
                await self._send(event_message(self.game, self.seat, e, announce(e, self.rules)))

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        text, near = instruction, None
        for _ in range(self.max_reasks + 1):
            if not self._ready():
                break
            self._asked += 1
            id = f"{self.seat}-{self._asked}"
            try:
                answer = await self.transport.ask(request_message(self.game, self.seat, id, request, text),
                                                  partial(self._stray, id=id, request=request))
                action = read_answer(answer, request)
            except SeatDown as exc:
                self._go_down(exc.problem, exc.detail, request)
                break
            except ProtocolError as exc:
                self._fault(exc.problem, str(exc), request)
                text = reask(str(exc), instruction)
                continue
            self._streak = 0
            if answer.action is not None:
                return Reply(text=json.dumps(answer.action), action=action, source="typed")
            return Reply(text=answer.text or "", action=action, source="rule")
        return self._fallback(request, near)

    async def on_game_end(self, result: GameResult) -> None:
        await self._send(end_message(self.game, self.seat, result))
        await self.close()

    async def close(self) -> None:
        """End the program (its process, its session). Safe to call more than once."""
        if not self._closed:
            self._closed = True
            await self.transport.close()

    # ------------------------------------------------------------------ the transport

    def _ready(self) -> bool:
        return self._open and self.down is None and not self._closed

    async def _start(self) -> bool:
        try:
            await self.transport.open()
        except SeatDown as exc:
            self._go_down(exc.problem, exc.detail)
            return False
        self._open = True
        return True

    async def _send(self, message: dict[str, Any]) -> None:
        if self._ready():
            try:
                await self.transport.send(message)
            except SeatDown as exc:
                self._go_down(exc.problem, exc.detail)

    def _stray(self, answer: Answer, *, id: str, request: ActionRequest) -> None:
        self._fault("unknown_id", f"an answer to {answer.id!r}, not to the open request {id!r}", request)

    # ------------------------------------------------------------------ faults and fallbacks

    def _fault(self, problem: str, detail: str, request: ActionRequest | None = None) -> None:
        record = SeatFault(seat=self.seat, problem=problem, detail=detail,
                           kind=request.kind.value if request else None, quest=request.quest if request else None,
                           attempt=request.attempt if request else None)
        self.faults.append(record)
        if self.tracer is not None:
            self.tracer.trace(record)

    def _go_down(self, problem: str, detail: str, request: ActionRequest | None = None) -> None:
        if self.down is None:
            self.down = f"{problem}: {detail}"
            self._fault(problem, detail, request)
            self.transport.abandon()

    def _fallback(self, request: ActionRequest, near: Action | None) -> Reply:
        action = kind_of(request).fallback(request, near, self.rng)
        why = self.down or f"no legal answer in {self.max_reasks + 1} answers"
        self._fault("fallback", why, request)
        if self.down is None:
            self._streak += 1
            if self._streak >= self.strikes:
                self._go_down("illegal", f"{self.strikes} requests in a row decided by their fallback", request)
        return Reply(text="", action=action, source="typed")


def _is_http(url: Any) -> bool:
    """An http:// or https:// URL naming a host (and, if any, a port that is a number)."""
    if not isinstance(url, str):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is no number)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)
