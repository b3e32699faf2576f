"""aio.within, the one wait with a time limit: a stop (Ctrl-C, SIGTERM: a cancellation) is never lost, even when
the work finishes in the same turn of the loop (Python 3.11's asyncio.wait_for returned the result there, and a
stopped study played on to its end); a timeout cancels the work and nothing else, the host's eager first step
included."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.aio import within
from avalon_agents.host.eager import gather_eager


def test_a_cancellation_as_the_work_finishes_reaches_the_caller():
    async def main() -> str:
        answer = asyncio.get_running_loop().create_future()
        waiting = asyncio.create_task(within(answer, 10))
        await asyncio.sleep(0)  # waiting on the answer
        answer.set_result("an answer")
        waiting.cancel()  # the stop arrives in the same turn as the answer
        try:
            return f"returned {await waiting!r}: the stop was lost"
        except asyncio.CancelledError:
            return "stopped"

    assert asyncio.run(main()) == "stopped"


async def long_work(ended: list[bool]) -> None:
    """Ten seconds of work that takes a turn or two to clean up when cancelled, then says it ended."""
    try:
        await asyncio.sleep(10)
    finally:
        await asyncio.sleep(0.01)
        ended.append(True)


def test_a_cancellation_while_waiting_cancels_the_work_and_waits_for_it_to_end():
    ended: list[bool] = []

    async def main() -> None:
        waiting = asyncio.create_task(within(long_work(ended), 10))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert ended == [True]

    asyncio.run(main())


def test_the_time_limit_raises_timeout_after_the_work_ended():
    ended: list[bool] = []

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await within(long_work(ended), 0.02)
        assert ended == [True]

    asyncio.run(main())


def test_results_errors_and_no_limit_pass_through():
    async def fails() -> None:
        await asyncio.sleep(0)
        raise ValueError("its own error")

    async def main() -> None:
        assert await within(asyncio.sleep(0, "done"), 5) == "done"
        assert await within(asyncio.sleep(0.01, "no limit"), None) == "no limit"
        with pytest.raises(ValueError, match="its own error"):
            await within(fails(), 5)

    asyncio.run(main())


def test_a_time_limit_entered_in_the_hosts_eager_first_step_cancels_only_the_work():
    """gather_eager runs an agent's first step in the host's task; the limit entered there times the work, and the
    host's task goes on (asyncio.timeout, which times the task it is entered in, would cancel the host)."""

    async def agent() -> str:
        try:
            return await within(asyncio.sleep(10), 0.02)
        except TimeoutError:
            return "timed out"

    async def host() -> list[str]:
        answers = await gather_eager([agent(), agent()])
        await asyncio.sleep(0.05)  # the host goes on after the agents' time ran out
        return answers

    assert asyncio.run(host()) == ["timed out", "timed out"]
