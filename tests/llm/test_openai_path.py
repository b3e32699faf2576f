"""The ChatOpenAI path against a real HTTP server on 127.0.0.1: usage in the ledger, latency, faults."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.messages import HumanMessage

from avalon_agents.core import make_rules
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.llm import ClientPool, LLMCallFailed, LLMClient, ModelSettings, ModelSpecError, make_model
from avalon_agents.llm.loopback import openai_server
from avalon_agents.records import MemoryTracer, Purpose

TEST = Purpose(stage="other", name="test")

SECRET = "sk-test-SECRET-do-not-log-0123456789"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)


@pytest.fixture
def quick_backoff(monkeypatch):
    """Retries wait milliseconds instead of 0.2 s and up (the same exponential backoff with jitter): the fault
    tests retry dozens of times."""
    from avalon_agents.llm import client as client_module

    monkeypatch.setattr(client_module, "BACKOFF", {"multiplier": 0.005, "max": 0.05, "exp_base": 2.0, "jitter": 0.005})


def client(server, tracer, **config) -> LLMClient:
    spec = f"openai-compatible:loopback@{server.base_url}"
    return LLMClient(settings=ModelSettings(spec=spec, **config), tracer=tracer)


def call(llm: LLMClient, text: str = "Say something.", schema=None) -> str:
    return asyncio.run(llm.call([HumanMessage(text)], purpose=TEST, prompt_id="test/p", seat=3, schema=schema))


def test_reply_tokens_latency_and_no_key_in_the_ledger():
    tracer = MemoryTracer()
    with openai_server(reply=lambda body: "four words of reply", latency=0.05) as server:
        text = call(client(server, tracer), "one two three")
        headers = server.state.headers
    assert text == "four words of reply"
    [record] = tracer.records
    assert record.type == "llm_call" and record.seat == 3 and record.purpose == TEST
    assert record.prompt_id == "test/p" and len(record.prompt_hash) == 16
    assert record.input_tokens == 3 and record.output_tokens == 4 and record.tokens_source == "provider"
    assert record.latency_s >= 0.05 and record.outcome == "ok" and record.attempts == 1
    assert SECRET not in headers[0]["authorization"]  # the OpenAI key is for OpenAI only
    assert SECRET not in record.model_dump_json()


def test_a_server_key_comes_only_from_the_variable_the_user_names(monkeypatch):
    own = "sk-own-server-key-42"
    monkeypatch.setenv("MY_SERVER_KEY", own)
    tracer = MemoryTracer()
    with openai_server() as server:
        call(client(server, tracer, api_key_env="MY_SERVER_KEY"))
        headers = server.state.headers
    assert headers[0]["authorization"] == f"Bearer {own}"
    record = tracer.records[0].model_dump_json()
    assert own not in record and "MY_SERVER_KEY" in record  # the variable's name is recorded, never the key
    with pytest.raises(ValueError, match="keys come from the environment only"):
        ModelSettings(spec="scripted", kwargs={"api_key": own})
    monkeypatch.delenv("MY_SERVER_KEY")
    with pytest.raises(ModelSpecError, match="MY_SERVER_KEY, which is not set"):
        make_model(ModelSettings(spec=f"openai-compatible:m@{server.base_url}", api_key_env="MY_SERVER_KEY"))


def test_no_key_over_plain_http_to_another_machine_without_opt_in(monkeypatch):
    monkeypatch.setenv("MY_SERVER_KEY", "sk-x")
    remote = ModelSettings(spec="openai-compatible:m@http://10.1.2.3:8000/v1", api_key_env="MY_SERVER_KEY")
    with pytest.raises(ModelSpecError, match="refusing to send MY_SERVER_KEY over plain http to 10.1.2.3"):
        make_model(remote)
    make_model(remote.model_copy(update={"key_over_http": True}))  # the user said so
    make_model(remote.model_copy(update={"spec": "openai-compatible:m@https://10.1.2.3/v1"}))  # https is fine


def test_constrained_call_sends_the_schema(loopback):
    schema = {"type": "object", "properties": {"vote": {"type": "string", "enum": ["approve", "reject"]}}}
    text = call(client(loopback, MemoryTracer()), "Vote.", schema=schema)
    body = loopback.state.requests[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == schema
    assert json.loads(text)["vote"] in ("approve", "reject")


def test_settings_reach_the_request():
    with openai_server() as server:
        tracer = MemoryTracer()
        call(client(server, tracer, temperature=0.7, max_tokens=33, kwargs={"seed": 5, "top_p": 0.9}))
        body = server.state.requests[0]
    assert body["temperature"] == 0.7 and body["model"] == "loopback"
    assert body["seed"] == 5 and body["top_p"] == 0.9  # extra keyword arguments reach the request
    used = tracer.records[0].settings  # the record carries the settings actually used
    assert used["temperature"] == 0.7 and used["max_tokens"] == 33 and used["kwargs"] == {"seed": 5, "top_p": 0.9}
    assert body["max_completion_tokens"] == 33 and body["max_tokens"] == 33  # llama.cpp's server reads the latter


@pytest.mark.parametrize("fault", ["500", "timeout", "empty", "garbage"])  # a 429: tests/llm/test_pacer.py
@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_each_fault_is_retried_and_recorded(fault, quick_backoff):
    tracer = MemoryTracer()
    with openai_server(fault_rate=1.0, faults=(fault,), timeout_sleep=1.0) as server:
        llm = client(server, tracer, retries=1, timeout=0.3)
        with pytest.raises(LLMCallFailed):
            call(llm)
        asked = len(server.state.requests)
    [record] = tracer.records
    assert record.outcome == "failed" and record.attempts == 2 == asked
    assert record.reply is None and record.error


def test_a_fault_then_success_is_retried(quick_backoff):
    tracer = MemoryTracer()
    with openai_server(fault_rate=0.5, faults=("500",), seed=3) as server:
        llm = client(server, tracer, retries=5)
        for _ in range(10):
            call(llm)
        injected = len(server.state.injected)
    outcomes = [r.outcome for r in tracer.records]
    assert injected > 0 and "retried" in outcomes
    assert sum(r.attempts - 1 for r in tracer.records) == injected


def test_streaming_through_chatopenai_reports_usage():
    with openai_server(reply=lambda body: "a streamed reply of seven words here") as server:
        model = make_model(f"openai-compatible:loopback@{server.base_url}")

        async def stream() -> tuple[str, dict]:
            text, usage = "", {}
            async for chunk in model.astream([HumanMessage("hi there")], stream_usage=True):
                text += str(chunk.content)
                usage = chunk.usage_metadata or usage
            return text, usage

        text, usage = asyncio.run(stream())
        assert server.state.requests[0]["stream"] is True
    assert text == "a streamed reply of seven words here"
    assert usage["output_tokens"] == 7 and usage["input_tokens"] == 2


@pytest.mark.slow  # seconds; the slow suite (CI) runs it
@pytest.mark.serial  # its 0.3 s timeouts race the loopback server's clock: beside another worker, a request the
# client gave up on may not have reached the server yet (280 attempts for 275 requests, seen under load)
def test_games_finish_under_faults_and_every_fault_is_in_the_trace(quick_backoff):
    rules = make_rules("official", 6)
    with openai_server(fault_rate=0.2, timeout_sleep=0.6, seed=11) as server:
        spec = f"openai-compatible:loopback@{server.base_url}"
        models = AgentSetup(clients=ClientPool(), settings=ModelSettings(spec=spec, retries=1, timeout=0.3))
        records = []
        for seed in range(2):
            host = asyncio.run(play_one(rules, ["llm"] * 6, seed, setups=models))
            assert host.engine.is_over
            records += host.tracer.records
        requests, injected = len(server.state.requests), list(server.state.injected)
    calls = [r for r in records if r.type == "llm_call"]
    extractions = [r for r in records if r.type == "extraction"]
    assert len(injected) > 5 and {"429", "500", "timeout", "empty", "garbage"} <= set(injected)
    # every HTTP request is accounted for: an attempt, or a 429 waited out (not an attempt, not a failure)
    assert sum(r.attempts + r.throttled for r in calls) == requests
    assert sum(r.throttled for r in calls) == injected.count("429")
    failed_last = sum(r.outcome == "failed" for r in calls)
    assert sum(r.attempts for r in calls) - len(calls) + failed_last == len(injected) - injected.count("429")
    assert failed_last > 0 and any(r.outcome == "retried" for r in calls)
    # a failed call reaches the extractor as an empty answer, which is asked again
    assert any("" in r.texts and r.answers > 1 and r.valid is False for r in extractions)
    assert not any(SECRET in r.model_dump_json() for r in records)


def test_response_cache_answers_a_repeated_prompt_without_a_request():
    tracer = MemoryTracer()
    with openai_server() as server:
        llm = client(server, tracer, cache=True)

        async def twice() -> tuple[str, str]:
            return (await llm.call([HumanMessage("same")], purpose=TEST, prompt_id="t"),
                    await llm.call([HumanMessage("same")], purpose=TEST, prompt_id="t"))

        first, second = asyncio.run(twice())
        asked = len(server.state.requests)
    assert first == second and asked == 1
    assert [r.outcome for r in tracer.records] == ["ok", "ok"]


def test_rate_limit_spaces_the_requests():
    import time

    with openai_server() as server:
        llm = client(server, MemoryTracer(), requests_per_second=10)

        async def burst() -> float:
            start = time.perf_counter()
            await asyncio.gather(*(llm.call([HumanMessage(f"n{i}")], purpose=TEST, prompt_id="t") for i in range(6)))
            return time.perf_counter() - start

        elapsed = asyncio.run(burst())
    assert elapsed >= 0.45  # 6 requests at 10 per second, the first one free


def test_openai_spec_goes_through_chatopenai_and_compatible_servers_through_the_thin_client(monkeypatch):
    from avalon_agents.llm.chat import LangchainChat
    from avalon_agents.llm.http import OpenAIHTTP

    with openai_server(reply=lambda body: "three word reply") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)  # ChatOpenAI reads it: OpenAI's path, real HTTP
        tracer = MemoryTracer()
        openai_client = LLMClient(settings=ModelSettings(spec="openai:gpt-4o-mini", max_tokens=40), tracer=tracer)
        compatible = client(server, tracer)

        async def both() -> tuple[str, str, object, object]:
            return (await openai_client.call([HumanMessage("hi")], purpose=TEST, prompt_id="t"),
                    await compatible.call([HumanMessage("hi")], purpose=TEST, prompt_id="t"),
                    openai_client.chat, compatible.chat)

        first, second, chat1, chat2 = asyncio.run(both())
        headers = server.state.headers
        bodies = server.state.requests
    assert first == second == "three word reply"
    assert isinstance(chat1, LangchainChat) and type(chat1.model).__name__ == "ChatOpenAI"
    assert isinstance(chat2, OpenAIHTTP)
    assert headers[0]["authorization"] == f"Bearer {SECRET}"  # OpenAI gets the OpenAI key
    assert headers[1]["authorization"] != f"Bearer {SECRET}"  # a compatible server does not
    assert bodies[0]["model"] == "gpt-4o-mini" and bodies[0]["max_completion_tokens"] == 40
    assert [r.tokens_source for r in tracer.records] == ["provider", "provider"]


def test_the_thin_client_keeps_connections_and_closes_them_with_the_loop():
    from avalon_agents.llm import http

    with openai_server() as server:
        llm = client(server, MemoryTracer())

        async def calls() -> object:
            await asyncio.gather(*(llm.call([HumanMessage(f"n{i}")], purpose=TEST, prompt_id="t") for i in range(8)))
            for _ in range(4):
                await llm.call([HumanMessage("again")], purpose=TEST, prompt_id="t")
            [session] = http._sessions[asyncio.get_running_loop()].values()
            return session

        session = asyncio.run(calls())
        asked = len(server.state.requests)
        opened = len(set(server.state.peers))
    assert asked == 12 and session.closed  # asyncio.run's shutdown closed the loop's session
    assert opened <= 8  # the four calls after the burst reuse its connections
