"""Coroutines run from synchronous code, also where an event loop is already running (Jupyter).

The package's API is awaitable: `await run_experiment(...)`, `await play_one(...)`, `await GameHost(...).run()`
run as written in a notebook cell or any coroutine. Their synchronous forms (`run_experiment_sync`, `play_game`)
go through `run_sync`, which works in a plain script and inside a running loop alike.

Every wait with a time limit goes through `within` (tests/test_layers.py holds the package to it): Python 3.11's
`asyncio.wait_for` returns the result of a wait that finished as a Ctrl-C or SIGTERM cancelled it, so the stop was
lost and a study played on to its end (CI once ran all 300 games of a run that SIGTERM had stopped after 2).
`asyncio.timeout` keeps the stop but times the task it is entered in, and the host runs an agent's first step in
its own task (host.eager), so a timeout entered there would cancel the host."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion and return its result. Without a running event loop in this thread this is
    `asyncio.run`; inside one (a Jupyter cell, a coroutine), where `asyncio.run` refuses, the coroutine runs
    on a loop of its own in a worker thread while the caller waits (the caller's loop is blocked meanwhile:
    from async code, `await` the coroutine instead)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="avalon-run-sync") as pool:
        return pool.submit(asyncio.run, coro).result()


async def within(work: Awaitable[T], seconds: float | None) -> T:
    """`work`'s result, or TimeoutError once `seconds` have passed (None: no limit) and `work`, cancelled, has
    ended (what it raised instead, if anything). `work` runs as a task of its own (as `asyncio.wait_for` runs it);
    a cancellation of the waiter always reaches the caller, even when `work` finished in the same turn of the
    loop, and `work` has ended when it does."""
    task = asyncio.ensure_future(work)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except BaseException:
        await _cancelled(task)
        raise
    if not done:
        await _cancelled(task)
        if task.cancelled():
            raise TimeoutError
    return task.result()  # (finished as the time ran out: its result, or what it raised)


async def _cancelled(task: asyncio.Future[Any]) -> None:
    """`task` cancelled and ended (its outcome retrieved: no "exception was never retrieved" at exit)."""
    task.cancel()
    try:
        await asyncio.wait({task})
    finally:
        if task.done() and not task.cancelled():
            task.exception()
