"""gather_eager: asyncio.gather that first runs each coroutine eagerly in the caller.

Rule bots answer without ever waiting, and a task per vote costs more than the bot's decision. A
coroutine that finishes on its first step gives its result at once; one that suspends (an LLM call)
continues in a Task from exactly where it stopped, so every agent still runs concurrently. Python 3.12's
`asyncio.eager_task_factory` does the same for all tasks of a loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator, Sequence
from typing import Any


class _Resume:
    """Awaitable that hands back to the event loop the future a started coroutine is waiting on, then
    keeps driving that coroutine (what `yield from` would do)."""

    def __init__(self, coro: Coroutine, waiting: Any) -> None:
        self.coro, self.waiting = coro, waiting

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, waiting = self.coro, self.waiting
        while True:
            try:
                sent = yield waiting
            except BaseException as exc:  # cancellation and errors go into the coroutine
                try:
                    waiting = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    waiting = coro.send(sent)
                except StopIteration as stop:
                    return stop.value


async def _finish(coro: Coroutine, waiting: Any) -> Any:
    return await _Resume(coro, waiting)


async def gather_eager(coros: Sequence[Coroutine]) -> list[Any]:
    """Results of `coros` in order; those that suspend run concurrently as tasks."""
    results: list[Any] = [None] * len(coros)
    tasks: dict[int, asyncio.Task] = {}
    for i, coro in enumerate(coros):
        try:
            waiting = coro.send(None)
        except StopIteration as stop:
            results[i] = stop.value
        else:
            tasks[i] = asyncio.ensure_future(_finish(coro, waiting))
    if tasks:
        done = await asyncio.gather(*tasks.values())
        for i, value in zip(tasks, done):
            results[i] = value
    return results
