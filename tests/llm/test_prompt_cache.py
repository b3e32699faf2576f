"""Providers' prompt caches used: the loopback server caches prefixes as OpenAI does and reports them
(`usage.prompt_tokens_details.cached_tokens`), both client paths read them back into the trace, the cost line
shows the cached tokens and the dollars they saved; a provider that caches only at breakpoints (Anthropic) gets
its messages as blocks with breakpoints where the stable parts end."""

from __future__ import annotations

import asyncio
import csv
import json

import pytest
from click.testing import CliRunner
from langchain_core.messages import HumanMessage, SystemMessage

from avalon_agents.cli import cli
from avalon_agents.llm import LLMClient, ModelSettings, register_provider
from avalon_agents.llm.loopback import openai_server
from avalon_agents.llm.scripted import ScriptedChatModel
from avalon_agents.llm.stable import STABLE, stable_message
from avalon_agents.records import MemoryTracer, Purpose, read_trace
from avalon_agents.records.run_dir import COST
from avalon_agents.records.trace import LLMCall

TEST = Purpose(stage="other", name="test")


def words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(start, start + n))


@pytest.mark.parametrize("spec", ["openai-compatible:m@{url}", "openai:m"])
def test_the_loopback_caches_prefixes_as_openai_and_both_paths_record_them(spec, monkeypatch):
    """From 1,024 tokens seen before, in steps of 128: the fast path (openai-compatible, llm.http) and
    ChatOpenAI (openai:, LangchainChat) both put the server's count in the trace."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    tracer = MemoryTracer()
    long, short = words(1299), words(999, start=5000)  # with the system message: 1,300 and 1,000 tokens
    prompts = [long, long, words(1099) + " changed " + words(200, 9000), short, short, words(1299) + " more"]
    with openai_server(reply=lambda body: "fine") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        llm = LLMClient(settings=ModelSettings(spec=spec.format(url=server.base_url)), tracer=tracer)

        async def play() -> None:
            for text in prompts:
                await llm.call([SystemMessage("rules"), HumanMessage(text)], purpose=TEST, prompt_id="t", seat=1)

        asyncio.run(play())
    assert [r.input_tokens for r in tracer.records] == [1300, 1300, 1301, 1000, 1000, 1301]
    # new; the same (1,300 -> 1,280); equal for 1,100 (-> 1,024); new; under 1,024; the first 1,300 again
    assert [r.cached_tokens for r in tracer.records] == [0, 1280, 1024, 0, 0, 1280]


CONFIG = """\
name: cached
model: {{spec: "openai-compatible:m@{url}"}}
agents:
  ours: {{kind: llm}}
sides: {{good: ours, evil: ours}}
series: 1
games_per_series: 1
prices: {{m: {{input: 100.0, cached_input: 10.0, output: 400.0, date: '2026-11-28', source: a test}}}}
"""


@pytest.mark.slow  # a game's worth of calls on the loopback
def test_a_runs_cost_line_shows_the_cached_tokens_and_the_dollars_they_saved(tmp_path):
    config, out = tmp_path / "c.yaml", tmp_path / "out"
    with openai_server() as server:
        config.write_text(CONFIG.format(url=server.base_url))
        result = CliRunner().invoke(cli, ["run", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    calls = [r for game in out.glob("main/series-*/game-*") for r in read_trace(game) if isinstance(r, LLMCall)]
    cached = sum(r.cached_tokens for r in calls)
    assert cached > 0 and all(r.cached_tokens % 128 == 0 for r in calls)
    saved = cached * (100.0 - 10.0) / 1e6
    [line] = [line for line in result.output.splitlines() if ": cost: " in line]
    assert f" input ({cached:,} cached, ${saved:,.4f} saved) and " in line, line
    [row] = list(csv.DictReader(open(out / COST)))
    assert int(row["cached_tokens"]) == cached
    assert float(row["usd_uncached"]) - float(row["usd"]) == pytest.approx(saved, abs=1e-6)
    spent = ((sum(r.input_tokens for r in calls) - cached) * 100 + cached * 10
             + sum(r.output_tokens for r in calls) * 400)
    assert float(row["usd"]) == pytest.approx(spent / 1e6, abs=1e-6)


def test_a_provider_that_caches_at_breakpoints_gets_them_where_the_stable_parts_end():
    """The system message's end, the stable part's end, and where the same seat's previous stable part ended; the
    trace keeps the plain text, and an unmarked message goes as it is."""
    seen = []

    def respond(messages, kwargs):
        seen.append([m.model_copy() for m in messages])
        return "ok"

    register_provider("breaks", lambda model, settings: ScriptedChatModel(respond=respond), cache_breakpoints=True)
    tracer = MemoryTracer()
    llm = LLMClient(settings=ModelSettings(spec="breaks:m"), tracer=tracer)
    first, later = "You hold Merlin.\n\nRound 1: A proposed.", "You hold Merlin.\n\nRound 1: A proposed.\nB voted."

    async def play() -> None:
        for stable, step in ((first, "Vote?"), (later, "Speak."), (later, "   ")):
            await llm.call([SystemMessage("The rules."), stable_message(f"{stable}\n\n{step}", stable)],
                           purpose=TEST, prompt_id="t", seat=2)
        await llm.call([SystemMessage("The rules."), HumanMessage("unmarked")], purpose=TEST, prompt_id="t", seat=2)

    asyncio.run(play())
    mark = {"type": "ephemeral"}
    for messages in seen:
        assert messages[0].content == [{"type": "text", "text": "The rules.", "cache_control": mark}]
    assert seen[0][1].content == [{"type": "text", "text": first, "cache_control": mark},
                                  {"type": "text", "text": "\n\nVote?"}]
    assert seen[1][1].content == [{"type": "text", "text": first, "cache_control": mark},
                                  {"type": "text", "text": "\nB voted.", "cache_control": mark},
                                  {"type": "text", "text": "\n\nSpeak."}]
    # the same stable part again: split where the first ended, and a tail of whitespace joins the last block
    assert seen[2][1].content == [{"type": "text", "text": first, "cache_control": mark},
                                  {"type": "text", "text": "\nB voted.\n\n   ", "cache_control": mark}]
    assert seen[3][1].content == "unmarked"
    assert [r.messages[1].content for r in tracer.records][:2] == [f"{first}\n\nVote?", f"{later}\n\nSpeak."]
    assert STABLE not in json.dumps([r.model_dump(mode="json") for r in tracer.records])


def test_a_mark_that_does_not_begin_the_text_marks_nothing():
    assert stable_message("abc", "abc").additional_kwargs == {STABLE: 3}
    assert stable_message("abc", "x").additional_kwargs == {} and stable_message("abc", "").additional_kwargs == {}
