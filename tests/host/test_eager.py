"""gather_eager runs quick coroutines inline and slow ones concurrently, like asyncio.gather."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.host.eager import gather_eager


async def quick(x):
    return x * 2


SEEN: list[tuple[str, int]] = []


async def slow(x, delay=0.05):
    SEEN.append(("start", x))
    await asyncio.sleep(delay)
    await asyncio.sleep(0)
    SEEN.append(("end", x))
    return x * 3


async def broken():
    await asyncio.sleep(0.01)
    raise ValueError("boom")


def test_results_in_order_and_slow_ones_overlap():
    SEEN.clear()
    out = asyncio.run(gather_eager([quick(1), slow(2), quick(3), slow(4), slow(5)]))
    assert out == [2, 6, 6, 12, 15]
    # the three sleeps overlapped (each started before any ended), not one after another: in events, not in
    # seconds, so a slow machine cannot fail it
    assert [kind for kind, _ in SEEN] == ["start"] * 3 + ["end"] * 3


def test_errors_propagate():
    with pytest.raises(ValueError, match="boom"):
        asyncio.run(gather_eager([quick(1), broken()]))


def test_cancellation_reaches_the_coroutine():
    seen = []

    async def waits():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main():
        task = asyncio.ensure_future(gather_eager([waits()]))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == ["cancelled"]
