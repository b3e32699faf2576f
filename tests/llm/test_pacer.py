"""Rate limits as backpressure: the pacer against the loopback server's provider limits, on both call paths."""

from __future__ import annotations

import asyncio
import time

import pytest
from langchain_core.messages import HumanMessage

from avalon_agents.llm import LLMCallFailed, LLMClient, ModelSettings
from avalon_agents.llm import client as client_module
from avalon_agents.llm import pacer as pacer_module
from avalon_agents.llm.health import ModelHealth, ModelUnusable
from avalon_agents.llm.loopback import Limits, openai_server
from avalon_agents.llm.pacer import forget_pacers, read_headers, retry_after
from avalon_agents.records import MemoryTracer, Purpose
from avalon_agents.records.health import health_line
from avalon_agents.records.usage import usage

TEST = Purpose(stage="other", name="test")


@pytest.fixture(autouse=True)
def fresh_pacers(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    forget_pacers()
    yield
    forget_pacers()


def burst(llm: LLMClient, n: int, words: int = 3) -> float:
    """n calls at once; the seconds they took."""
    async def go() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(llm.call([HumanMessage(" ".join([f"w{i:03d}"] * words))], purpose=TEST, prompt_id="t")
                               for i in range(n)))
        return time.perf_counter() - start

    return asyncio.run(go())


def compatible(server, tracer, **settings) -> LLMClient:
    return LLMClient(settings=ModelSettings(spec=f"openai-compatible:m@{server.base_url}", **settings), tracer=tracer)


def chat_openai(server, tracer, monkeypatch, **settings) -> LLMClient:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return LLMClient(settings=ModelSettings(spec="openai:gpt-4o-mini", **settings), tracer=tracer)


def test_openai_and_anthropic_headers_are_read():
    told = read_headers({"x-ratelimit-limit-requests": "600", "x-ratelimit-limit-tokens": "100000",
                         "x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "99000",
                         "x-ratelimit-reset-requests": "6m0s", "x-ratelimit-reset-tokens": "250ms"})
    assert (told.rpm, told.tpm, told.requests_left, told.tokens_left) == (600, 100000, 0, 99000)
    assert told.requests_reset_s == 360.0 and told.tokens_reset_s == 0.25
    anthropic = read_headers({"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-tokens-limit": "40000"})
    assert (anthropic.rpm, anthropic.tpm) == (50, 40000)
    assert read_headers({"content-type": "application/json"}).rpm is None
    assert retry_after({"Retry-After": "2", "retry-after-ms": "1500"}) == 1.5  # the precise one wins
    assert retry_after({"Retry-After": "3"}) == 3.0 and retry_after({}) is None


# Timing: how close to a limit the pacer runs depends on the process getting the CPU when its clock says so. With
# the fast suite's two workers sharing two cores these are flaky; CI runs them alone (serial, after the other slow
# tests, which share two cores).
@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("path", ["openai-compatible", "openai"])
def test_limits_are_learned_and_429s_stay_rare(path, monkeypatch):
    """No limit set: the pacer learns 6,000 requests/min from the headers and keeps under it; 429s, if any,
    are waited out and never fail a call."""
    tracer = MemoryTracer()
    with openai_server(limits=Limits(rpm=6000)) as server:
        llm = (compatible(server, tracer) if path == "openai-compatible"
               else chat_openai(server, tracer, monkeypatch))
        elapsed = burst(llm, 150)
        refused, passed = server.state.limits.refused, len(server.state.limits.passed)
    calls = [r for r in tracer.records if r.type == "llm_call"]
    assert len(calls) == 150 == passed and all(r.outcome != "failed" for r in calls)
    assert refused <= 0.05 * (passed + refused)  # at most 5% of the requests answered 429
    assert llm.pacer.learned_rpm == 6000
    assert elapsed >= 149 / 100 * 0.9  # paced: 100 per second at most (the first one free)


