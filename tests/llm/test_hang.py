"""A server that accepts connections and answers nothing: found by its silence, from the first call on, in `avalon
run` and `avalon play` alike (llm.health's hang_limit: five minutes at the default 60 s timeout, 1.5 s at the
0.3 s these tests set), ending the command with exit 3 and one line."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from langchain_core.messages import HumanMessage

from avalon_agents.cli import cli
from avalon_agents.llm import LLMClient, ModelSettings
from avalon_agents.llm.health import ModelHealth, hang_limit
from avalon_agents.llm.loopback import openai_server
from avalon_agents.records import MemoryTracer, Purpose

CONFIG = Path(__file__).resolve().parents[1] / "data" / "replay" / "config.yaml"


def test_the_hang_limit_is_five_minutes_or_five_timeouts():
    assert hang_limit(60.0) == 300.0 and hang_limit(900.0) == 300.0  # the embedded model's too
    assert hang_limit(0.3) == pytest.approx(1.5)


def test_silence_counts_while_requests_wait_and_ends_with_any_answer(monkeypatch):
    from types import SimpleNamespace

    from avalon_agents.llm import health as health_module

    clock = [100.0]  # the health's clock, moved by hand: the figures hold however slow the machine
    monkeypatch.setattr(health_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    health = ModelHealth("m")
    health.sent()
    clock[0] += 0.05
    health.came_back(heard=False)  # a timeout: the silence goes on
    clock[0] += 0.1  # nobody waits (the game between calls): not counted
    assert 1.0 - health.quiet_left(1.0) == pytest.approx(0.05)
    health.sent()
    clock[0] += 0.05
    assert not health.hung(1.0) and health.hung(0.09)  # 0.1 s of waiting in all
    assert "answered nothing for 0.09 s" in health.verdict
    health.came_back(heard=True)  # an answer (an error status too): the server lives
    assert health.quiet_left(1.0) == 1.0


def hanging_after(answers: int):
    """A reply function that answers `answers` requests, then holds every request for an hour."""
    count = [0]
    lock = threading.Lock()

    def reply(body: dict) -> str:
        with lock:
            count[0] += 1
            n = count[0]
        if n > answers:
            time.sleep(3600)
        return "I approve."

    return reply


@pytest.mark.slow  # seconds of end-to-end play
@pytest.mark.parametrize("answers", [0, 15], ids=["from-the-first-call", "mid-game"])
@pytest.mark.parametrize("command", ["play", "run"])
def test_a_hung_server_ends_play_and_run_with_exit_3_and_one_line(tmp_path, command, answers):
    with openai_server(reply=hanging_after(answers)) as server:
        spec = f"openai-compatible:m@{server.base_url}"
        args = (["play", "--seats", "llm", "--out", str(tmp_path / "out")] if command == "play" else
                ["run", str(CONFIG), "--out", str(tmp_path / "out")])
        start = time.monotonic()
        result = CliRunner().invoke(cli, [*args, "--model", spec, "--timeout", "0.3"])
        elapsed = time.monotonic() - start
        requests = len(server.state.requests)
    assert result.exit_code == 3, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.lower().startswith("error: model: ") and "answered nothing for 1.5 s" in last
    assert "Traceback" not in result.output
    # the first call alone waits three 0.3 s timeouts per attempt: the silence stops it in its second attempt
    assert elapsed < 15 and answers < requests <= answers + 20  # six seats at once, each retried


@pytest.mark.slow  # five seconds of calls
def test_a_slow_server_that_answers_is_not_hung(monkeypatch):
    """Calls one after another, each answered in 0.25 s under a 1 s timeout (0.75 s to spare: a loaded machine's
    delays are not timeouts): 5.5 s of waiting in all, past the 5 s limit, but every answer ends the silence."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    tracer = MemoryTracer()
    calls_made = 22
    with openai_server(latency=0.25) as server:
        llm = LLMClient(settings=ModelSettings(spec=f"openai-compatible:m@{server.base_url}", timeout=1.0,
                                               retries=0),
                        tracer=tracer, health=ModelHealth("m"))

        async def calls() -> None:
            for i in range(calls_made):
                await llm.call([HumanMessage(f"call {i}")], purpose=Purpose(stage="other", name="t"), prompt_id="t")

        asyncio.run(calls())
    assert hang_limit(1.0) < calls_made * 0.25
    assert [r.outcome for r in tracer.records] == ["ok"] * calls_made and llm.health.verdict is None
