"""ExternalAgent: a program plays the seat, speaking the seat protocol (agents.protocol, docs/seats.md) as JSON
lines on its standard input and output."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import random
from collections.abc import Sequence
from typing import Any

from avalon_agents.agents.base import AgentBase
from avalon_agents.agents.protocol import (
    MAX_LINE,
    Answer,
    ProtocolError,
    dumps,
    read_answer,
    read_line,
    request_message,
)
from avalon_agents.agents.protocol import end as end_message
from avalon_agents.agents.protocol import event as event_message
from avalon_agents.agents.protocol import start as start_message
from avalon_agents.core.actions import Action, ActionRequest, Reply
from avalon_agents.core.events import GameEvent, GameResult, GameStarted, RoleAssigned
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat
from avalon_agents.decisions.kinds import kind_of
from avalon_agents.narrate import announce, reask, system_prompt
from avalon_agents.records.trace import SeatFault, Tracer

TIMEOUT = 60.0
"""Seconds a program may take to answer a request (or to take in a message), by default."""
MAX_REASKS = 2
"""Answers after the first a request may take before its fallback decides (as the extractor's)."""
STRIKES = 3
"""Requests in a row decided by their fallback after which the program is asked nothing more this game."""
EXIT_WAIT = 1.0
"""Seconds a program has to exit after its `end` message (and its input closed) before it is killed."""

_EOF = object()
_LIVE: set[asyncio.subprocess.Process] = set()


@atexit.register
def _kill_left() -> None:
    """The last resort: a program still running when Python exits (a loop torn down mid-game) is killed."""
    for proc in list(_LIVE):
        with contextlib.suppress(ProcessLookupError, OSError):
            if proc.returncode is None:
                proc.kill()


class ExternalAgent(AgentBase):
    """A program plays the seat: one process per seat per game, started when the seat learns its role and
    killed at the game's end (or when the game stops for any reason).

    It gets exactly what an LLM seat in its place is given: the seat's system prompt in `start`, then the host's
    narration of each event the seat may see (and the event itself), each request with the host's instruction
    and its legal answers. An answer no legal action can be read from (or a line that is no JSON object) is asked
    again with the reason, as a person's is, up to `max_reasks` times; then the request kind's fallback decides
    (the extractor's, decisions.kinds). After `strikes` requests in a row so decided, after a timeout, or when
    the program ends or breaks its pipes, every request of the rest of the game gets its fallback. Each protocol
    error and each fallback is a `seat_fault` trace record (the health counts them); the game always finishes.

    Args:
        seat: the seat it plays.
        seed: seeds the fallbacks' random choices.
        command: the program and its arguments, e.g. `["python3", "examples/random_bot.py"]`.
        timeout: seconds the program may take to answer one request (or to take in one message).
        tracer: where its seat_fault records go (the game's; None: kept in `faults` only).
        max_reasks: answers after the first one request may take.
        strikes: requests in a row decided by their fallback before the program is asked nothing more.
    """

    needs_tracer = True

    def __init__(self, *, seat: Seat, seed: int = 0, command: Sequence[str], timeout: float = TIMEOUT,
                 tracer: Tracer | None = None, max_reasks: int = MAX_REASKS, strikes: int = STRIKES) -> None:
        self.check_options({"command": command, "timeout": timeout})
        self.seat = seat
        self.command = [str(part) for part in command]
        self.timeout = float(timeout)
        self.tracer = tracer
        self.max_reasks = max_reasks
        self.strikes = strikes
        self.rng = random.Random(seed)
        self.rules: RuleSet | None = None
        self.faults: list[SeatFault] = []
        self.down: str | None = None  # why the program is asked nothing more this game
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task | None = None
        self._inbox: asyncio.Queue | None = None
        self._asked = 0
        self._streak = 0
        self._closed = False

    @staticmethod
    def check_options(options: dict[str, Any]) -> None:
        """Raise ValueError for a missing or malformed `command`, or a `timeout` that is no positive number."""
        command = options.get("command")
        if (not isinstance(command, (list, tuple)) or not command
                or not all(isinstance(part, str) and part for part in command)):
            raise ValueError("command: the program and its arguments as a list of strings, e.g. "
                             "[python3, examples/random_bot.py]")
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
                    await self._send(start_message(self.seat, self.rules.players, e.role,
                                                   system_prompt(self.rules, self.seat, e.role)))
            else:
                await self._send(event_message(e, announce(e, self.rules)))

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        text, near = instruction, None
        for _ in range(self.max_reasks + 1):
            if self.down is not None:
                break
            self._asked += 1
            id = f"{self.seat}-{self._asked}"
            if not await self._send(request_message(id, request, text)):
                break
            try:
                answer = await self._receive(id, request)
                if answer is None:  # timed out or ended: down
                    break
                action = read_answer(answer, request)
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
        await self._send(end_message(result))
        await self.close()

    async def close(self) -> None:
        """End the program: its input closed, a moment to exit, then killed. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.returncode is None:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(proc.wait()), EXIT_WAIT)
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, OSError):
                    proc.kill()
            if self._reader is not None:
                self._reader.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(proc.wait()), EXIT_WAIT)
            _LIVE.discard(proc)

    # ------------------------------------------------------------------ the pipes

    async def _start(self) -> bool:
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=MAX_LINE + 1)
        except OSError as exc:
            self._go_down("crash", f"cannot start {self.command[0]!r}: {exc.strerror or exc}")
            return False
        _LIVE.add(self._proc)
        self._inbox = asyncio.Queue()
        self._reader = asyncio.create_task(self._read(), name=f"seat-{self.seat}-reader")
        return True

    async def _read(self) -> None:
        """The one reader of the program's output: each line, read, into the inbox; _EOF at its end."""
        stream = self._proc.stdout
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # longer than MAX_LINE: asyncio drops it
                self._inbox.put_nowait(ProtocolError("bad_json", f"a line longer than {MAX_LINE} bytes"))
                continue
            except Exception as exc:  # noqa: BLE001  (a broken pipe ends the reading)
                self._inbox.put_nowait(_EOF)
                self._inbox.put_nowait(exc)
                return
            if not line:
                self._inbox.put_nowait(_EOF)
                return
            if not line.strip():
                continue
            try:
                self._inbox.put_nowait(read_line(line))
            except ProtocolError as exc:
                self._inbox.put_nowait(exc)

    async def _send(self, message: dict[str, Any]) -> bool:
        """Write one message; False (and the program down) if it cannot take it in."""
        if self.down is not None or self._proc is None or self._closed:
            return False
        try:
            self._proc.stdin.write((dumps(message) + "\n").encode())
            await asyncio.wait_for(self._proc.stdin.drain(), self.timeout)
        except TimeoutError:
            self._go_down("timeout", f"took in no message for {self.timeout:g} s")
            return False
        except (BrokenPipeError, ConnectionResetError, RuntimeError, OSError):
            self._go_down("crash", self._ended())
            return False
        return True

    async def _receive(self, id: str, request: ActionRequest) -> Answer | None:
        """The program's answer to request `id` (other ids are recorded and skipped); ProtocolError for a line
        that is no answer; None (and the program down) on a timeout or the program's end."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            try:
                item = await asyncio.wait_for(self._inbox.get(), max(deadline - loop.time(), 0))
            except TimeoutError:
                self._go_down("timeout", f"no answer to {request.kind.value} request {id} in {self.timeout:g} s",
                              request)
                return None
            if item is _EOF:
                await asyncio.sleep(0)
                self._go_down("crash", self._ended(), request)
                return None
            if isinstance(item, ProtocolError):
                raise item
            if isinstance(item, Answer):
                if item.id == id:
                    return item
                self._fault("unknown_id", f"an answer to {item.id!r}, not to the open request {id!r}", request)

    def _ended(self) -> str:
        code = self._proc.returncode if self._proc is not None else None
        return "the program ended" + (f" (exit code {code})" if code is not None else "")

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
            if self._proc is not None and self._proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, OSError):
                    self._proc.kill()  # a hung or broken program is not waited for again

    def _fallback(self, request: ActionRequest, near: Action | None) -> Reply:
        action = kind_of(request).fallback(request, near, self.rng)
        why = self.down or f"no legal answer in {self.max_reasks + 1} answers"
        self._fault("fallback", why, request)
        if self.down is None:
            self._streak += 1
            if self._streak >= self.strikes:
                self._go_down("illegal", f"{self.strikes} requests in a row decided by their fallback", request)
        return Reply(text="", action=action, source="typed")
