"""GameHost: drives the engine, delivers to each seat only what it may see, asks agents, records the game."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from avalon_agents import __version__, narrate
from avalon_agents.agents.base import Agent
from avalon_agents.aio import run_sync, within
from avalon_agents.core.actions import Action, ActionRequest, Reply, RequestKind
from avalon_agents.core.events import GameEvent, GameResult, QuestCompleted
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat
from avalon_agents.decisions.kinds import instruct as instruct_request
from avalon_agents.engine import AvalonEngine
from avalon_agents.extract.extractor import AskAgain
from avalon_agents.host.eager import gather_eager
from avalon_agents.host.probe import BeliefProbe
from avalon_agents.orders import FIXED, Orders, using
from avalon_agents.records import GameRecorder, Record, Tracer
from avalon_agents.records.usage import usage


class NoActionError(RuntimeError):
    """An agent replied without a typed action and no extractor is configured."""


class GameAborted(RuntimeError):
    """The game made no progress for the watchdog's time: it ends unfinished (the recorder's `abort` keeps
    why; no result, so it never counts and is replayed on resume)."""


class ActionReader(Protocol):
    """Turns an agent's reply into a legal action for the request; may ask the agent again with a reason (the
    LLM extractor, `extract.Extractor`, is one; `typed_action` another)."""

    async def __call__(self, request: ActionRequest, reply: Reply, ask_again: AskAgain | None = None,
                       instruction: str = "") -> Action: ...


class GameWatcher(Protocol):
    """Follows a game as it is played (the command line's live view): told, never asked; it changes nothing."""

    def waiting(self, request: ActionRequest) -> None:
        """The host starts waiting on a seat's answer to `request` (several at once for votes and cards)."""

    def answered(self, request: ActionRequest) -> None:
        """The wait on `request` is over (its action read, or an error)."""

    def delivered(self, events: Sequence[GameEvent]) -> None:
        """New game events, in order: all of them, private ones included."""

    def tracing(self, records: Sequence[Record]) -> None:
        """The game's trace records as they are written (its tracer's own list, which grows as the game goes: its
        LLM calls, extractions, fallbacks), told once as the game starts if it has a tracer; read, never changed."""


_watcher: ContextVar[GameWatcher | None] = ContextVar("game_watcher", default=None)


@contextmanager
def watching(watcher: GameWatcher | None) -> Iterator[None]:
    """Every host made while the block runs (in its tasks too) reports to `watcher`, unless given its own."""
    token = _watcher.set(watcher)
    try:
        yield
    finally:
        _watcher.reset(token)


async def typed_action(request: ActionRequest, reply: Reply, ask_again: AskAgain | None = None,
                       instruction: str = "") -> Action:
    """The default extractor: the agent's own typed action (the engine validates it). Free text needs the
    LLM extractor."""
    if reply.action is None:
        raise NoActionError(f"seat {request.seat} answered {request.kind.value} with text only; configure an extractor")
    return reply.action


class GameHost:
    """Runs one game between agents.

    Args:
        rules: the rules.
        agents: one agent per seat (1..players).
        seed: seeds the engine.
        instruct: words a request as the host's instruction (default: each request kind's, from
            prompts/host/).
        extract: turns a reply into a legal action.
        recorder: writes the game directory (records.recorder: the host starts it with the meta, appends the
            events, finishes it with the result and health or aborts it with the reason); None writes nothing.
        tracer: where LLM calls and extractions of this game are recorded (the recorder, or memory); the
            host sets its `step` before each step, and the LLM client stamps it on each call record.
        meta: extra entries for the game's meta (agent kinds, config, ...).
        probe: asks its seats what they believe at the end of each quest, from what each has seen; the
            answers go to the trace only, never to an agent or the events (None: no probes).
        watchdog: seconds a step (a round's preparation, one batch of requests, a probe, the game end) may take
            before the game is aborted (None: no limit).
        orders: the orders this game's wording lists players, answer options and speeches in (default: fixed,
            by seat number); current while the game plays, so every prompt of the game words lists alike, and
            recorded in the game's meta when any is shuffled. It changes words only, never the engine.
        max_failed_calls: the share of the game's LLM calls that may fail: a game over it ends as aborted (the
            reason recorded, no result: never counted, replayed on resume), since its decisions were
            made by fallbacks, not by its agents (None: no limit).
        watcher: told when the host starts and stops waiting on a seat and of each new event (default: the one
            `watching` set, if any); it changes nothing in the game.
    """

    def __init__(
        self,
        *,
        rules: RuleSet,
        agents: Mapping[Seat, Agent],
        seed: int,
        instruct: Callable[[ActionRequest], str] | None = None,
        extract: ActionReader = typed_action,
        recorder: GameRecorder | None = None,
        tracer: Tracer | None = None,
        meta: Mapping[str, Any] | None = None,
        probe: BeliefProbe | None = None,
        watchdog: float | None = None,
        orders: Orders = FIXED,
        max_failed_calls: float | None = None,
        watcher: GameWatcher | None = None,
    ) -> None:
        if sorted(agents) != list(rules.seats):
            raise ValueError(f"agents: need one agent for each seat 1..{rules.players}, got seats {sorted(agents)}")
        if probe is not None and not set(probe.seats) <= set(rules.seats):
            raise ValueError(f"probe: seats {list(probe.seats)} are not all seats of a {rules.players}-player game")
        self.rules = rules
        self.agents = dict(agents)
        self.seed = seed
        self.engine = AvalonEngine(rules, seed)
        self.instruct = instruct or (lambda request: instruct_request(request, rules))
        self.extract = extract
        self.recorder = recorder
        self.tracer = tracer or recorder
        self.meta = dict(meta or {})
        self.probe = probe
        self.watchdog = watchdog
        self.orders = orders
        self.max_failed_calls = max_failed_calls
        self.watcher = watcher or _watcher.get()
        self._inbox: dict[Seat, list[GameEvent]] = {seat: [] for seat in self.agents}
        self._seen: dict[Seat, list[GameEvent]] = {seat: [] for seat in (probe.seats if probe else ())}
        self._step_number = 0

    async def run(self) -> GameResult:
        """Play the game to its end and return the result (its orders current throughout)."""
        with using(self.orders):
            return await self._run()

    async def _run(self) -> GameResult:
        if self.recorder:
            orders = {} if self.orders.fixed else {"orders": self.orders.meta()}
            self.recorder.start({"version": __version__, "seed": self.seed,
                                 "rules": self.rules.model_dump(mode="json"), **orders, **self.meta})
        if self.watcher is not None and self.tracer is not None:
            self.watcher.tracing(self.tracer.records)  # the recorder's list, or memory's (play.trace_of)
        try:
            await self._deliver(self.engine.reset())
            await self._step(self._prepare(), "the first round's preparation")
            while not self.engine.is_over:
                requests = self.engine.pending()
                self._next_step()
                actions = await self._step(gather_eager([self._ask(r) for r in requests]),
                                           f"{requests[0].kind.value} requests of quest {requests[0].quest}."
                                           f"{requests[0].attempt}")
                new: list[GameEvent] = []
                for request, action in zip(requests, actions):
                    new += self.engine.submit(request.seat, action)
                await self._deliver(new)
                await self._step(self._probe(new), "the belief probes")
                if self._new_round(new):
                    await self._step(self._prepare(), f"the preparation of quest {self.engine.quest}")
            result = self.engine.result()
            for seat in self.agents:
                await self._flush(seat)
            self._next_step()
            await self._step(self._game_end(result), "the learning at game end")
            if self.recorder:
                self._finish(result)
            return result
        finally:
            try:
                await self._close_agents()
            finally:
                if self.recorder:
                    self.recorder.close()

    async def _game_end(self, result: GameResult) -> None:
        """Every agent's `on_game_end` at once. (A coroutine, not the bare gather: the watchdog (aio.within) cancels
        a task awaiting it on Ctrl-C or SIGTERM, which retrieves the gather's CancelledError; a bare gather future
        cancelled there printed "_GatheringFuture exception was never retrieved" after the stop line.)"""
        await asyncio.gather(*(agent.on_game_end(result) for agent in self.agents.values()))

    async def _close_agents(self) -> None:
        """Every agent's `close` (if it has one), however the game ended: a program's process never outlives it."""
        for agent in self.agents.values():
            close = getattr(agent, "close", None)
            if close is not None:
                try:
                    await close()
                except Exception:  # noqa: BLE001  (one agent's failure to close must not keep the others open)
                    continue

    def _finish(self, result: GameResult) -> None:
        """The game's record finished with its health (records.recorder), unless too many of its calls failed:
        then aborted."""
        u = usage(self.recorder.records)
        limit = self.max_failed_calls
        if limit is not None and u["llm_calls"] and u["failed_calls"] / u["llm_calls"] > limit:
            causes = ", ".join(f"{k} {v}" for k, v in u["failed_by_cause"].items())
            reason = (f"{u['failed_calls']} of {u['llm_calls']} LLM calls failed ({causes}; limit {limit:.0%}): its "
                      f"decisions were fallbacks, not its agents'")
            self.recorder.abort(reason, self._step_number, health=u)
            raise GameAborted(reason)
        self.recorder.finish(result, u)

    async def _step(self, work: Awaitable[Any], what: str) -> Any:
        """One unit of progress, under the watchdog."""
        if self.watchdog is None:
            return await work
        try:
            return await within(work, self.watchdog)
        except TimeoutError:
            reason = f"no progress for {self.watchdog:g} s during {what}"
            if self.recorder:
                self.recorder.abort(reason, self._step_number)
            raise GameAborted(reason) from None

    async def _ask(self, request: ActionRequest) -> Action:
        if self.watcher is None:
            return await self._answer(request)
        self.watcher.waiting(request)
        try:
            return await self._answer(request)
        finally:
            self.watcher.answered(request)

    async def _answer(self, request: ActionRequest) -> Action:
        agent = self.agents[request.seat]
        await self._flush(request.seat)
        instruction = self.instruct(request) if agent.reads_instructions else ""
        reply = await agent.act(request, instruction)

        async def ask_again(reason: str) -> Reply:
            return await agent.act(request, narrate.reask(reason, instruction))

        return await self.extract(request, reply, ask_again, instruction)

    def _next_step(self) -> None:
        """Tag the LLM calls that follow with a new step number (see records.critical_path)."""
        self._step_number += 1
        if self.tracer is not None:
            self.tracer.step = self._step_number

    def _new_round(self, new: Sequence[GameEvent]) -> bool:
        """A quest just ended and another begins (not the Assassin's turn, not the end)."""
        if self.engine.is_over or not any(e.type == "quest_completed" for e in new):
            return False
        return all(r.kind is not RequestKind.ASSASSINATE for r in self.engine.pending())

    async def _prepare(self) -> None:
        """A round begins: every seat gets its events and runs its `prepare()` hook (per-round thinking), all
        at once, since this work is independent across seats."""
        self._next_step()
        for seat in self.agents:
            await self._flush(seat)
        await asyncio.gather(*(agent.prepare() for agent in self.agents.values()))

    async def _probe(self, new: Sequence[GameEvent]) -> None:
        """A quest just ended: probe the seats on what each has seen up to that moment (never what follows it
        in the same batch, such as the final role reveal) and trace the answers."""
        done = next((e for e in new if isinstance(e, QuestCompleted)), None)
        if self.probe is None or done is None:
            return
        views = {seat: [e for e in seen if e.seq <= done.seq] for seat, seen in self._seen.items()}
        self._next_step()
        for record in await self.probe(rules=self.rules, quest=done.quest, views=views):
            if self.tracer:
                self.tracer.trace(record)

    async def _deliver(self, events: Sequence[GameEvent]) -> None:
        """Record new events and queue each for exactly the seats it is visible to, in order (and keep
        each probed seat's view of the game)."""
        if self.recorder:
            self.recorder.append_events(events)
        if self.watcher is not None and events:
            self.watcher.delivered(events)
        inbox = self._inbox
        for event in events:
            for seat in inbox if event.visible_to == "all" else event.visible_to:
                inbox[seat].append(event)
                if seat in self._seen:
                    self._seen[seat].append(event)

    async def _flush(self, seat: Seat) -> None:
        """The one place events reach an agent: everything queued for its seat, before it acts and at the end."""
        events = self._inbox[seat]
        if events:
            self._inbox[seat] = []
            await self.agents[seat].observe(events)


def play_game(rules: RuleSet, agents: Mapping[Seat, Agent], seed: int, **kwargs: Any) -> GameResult:
    """Run one game synchronously (a convenience around `await GameHost(...).run()`), in a script or in a
    notebook alike (`aio.run_sync`)."""
    return run_sync(GameHost(rules=rules, agents=agents, seed=seed, **kwargs).run())
