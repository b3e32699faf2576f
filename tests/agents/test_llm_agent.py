"""The vanilla LLM agent: what goes into its prompts, how history is cut, what happens when a call fails."""

from __future__ import annotations

import asyncio
import json

import pytest

from avalon_agents.agents.llm_agent import KEPT, OPENING, LLMAgent
from avalon_agents.core import make_rules
from avalon_agents.host.play import play_one
from avalon_agents.llm import ClientPool, ModelSettings, ScriptedChatModel
from avalon_agents.llm.tokens import count_tokens
from avalon_agents.narrate import announce, private_section, told_privately
from tests.helpers import scripted_setup

SEEN = "What has happened so far, as the host told you:"
SECTION = "What only you know (private facts"
LEFT_OUT = "(... lines from the middle of the game are left out here ...)"


def game(settings: ModelSettings, model=None, seed: int = 1, **options):
    setup = scripted_setup(model, settings=settings, extractor=None, options=options)
    return asyncio.run(play_one(make_rules("official", 6), ["llm"] * 6, seed, setups=setup))


def calls_of(host, seat: int) -> list[dict]:
    return [r for r in host.tracer.records if r.type == "llm_call" and r.seat == seat]


def parts(call) -> tuple[str, str, str]:
    """A cache-layout call's user message as (history, private section, instruction)."""
    history, rest = call.messages[1].content.split("\n\n" + SECTION, 1)
    private, instruction = rest.split("\n\nHost: ", 1)
    return history, SECTION + private, instruction


def test_prompts_extend_each_other_between_history_cuts_and_a_private_fact_changes_nothing_before_it():
    """The cache layout: each user prompt is the history, then the private section, then the host's instruction;
    each history starts with the previous one's (so a prompt cache resumes) except at the rare cuts, whose history
    starts later in the game; a call whose private section gained a fact (a card it played) still extends the
    previous one's history; no history exceeds the budget by more than one line."""
    host = game(ModelSettings(spec="scripted"), history_tokens=1500)
    extended_past_a_fact = all_cuts = 0
    for seat in range(1, 7):
        calls = [parts(c) for c in calls_of(host, seat)]
        seen = [announce(e, host.rules) for e in host.engine.events if e.visible(seat) and not told_privately(e)]
        seen = [text for text in seen if text is not None]
        cuts = 0
        for (history, private, _), (later, later_private, _) in zip(calls, calls[1:]):
            assert history.startswith(SEEN) and later.startswith(SEEN)
            if later.startswith(history):
                extended_past_a_fact += later_private != private
                continue
            cuts += 1
            opening, _, after = later.partition("\n" + LEFT_OUT + "\n")
            assert after and history.startswith(opening + "\n"), seat  # the opening stays, in the same words
            first_after = (history.split(LEFT_OUT + "\n", 1)[-1] if LEFT_OUT in history else
                           history[len(opening) + 1:]).split("\n")[0]
            assert seen.index(first_after) < seen.index(after.split("\n")[0]), seat  # older lines were dropped
            kept = after.split("\n")
            assert kept == seen[seen.index(kept[0]):][:len(kept)], seat  # the newest lines, in order
        assert cuts <= 3, seat  # at most a few cuts in a game
        all_cuts += cuts
        for history, private, instruction in calls:
            lines = history.split("\n")[1:]
            assert count_tokens("\n".join(lines[1:])) < 1500 and SEEN not in instruction
            assert private.split("\n")[1:] == [l for l in private.split("\n")[1:] if l]  # facts, one a line
    assert extended_past_a_fact >= 3  # facts came in the game, and the history went on being extended
    assert all_cuts >= 3  # histories were cut (each seen above keeping the opening)


