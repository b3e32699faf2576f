"""The baseline's retrieval after the speed-ups: on a fixed game its reflection prompts (the messages it
retrieved per question) are those of the plain forward pass on the event loop; a snapshot of the messages
retrieves as the live list does, and vectors are computed once per message."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from avalon_agents.agents.baseline import BaselineAgent, Message, informativeness
from avalon_agents.core import make_rules
from avalon_agents.host.play import play_one
from avalon_agents.llm import ClientPool
from avalon_agents.stores import embeddings
from tests.helpers import scripted_setup

MIXED = ["cognitive", "baseline"] * 3


def reflect_prompts(seed: int) -> list[tuple[int, str]]:
    host = asyncio.run(play_one(make_rules("official", 6), MIXED, seed, setups=scripted_setup()))
    return sorted((r.seat, r.messages[-1].content) for r in host.tracer.records
                  if r.type == "llm_call" and r.part == "reflect")


@pytest.mark.slow
def test_reflections_retrieve_what_the_reference_forward_pass_retrieves(monkeypatch):
    fast = reflect_prompts(3)
    model = embeddings.MiniLM()  # a fresh model (empty cache) with the plain forward pass
    monkeypatch.setattr(model, "_forward", model._forward_reference)
    monkeypatch.setattr(embeddings, "embedder", lambda spec=embeddings.EMBEDDINGS: model)
    assert reflect_prompts(3) == fast
    assert len(fast) > 10 and all("Related messages:" in prompt for _, prompt in fast)


def test_a_snapshot_retrieves_as_the_live_list_and_encodes_each_message_once():
    texts = ["Quest 1 failed with 1 fail card; the team was Player 2 and Player 5.",
             'Player 4 said: "I like pizza and sunny weather."',
             'Player 3 said: "The weather is lovely today."']
    questions = ["Which players were on the teams of failed quests?", "How is the weather?"]
    context = scripted_setup().context(ClientPool().for_game(None))
    live, snap = BaselineAgent(seat=1, context=context), BaselineAgent(seat=1, context=context)
    for agent in (live, snap):
        agent.messages = [Message(t, 1, informativeness(t)) for t in texts[:2]]
    assert asyncio.run(snap._retrieve(questions, list(snap.messages))) == asyncio.run(live._retrieve(questions))
    for agent in (live, snap):
        agent.messages.append(Message(texts[2], 1, informativeness(texts[2])))
    snapshot = list(snap.messages)
    snap.messages.append(Message("a later message", 1, 0))  # arrives while the snapshot is being searched
    assert asyncio.run(snap._retrieve(questions, snapshot)) == asyncio.run(live._retrieve(questions))
    assert len(snap.vectors) == 3 and np.array_equal(snap.vectors, live.vectors)
