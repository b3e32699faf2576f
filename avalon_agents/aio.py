"""Coroutines run from synchronous code, also where an event loop is already running (Jupyter).

The package's API is awaitable: `await run_experiment(...)`, `await play_one(...)`, `await GameHost(...).run()`
run as written in a notebook cell or any coroutine. Their synchronous forms (`run_experiment_sync`, `play_game`)
go through `run_sync`, which works in a plain script and inside a running loop alike."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
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