@pytest.mark.slow  # timing, as above
@pytest.mark.serial
def test_a_token_limit_is_learned_and_kept(monkeypatch):
    """A "minute" of 2 s on both sides: 36 calls of about 101 tokens at 2,400 tokens per minute take three."""
    monkeypatch.setattr(pacer_module, "WINDOW_S", 2.0)
    # the minute is shortened, not the jitter between a request's start and the server's count of it: the
    # same 0.6 s margin as a real minute's (on a busy machine, or beside another pytest-xdist worker, the
    # opening burst reaches the server over a tenth of a second and more, 20 ms would meet its count)
    monkeypatch.setattr(pacer_module, "LATE", 0.6 / 2.0)
    tracer = MemoryTracer()
    with openai_server(reply=lambda body: "ok", limits=Limits(tpm=2400, quantize=False, minute_s=2.0)) as server:
        llm = compatible(server, tracer, max_tokens=8)
        elapsed = burst(llm, 36, words=100)
        limits = server.state.limits
        start = limits.passed[0][0]
        minutes = [sum(tokens for at, tokens in limits.passed if start + 2 * k <= at < start + 2 * (k + 1))
                   for k in range(2)]
    calls = [r for r in tracer.records if r.type == "llm_call"]
    assert all(r.outcome != "failed" for r in calls) and llm.pacer.learned_tpm == 2400
    assert all(m <= 2400 for m in minutes) and minutes[0] >= 0.85 * 2400  # kept under, and used
    assert elapsed >= 2.0 and limits.refused <= 2


@pytest.mark.slow  # timing, as above: a burst must outrun the limit
@pytest.mark.serial
def test_without_headers_429s_teach_the_pace_and_no_call_fails():
    tracer = MemoryTracer()
    with openai_server(limits=Limits(rpm=1200, headers=False)) as server:
        llm = compatible(server, tracer)
        burst(llm, 60)
        refused = server.state.limits.refused
    calls = [r for r in tracer.records if r.type == "llm_call"]
    assert all(r.outcome != "failed" for r in calls)
    assert refused > 0 and sum(r.throttled for r in calls) == refused  # each 429 is on its call's record
    assert llm.pacer.learned_rpm is not None and llm.pacer.from_429
    u = usage(tracer.records)
    assert u["failed_calls"] == 0 and u["throttled"] == refused
    assert f"throttled: {refused} answers 429" in health_line(u)


@pytest.mark.slow  # timing, as above
@pytest.mark.serial
def test_a_provider_that_states_limits_only_in_429s_meets_no_opening_burst():
    """1,200 requests/min, enforced per second, no headers; 60 calls at once, answers after 50 ms: the pacer starts
    with one call in flight and one more per answer, so the first 429s are a few (all 59 waiting callers at once
    met about 50 before), and what went through by then is the pace it learns."""
    tracer = MemoryTracer()
    with openai_server(latency=0.05, limits=Limits(rpm=1200, headers=False)) as server:
        llm = compatible(server, tracer)
        burst(llm, 60)
        refused = server.state.limits.refused
    calls = [r for r in tracer.records if r.type == "llm_call"]
    assert len(calls) == 60 and all(r.outcome != "failed" for r in calls)
    assert 0 < refused <= 15, refused
    assert 600 <= llm.pacer.learned_rpm <= 1200 and llm.pacer.from_429


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_user_limit_paces_without_any_429():
    tracer = MemoryTracer()
    with openai_server(limits=Limits(rpm=6000)) as server:
        llm = compatible(server, tracer, rpm=1200)  # the user's own, lower than the provider's
        elapsed = burst(llm, 21)
        refused = server.state.limits.refused
    assert refused == 0 and elapsed >= 20 / 20  # 20 per second, the first one free


def test_clients_of_one_endpoint_share_one_pacer():
    with openai_server() as server:
        a = compatible(server, None, temperature=0.1)
        b = compatible(server, None, temperature=0.9, rpm=600)
        assert a.pacer is b.pacer and a.pacer.limits()[0] == 600


def test_a_429_that_never_ends_fails_the_call_after_the_patience(monkeypatch):
    monkeypatch.setattr(client_module, "THROTTLE_PATIENCE_S", 0.3)
    monkeypatch.setattr(client_module, "BACKOFF", {"multiplier": 0.005, "max": 0.05, "exp_base": 2.0, "jitter": 0.0})
    tracer = MemoryTracer()
    with openai_server(fault_rate=1.0, faults=("429",)) as server:
        llm = compatible(server, tracer, retries=0)
        with pytest.raises(LLMCallFailed):
            burst(llm, 1)
    [record] = tracer.records
    # 429s waited out (each 50 ms) until the patience ran out: several, fewer on a loaded machine
    assert record.outcome == "failed" and record.throttled >= 2 and "429" in record.error


def test_a_used_up_quota_stops_the_run_at_once():
    health = ModelHealth("openai:gpt-4o-mini")
    from avalon_agents.llm.http import ServerError

    health.record(None)
    health.record(ServerError(429, "You exceeded your current quota", code="insufficient_quota"))
    with pytest.raises(ModelUnusable, match="no quota left"):
        health.check()


