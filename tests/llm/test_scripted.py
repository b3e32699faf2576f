"""The scripted model's default replies depend on the seed and the prompt only, so scripted games replay
the same whatever else shares the model and however calls interleave."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import HumanMessage

from avalon_agents.core import make_rules
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.llm import ScriptedChatModel
from tests.helpers import scripted_setup

PROMPTS = ["You are Player 2. Say something about the team.", "You are Player 5. Vote now: approve or reject?",
           "You are Player 3. Name exactly 2 players for the quest team."]


def answers(model: ScriptedChatModel, prompts: list[str]) -> dict[str, str]:
    return {p: model.invoke([HumanMessage(p)]).content for p in prompts}


def test_replies_do_not_depend_on_call_order():
    forward = answers(ScriptedChatModel(seed=4), PROMPTS)
    backward = answers(ScriptedChatModel(seed=4), PROMPTS[::-1])
    assert forward == backward
    assert answers(ScriptedChatModel(seed=5), PROMPTS) != forward  # the seed still matters


def events(host) -> list:
    return [(type(e).__name__, getattr(e, "text", None), getattr(e, "team", None)) for e in host.engine.events]


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_game_replays_the_same_when_another_game_shares_the_model():
    rules = make_rules("official", 6)

    def models(model: ScriptedChatModel) -> AgentSetup:
        return scripted_setup(model)

    alone = asyncio.run(play_one(rules, ["llm"] * 6, seed=7, setups=models(ScriptedChatModel(seed=1))))

    async def together():
        shared = models(ScriptedChatModel(seed=1))
        return await asyncio.gather(play_one(rules, ["llm"] * 6, seed=3, setups=shared),
                                    play_one(rules, ["llm"] * 6, seed=7, setups=shared))

    _, beside = asyncio.run(together())
    assert events(beside) == events(alone)
    assert len(alone.engine.events) > 30


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_the_scripted_model_keeps_a_bounded_history():
    from langchain_core.messages import HumanMessage

    from avalon_agents.llm.scripted import KEEP_CALLS

    model = ScriptedChatModel()
    for i in range(KEEP_CALLS + 50):
        model.invoke([HumanMessage(f"Say something, call {i}.")])
    assert len(model.calls) == KEEP_CALLS and "call 50." in model.calls[0]["messages"][-1]["content"]
