"""What a seat privately knows is in every prompt it sends after it learned it, for every LLM agent kind and both
prompt layouts: a Lady of the Lake holder's result (and its night sight) in one section of each later prompt, the
belief probes' too."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.core import make_rules
from avalon_agents.host.play import play_one
from avalon_agents.narrate import announce, told_privately
from tests.helpers import scripted_setup

KINDS = ["cognitive", "baseline", "llm"]
SECTION = "What only you know (private facts"


def game(layout: str, seed: int, probes: bool = False):
    rules = make_rules("official", 8, lady_of_the_lake=True)
    setup = scripted_setup(learn=False, options={"prompt_layout": layout})
    kinds = [KINDS[i % 3] for i in range(8)]
    host = asyncio.run(play_one(rules, kinds, seed, setups=setup, probes=probes))
    return host, rules, kinds


@pytest.mark.slow  # a few games of eight LLM seats per layout
@pytest.mark.parametrize("layout", ["cache", "paper"])
def test_a_lady_holders_result_is_in_every_later_prompt_of_every_agent_kind(layout):
    checked: dict[str, int] = {kind: 0 for kind in [*KINDS, "probe"]}
    for seed in range(1, 9):  # games until a seat of every kind has held the Lady and asked its model after
        if all(checked.values()):
            break
        host, rules, kinds = game(layout, seed, probes=True)
        results = [e for e in host.engine.events if e.type == "lady_result"]
        assert results, "the Lady was used"
        calls = [r for r in host.tracer.records if r.type == "llm_call" and r.stage != "extract"]
        for event in results:
            line = announce(event, rules)
            later = [c for c in calls if c.seat == event.holder and (c.quest or 0) > event.quest]
            for call in later:
                prompt = call.messages[-1].content
                assert prompt.count(SECTION) == 1 and line in prompt.split(SECTION, 1)[1].split("\n\n", 1)[0], \
                    (kinds[event.holder - 1], call.name, call.part)
            checked[kinds[event.holder - 1]] += sum(c.stage != "probe" for c in later)
            checked["probe"] += sum(c.stage == "probe" for c in later)  # its belief probes' prompts too
    assert all(checked.values()), checked  # every kind held the Lady and asked its model after


def test_the_private_section_is_built_from_visibility_not_event_types():
    """Each kind's last prompt holds, in its one private section, exactly the lines of the events only it could
    see (night sight, its own cards, a Lady result), in order; the Lady holder's among them."""
    host, rules, kinds = game("cache", 1)
    holders = {e.holder for e in host.engine.events if e.type == "lady_result"}
    for seat in range(1, 9):
        calls = [c for c in host.tracer.records if c.type == "llm_call" and c.seat == seat and c.stage != "extract"]
        last = calls[-1].messages[-1].content
        private = [(e.quest, text) for e in host.engine.events if e.visible(seat) and told_privately(e)
                   and (text := announce(e, rules)) is not None]  # the role card is the system prompt's
        before = [text for quest, text in private if quest < calls[-1].quest]  # seen before its last call's quest
        assert last.count(SECTION) == 1, kinds[seat - 1]
        shown = last.split(SECTION, 1)[1].split("\n\n", 1)[0].splitlines()[1:]
        assert shown == [text for _, text in private][:len(shown)] and len(shown) >= len(before), kinds[seat - 1]
    assert {kinds[s - 1] for s in holders}, "a seat held the Lady"


@pytest.mark.parametrize("kind", KINDS)
def test_an_unknown_prompt_layout_is_one_line_naming_it(tmp_path, kind):
    from click.testing import CliRunner

    from avalon_agents.cli import cli

    config = tmp_path / "x.yaml"
    config.write_text(f"name: x\nmodel: scripted\nagents:\n  a: {{kind: {kind}, options: {{prompt_layout: papr}}}}\n"
                      "  bots: {kind: rulebot}\nsides: {good: a, evil: bots}\n")
    result = CliRunner().invoke(cli, ["run", str(config), "--check"])
    assert result.exit_code == 2, result.output
    assert "prompt_layout: cache or paper (got 'papr')" in result.output and "Traceback" not in result.output