def test_ten_failed_calls_in_a_row_stop_a_run_that_had_answers():
    """A server that dies after hours of answers: the run's failure share stays low, the calls in a row do not."""
    health = ModelHealth("m")
    for _ in range(500):
        health.record(None)
    for _ in range(9):
        health.record(TimeoutError())
    health.check()  # nine: not yet
    health.record(TimeoutError())
    with pytest.raises(ModelUnusable, match="the last 10 calls to m failed one after another"):
        health.check()


def test_an_answer_that_ignores_max_tokens_is_cut_before_it_reaches_a_prompt():
    tracer = MemoryTracer()
    with openai_server(reply=lambda body: "word " * 200_000, cuts=False) as server:  # 1 MB
        llm = compatible(server, tracer, max_tokens=100)
        text = asyncio.run(llm.call([HumanMessage("hi")], purpose=TEST, prompt_id="t"))
    [record] = tracer.records
    assert len(text) == 2000 == len(record.reply) and record.cut_chars == 1_000_000 - 2000


def test_a_call_cancelled_while_it_waits_gives_its_turn_back():
    from avalon_agents.llm.pacer import Pacer

    pacer = Pacer("e", rpm=60)  # one a second

    async def go() -> int:
        first = await pacer.acquire(100, 10)
        waiting = asyncio.ensure_future(pacer.acquire(100, 10))
        await asyncio.sleep(0.05)
        waiting.cancel()
        try:
            await waiting
        except asyncio.CancelledError:
            pass
        pacer.settle(first, {}, 100, 0, 0)
        return pacer.in_flight

    assert asyncio.run(go()) == 0


def test_a_request_holds_its_max_tokens_for_the_minute(monkeypatch):
    """Providers count max_tokens against a token limit for the minute, whatever the answer used: the pacer holds
    prompt + max_tokens from a request's start until it leaves the window (an answer does not give it back; the
    provider's count replaces the prompt's estimate, and an answer over max_tokens counts whole)."""
    from avalon_agents.llm.pacer import Pacer

    monkeypatch.setattr(pacer_module, "WINDOW_S", 1.0)
    monkeypatch.setattr(pacer_module, "LATE", 0.0)
    pacer = Pacer("e", tpm=1000)

    async def go() -> tuple[float, bool, float, bool, float, float]:
        first = await pacer.acquire(400, 400)  # 100 prompt tokens (4 characters a token) + 400 reserved
        held = first.tokens
        second = asyncio.ensure_future(pacer.acquire(400, 400))  # 500 more: over 95% of 1,000
        pacer.settle(first, {}, 400, 90, 5)  # it used 95: still 90 + 400 held
        await asyncio.sleep(0)
        waits_after_the_answer = not second.done()
        admitted = await second  # once the first leaves the window, a "minute" after it started
        pacer.settle(admitted, {}, 400, 100, 600)  # a server that ignored max_tokens: 700
        return held, waits_after_the_answer, first.tokens, admitted.at - first.at, admitted.tokens, \
            pacer.in_flight

    held, waited, still_held, apart, over, in_flight = asyncio.run(go())
    assert held == 500 and waited and still_held == 490 and apart >= 1.0
    assert over == 700 and in_flight == 0


@pytest.mark.slow  # timing, as above
@pytest.mark.serial
def test_a_token_limit_that_reserves_max_tokens_sees_no_opening_burst(monkeypatch):
    """A "minute" of 2 s; the server counts each request's max_tokens (400) against 2,400 tokens per minute, for
    the minute, as OpenAI does: the pacer holds them as long, so 429s stay rare though the answers are one token
    (an estimate from the answers would let 18 requests of 500 reserved tokens in at once, and giving max_tokens
    back at the answer a few more each minute than the server lets through)."""
    monkeypatch.setattr(pacer_module, "WINDOW_S", 2.0)
    monkeypatch.setattr(pacer_module, "LATE", 0.6 / 2.0)
    tracer = MemoryTracer()
    with openai_server(reply=lambda body: "ok", latency=0.2,
                       limits=Limits(tpm=2400, quantize=False, minute_s=2.0, reserve=True)) as server:
        llm = compatible(server, tracer, max_tokens=400)
        burst(llm, 20, words=100)
        limits = server.state.limits
    calls = [r for r in tracer.records if r.type == "llm_call"]
    assert len(calls) == 20 and all(r.outcome != "failed" for r in calls)
    assert limits.refused <= 2, limits.refused
