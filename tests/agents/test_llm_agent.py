"""The vanilla LLM agent: what goes into its prompts, how history is cut, what happens when a call fails."""

from __future__ import annotations

import asyncio
import json

import pytest

from avalon_agents.agents.llm_agent import LLMAgent
from avalon_agents.core import make_rules
from avalon_agents.host.play import play_one
from avalon_agents.llm import ClientPool, ModelSettings, ScriptedChatModel
from avalon_agents.llm.tokens import count_tokens
from avalon_agents.narrate import private_section
from tests.helpers import scripted_setup

SEEN = "What has happened so far, as the host told you:"


def game(settings: ModelSettings, model=None, seed: int = 1):
    setup = scripted_setup(model, settings=settings, extractor=None)
    return asyncio.run(play_one(make_rules("official", 6), ["llm"] * 6, seed, setups=setup))


def calls_of(host, seat: int) -> list[dict]:
    return [r for r in host.tracer.records if r.type == "llm_call" and r.seat == seat]


def test_prompts_extend_each_other_between_history_cuts():
    """Each user prompt starts with the previous one's history (so a prompt cache resumes), except at the
    rare cuts and where a private fact came (its section leads the prompt), and never exceeds the budget by more
    than one line."""
    host = game(ModelSettings(spec="scripted"))
    for seat in range(1, 7):
        histories = [c.messages[1].content.rsplit("\nHost: ", 1)[0] for c in calls_of(host, seat)]
        private = [h.split(SEEN, 1)[0] for h in histories]
        extended = sum(b.startswith(a) or p != q for a, b, p, q in zip(histories, histories[1:], private, private[1:]))
        assert extended >= len(histories) - 1 - 3, seat  # at most a few cuts in a game
        assert all(len(h.split()) < 2500 * 1.2 for h in histories)


def test_history_is_cut_to_a_third_of_the_budget_and_keeps_what_only_it_knows():
    host = game(ModelSettings(spec="scripted"))
    agent = LLMAgent(seat=1, context=scripted_setup().context(ClientPool().for_game(None)), history_tokens=300)
    asyncio.run(agent.observe([e for e in host.engine.events if e.visible(1)]))
    text = agent.history()
    private = text.split(SEEN, 1)[0].splitlines()[1:-1]
    assert private == agent.private and private[0].startswith("Night:")
    assert not set(agent.private) & set(agent.seen)  # its history holds the public events
    third = (300 - count_tokens(private_section(agent.private))) // 3
    kept = sum(agent.sizes[agent.start:])
    assert agent.start > 0 and kept <= third < kept + agent.sizes[agent.start - 1]  # the newest lines that fit
    assert agent.seen[-1] in text and agent.seen[agent.start - 1] not in text.splitlines()


def test_decisions_ask_for_json_and_speeches_for_text():
    host = game(ModelSettings(spec="scripted"))
    calls = [r for r in host.tracer.records if r.type == "llm_call"]
    for call in calls:
        assert call.constrained == (call.request != "speak"), call.request
        if call.constrained:
            assert isinstance(json.loads(call.reply), dict)
    host = game(ModelSettings(spec="scripted", constrained=False))
    assert not any(r.constrained for r in host.tracer.records if r.type == "llm_call")


def test_a_failed_call_gives_an_empty_answer_and_the_game_still_ends():
    model = ScriptedChatModel()
    count = [0]

    def respond(messages, kwargs):  # every fourth call fails (UnexpectedCall, not retried)
        count[0] += 1
        return None if count[0] % 4 == 0 else model._default(messages, kwargs)

    host = game(ModelSettings(spec="scripted", retries=0), model=ScriptedChatModel(respond=respond))
    assert host.engine.is_over
    records = host.tracer.records
    failed = [r for r in records if r.type == "llm_call" and r.outcome == "failed"]
    assert failed and all(r.reply is None for r in failed)
    extractions = [r for r in records if r.type == "extraction"]
    assert any(r.answers > 1 or r.method == "fallback" for r in extractions)


def test_a_model_whose_calls_all_fail_stops_the_game_in_one_line():
    """Not hours of fallbacks: after 10 calls failed one after another the model counts as unusable."""
    from avalon_agents.llm import ModelUnusable

    with pytest.raises(ModelUnusable, match=r"model: the last 10 calls to scripted failed one after another "
                                            r"\(last: UnexpectedCall"):
        game(ModelSettings(spec="scripted", retries=0), model=ScriptedChatModel(respond=lambda m, k: None))