def test_history_keeps_the_opening_and_the_newest_lines_and_what_only_it_knows():
    host = game(ModelSettings(spec="scripted"))
    for tokens in (300, 900):
        agent = LLMAgent(seat=1, context=scripted_setup().context(ClientPool().for_game(None)), history_tokens=tokens)
        asyncio.run(agent.observe([e for e in host.engine.events if e.visible(1)]))
        text, stable = agent.sections()
        history, private = text.split("\n\n" + SECTION, 1)
        assert stable == history and history.startswith(SEEN)  # the history is what the next prompts begin with
        assert private.splitlines()[1:] == agent.private and agent.private[0].startswith("Night:")
        assert not set(agent.private) & set(agent.seen)  # its history holds the public events
        budget = tokens - count_tokens(private_section(agent.private))
        opening = agent.opening
        assert sum(agent.sizes[:opening - 1]) < budget * OPENING <= sum(agent.sizes[:opening])  # the first lines
        kept = sum(agent.sizes[agent.start:])
        assert agent.start > opening, tokens  # a whole game outgrows each budget: cut
        # the newest lines that fit in KEPT of the budget, the newest one at least
        assert (kept <= budget * KEPT or agent.start == len(agent.seen) - 1) and \
            budget * KEPT < kept + agent.sizes[agent.start - 1]
        assert history.splitlines()[1:] == [*agent.seen[:opening], LEFT_OUT, *agent.seen[agent.start:]]


def test_the_paper_layout_puts_the_private_section_first_and_keeps_private_events_in_the_history():
    host = game(ModelSettings(spec="scripted"))
    context = scripted_setup().context(ClientPool().for_game(None))
    agent = LLMAgent(seat=1, context=context, prompt_layout="paper")
    asyncio.run(agent.observe([e for e in host.engine.events if e.visible(1)]))
    text, stable = agent.sections()
    private, history = text.split("\n\n" + SEEN, 1)
    assert stable == text and private == private_section(agent.private)
    shown = [*agent.seen[:agent.opening], *([LEFT_OUT] if agent.start > agent.opening else []), *agent.seen[agent.start:]]
    assert history.splitlines()[1:] == shown and set(agent.private) <= set(agent.seen)


def test_a_provider_caching_at_breakpoints_gets_one_after_the_history_and_one_where_the_last_ended():
    """Anthropic's way (a provider declaring cache_breakpoints): a seat's user message goes as blocks, the history
    ending at a breakpoint (split where the seat's previous history ended, when it extends it), the private section
    and the instruction after the last breakpoint, uncached; the trace keeps the plain text."""
    from avalon_agents.llm import register_provider
    from avalon_agents.llm.scripted import YOU_ARE

    model, sent = ScriptedChatModel(), []

    def respond(messages, kwargs):
        sent.append([m.model_copy() for m in messages])
        plain = [m.model_copy(update={"content": "".join(b["text"] for b in m.content)}) for m in messages]
        return model._default(plain, kwargs)

    register_provider("breaks", lambda name, settings: ScriptedChatModel(respond=respond), cache_breakpoints=True)
    host = game(ModelSettings(spec="breaks:m"))
    traced = [c for c in host.tracer.records if c.type == "llm_call"]
    assert len(sent) == len(traced) > 0
    previous: dict[int, str] = {}
    resumed = 0
    for messages, call in zip(sent, traced):
        blocks = messages[1].content
        seat = int(YOU_ARE.search(messages[0].content[0]["text"]).group(1))
        history, private, instruction = parts(call)
        assert "".join(b["text"] for b in blocks) == call.messages[1].content  # the same text, in blocks
        assert "".join(b["text"] for b in blocks if "cache_control" in b) == history
        assert "cache_control" not in blocks[-1] and blocks[-1]["text"].startswith("\n\n" + SECTION)
        if history.startswith(previous.get(seat, "\0")):
            assert blocks[0]["text"] == previous[seat]  # its first breakpoint: where the previous history ended
            resumed += 1
        previous[seat] = history
    assert resumed >= len(sent) - 6 - 6 * 3  # all but each seat's first call and its few cuts


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
