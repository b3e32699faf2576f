"""HumanAgent: a person takes a seat, in a terminal; `Terminal`: the plain lines it reads and writes."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import TextIO

from avalon_agents.agents.base import AgentBase
from avalon_agents.core.actions import ActionRequest, IllegalAction, Reply
from avalon_agents.core.events import GameEvent, GameStarted, RoleAssigned
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat, seat_name
from avalon_agents.decisions.kinds import kind_of
from avalon_agents.narrate import announce, reask, system_prompt


class InputEnded(EOFError):
    """The person's input ended before the game did."""


class Terminal:
    """The one writer of what a human seat is shown, and the reader of the lines it types (one line each).

    Args:
        input: where the lines come from (the CLI gives standard input, so answers can be piped in).
        output: where the seat's view goes (the CLI gives standard output).
    """

    def __init__(self, input: TextIO, output: TextIO) -> None:
        self.input = input
        self.output = output

    def say(self, text: str) -> None:
        self.output.write(text + "\n")
        self.output.flush()

    async def read(self) -> str:
        """The next line, without its line end; InputEnded at the end of the input. The line is read in a
        thread, so the other seats go on thinking meanwhile."""
        line = await _in_thread(self.input.readline)
        if not line:
            raise InputEnded("input ended")
        return line.rstrip("\r\n")


async def _in_thread(read: Callable[[], str]) -> str:
    """`read()` in a daemon thread: unlike asyncio.to_thread, Ctrl-C never waits for a line to be typed."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[str] = loop.create_future()

    def settle(value: str | None, error: BaseException | None) -> None:
        if not done.done():
            done.set_exception(error) if error is not None else done.set_result(value)

    def work() -> None:
        value, error = None, None
        try:
            value = read()
        except Exception as exc:  # a closed stream: the reader sees it
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop has closed meanwhile (Ctrl-C)
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name="human-input", daemon=True).start()
    return await done


class HumanAgent(AgentBase):
    """A person plays the seat: shown exactly what an LLM seat is given, answering with typed lines.

    At the start the seat's system prompt (the rules and its role card); then the host's narration of every
    event the seat may see, its night information included; for each request the host's instruction and the
    legal answers in a few words. The typed line is read by the decision kind's rule parse (decisions.kinds)
    and checked against the request; an unclear or illegal answer is asked again with the reason, in the
    host's re-ask wording, until a legal one comes.

    Args:
        seat: the seat it plays.
        seed: unused (the person is the randomness); kept for a uniform factory.
        terminal: where it reads and writes (the CLI's standard input and output).
    """

    needs_terminal = True

    def __init__(self, *, seat: Seat, seed: int = 0, terminal: Terminal) -> None:
        self.seat = seat
        self.terminal = terminal
        self.rules: RuleSet | None = None

    async def observe(self, events: Sequence[GameEvent]) -> None:
        for e in events:
            if isinstance(e, GameStarted):
                self.rules = e.rules
            elif isinstance(e, RoleAssigned):
                self.terminal.say(system_prompt(self.rules, self.seat, e.role) + "\n")
            elif (text := announce(e, self.rules)) is not None:
                self.terminal.say(text)

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        spec = kind_of(request)
        shown = instruction
        while True:
            self.terminal.say(f"\n{shown}\nYour answer ({spec.answers(request)}):")
            try:
                text = (await self.terminal.read()).strip()
            except InputEnded:
                raise InputEnded(f"human: the input ended before the game did ({seat_name(self.seat)} was asked "
                                 f"to {request.kind.value})") from None
            action = spec.parse(text, request)
            try:
                if action is None:
                    raise IllegalAction("no clear answer")
                return Reply(text=text, action=request.validate(action), source="rule")
            except IllegalAction as exc:
                shown = reask(str(exc), instruction)
