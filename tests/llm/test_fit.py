"""A constrained answer fits its max_tokens (llm.fit): the schema a call sends is scaled to the call's max_tokens, so
an answer that fills every string of it ends inside the schema instead of being cut (CutOff: no answer). Tested
against the loopback server acting as a constrained server does: each string filled to its maxLength, the reply cut
at max_tokens with finish_reason "length"."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from langchain_core.messages import HumanMessage

from avalon_agents.llm import LLMCallFailed, LLMClient, ModelSettings
from avalon_agents.llm.fit import CHARS_PER_TOKEN, FITS_AT, MIN_CHARS, SKELETON_TOKENS, fitted
from avalon_agents.llm.loopback import openai_server
from avalon_agents.modules.standard import ACTION_FIELD
from avalon_agents.records import MemoryTracer, Purpose

QUEST = {"type": "object", "required": ["action", "reason", "card"], "properties": {
    "action": ACTION_FIELD, "reason": {"type": "string", "maxLength": 200},
    "card": {"type": "string", "enum": ["success", "fail"]}}}
"""The combined action and answer of a quest card: what the embedded model ran to max_tokens in (96)."""


def bounds(schema: dict) -> dict[str, int]:
    return {k: v["maxLength"] for k, v in schema["properties"].items() if "maxLength" in v}


def test_a_schema_that_fits_is_sent_as_it_is():
    assert fitted(QUEST, 256) is QUEST and fitted(QUEST, None) is QUEST
    response = {"type": "string", "maxLength": 800}
    speech = {"type": "object", "properties": {"action": ACTION_FIELD, "response": response}}
    assert fitted(speech, 256) is speech  # the standard profile's combined speech: 1,100 characters at FITS_AT
    assert (256 - SKELETON_TOKENS) * CHARS_PER_TOKEN < 1100 <= (256 - SKELETON_TOKENS) * FITS_AT


def test_a_schema_that_does_not_fit_is_scaled_down_alike_and_left_unchanged_itself():
    before = copy.deepcopy(QUEST)
    small = fitted(QUEST, 96)
    assert QUEST == before  # a copy, not the caller's schema
    room = (96 - SKELETON_TOKENS) * CHARS_PER_TOKEN
    assert sum(bounds(small).values()) <= room < sum(bounds(QUEST).values())
    assert bounds(small)["action"] / 300 == pytest.approx(bounds(small)["reason"] / 200, abs=0.01)  # alike
    assert small["properties"]["card"] == QUEST["properties"]["card"]
    notes = {"type": "array", "items": {"type": "string", "maxLength": 900}}
    nested = {"type": "object", "properties": {"notes": notes}}
    assert fitted(nested, 30)["properties"]["notes"]["items"]["maxLength"] == MIN_CHARS  # at any depth, a floor


def filling(body: dict) -> str:
    """As a constrained server answers a model that writes to the limit: every string at its maxLength, in
    four-character words (a word a token at the loopback, CHARS_PER_TOKEN characters)."""
    schema = body["response_format"]["json_schema"]["schema"]
    answer = {}
    for key, prop in schema["properties"].items():
        answer[key] = prop["enum"][0] if "enum" in prop else ("abc " * (prop["maxLength"] // 4)).strip()
    return json.dumps(answer)


def ask(server, max_tokens: int) -> str:
    llm = LLMClient(settings=ModelSettings(spec=f"openai-compatible:m@{server.base_url}", max_tokens=max_tokens,
                                           retries=0), tracer=MemoryTracer())
    return asyncio.run(llm.call([HumanMessage("Play your card.")], purpose=Purpose(stage="other", name="test"),
                                prompt_id="test/p", schema=QUEST))


def test_an_answer_that_fills_its_schema_ends_inside_it(monkeypatch):
    with openai_server(reply=filling) as server:
        answer = json.loads(ask(server, 96))
        sent = server.state.requests[0]["response_format"]["json_schema"]["schema"]
    assert answer["card"] == "success" and sent == fitted(QUEST, 96)
    assert all(len(answer[k]) <= n for k, n in bounds(sent).items())
    # the same call with the schema as it was: the answer runs past max_tokens and is no answer
    monkeypatch.setattr("avalon_agents.llm.client.fitted", lambda schema, max_tokens: schema)
    with openai_server(reply=filling) as server, pytest.raises(LLMCallFailed, match="CutOff"):
        ask(server, 96)
