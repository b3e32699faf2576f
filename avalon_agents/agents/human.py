"""HumanAgent: a person takes a seat; `Desk`: where the person sits (`Terminal`: plain lines on a terminal; the web
table's seats, table.desk)."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import random
import threading
from collections.abc import Callable, Sequence
from typing import Protocol, TextIO

from avalon_agents.agents.base import AgentBase
from avalon_agents.agents.protocol import too_long
from avalon_agents.core.actions import Action, ActionRequest, IllegalAction, Reply
from avalon_agents.core.events import GameEvent, GameResult, GameStarted, RoleAssigned
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat, seat_name
from avalon_agents.decisions.kinds import kind_of
from avalon_agents.narrate import announce, reask, system_prompt
from avalon_agents.records.trace import SeatFault, Tracer


class InputEnded(EOFError):
    """The person's input ended before the game did."""


class NoAnswer(TimeoutError):
    """The person gave no answer in the time a decision may take (a web table's --decision-timeout)."""


class Desk(Protocol):
    """Where a person sits: shown what the seat may see, asked for its answers."""

    def show(self, text: str, event: GameEvent | None = None) -> None:
        """A line for the person: the seat's system prompt (event: its RoleAssigned), the host's narration of an
        event (`event`), or a re-ask."""

    async def ask(self, request: ActionRequest, text: str) -> str:
        """The person's answer to `request`, worded `text`. Raises InputEnded (no more answers will come) or
        NoAnswer (none came in time: the fallback decides)."""

    def decided(self, request: ActionRequest, action: Action) -> None:
        """No answer came in time (`ask` raised NoAnswer): the request kind's fallback answered `action`."""

    def end(self, result: GameResult) -> None:
        """The game is over."""


def read_answer(text: str, request: ActionRequest) -> Action:
    """The legal action a person's answer gives `request`: the decision kind's rule parse, or, for a one-word
    answer it cannot read, the one answer word it is a near spelling of (`aprove`, `rejct`, `sucess`);
    IllegalAction with the reason (the re-ask) if there is none. A speech takes any text up to MAX_SPEECH
    characters, an empty one too ("nothing to add"): the one rule for every seat, as a program's empty speech is
    taken, its longer one refused alike, and the fallback's speech is empty."""
    spec = kind_of(request)
    if spec.key is None and (why := too_long(text)) is not None:
        raise IllegalAction(why)
    action = spec.parse(text.strip(), request)
    if action is None:
        word = text.strip().strip(".!").lower()
        near = difflib.get_close_matches(word, spec.spelled, n=2, cutoff=0.75)
        if len(near) == 1 and " " not in word:
            action = spec.parse(near[0], request)
    if action is None:
        raise IllegalAction("no clear answer")
    return request.validate(action)


class Terminal:
    """A desk on a terminal: the one writer of what a human seat is shown, and the reader of the lines it types
    (one line each).

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

    def show(self, text: str, event: GameEvent | None = None) -> None:
        self.say(text + "\n" if isinstance(event, RoleAssigned) else text)

    async def ask(self, request: ActionRequest, text: str) -> str:
        self.say(f"\n{text}\nYour answer ({kind_of(request).answers(request)}):")
        return (await self.read()).strip()

    def decided(self, request: ActionRequest, action: Action) -> None:
        return None  # a terminal waits for its line: never NoAnswer

    def end(self, result: GameResult) -> None:
        return None  # the command prints the game's end


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
    """A person plays the seat: shown exactly what an LLM seat is given, answering at a desk (a terminal, or a
    web table's seat page).

    At the start the seat's system prompt (the rules and its role card); then the host's narration of every
    event the seat may see, its night information included; for each request the host's instruction (the desk
    adds the legal answers). The answer is read by the decision kind's rule parse (decisions.kinds) and checked
    against the request; an unclear or illegal answer is asked again with the reason, in the host's re-ask
    wording, until a legal one comes. A desk that gets no answer in time (NoAnswer) leaves the decision to the
    request kind's fallback (the extractor's), recorded as a `seat_fault` record (problem `fallback`).

    Args:
        seat: the seat it plays.
        seed: seeds the fallbacks' random choices.
        terminal: the desk (the CLI's standard input and output, or a web table's seat).
        tracer: where its seat_fault records go (the game's).
    """

    needs_terminal = True
    needs_tracer = True

    def __init__(self, *, seat: Seat, seed: int = 0, terminal: Desk, tracer: Tracer | None = None) -> None:
        self.seat = seat
        self.terminal = terminal
        self.tracer = tracer
        self.rng = random.Random(seed)
        self.rules: RuleSet | None = None

    async def observe(self, events: Sequence[GameEvent]) -> None:
        for e in events:
            if isinstance(e, GameStarted):
                self.rules = e.rules
            elif isinstance(e, RoleAssigned):
                self.terminal.show(system_prompt(self.rules, self.seat, e.role), e)
            elif (text := announce(e, self.rules)) is not None:
                self.terminal.show(text, e)

    async def act(self, request: ActionRequest, instruction: str) -> Reply:
        shown = instruction
        while True:
            try:
                text = await self.terminal.ask(request, shown)
            except InputEnded:
                raise InputEnded(f"human: the input ended before the game did ({seat_name(self.seat)} was asked "
                                 f"to {request.kind.value})") from None
            except NoAnswer as exc:
                return self._fallback(request, str(exc))
            try:
                return Reply(text=text, action=read_answer(text, request), source="rule")
            except IllegalAction as exc:
                shown = reask(str(exc), instruction)

    async def on_game_end(self, result: GameResult) -> None:
        self.terminal.end(result)

    def _fallback(self, request: ActionRequest, why: str) -> Reply:
        action = kind_of(request).fallback(request, None, self.rng)
        if self.tracer is not None:
            self.tracer.trace(SeatFault(seat=self.seat, problem="fallback", detail=why or "no answer in time",
                                        kind=request.kind.value, quest=request.quest, attempt=request.attempt))
        self.terminal.decided(request, action)
        return Reply(text="", action=action, source="typed")
