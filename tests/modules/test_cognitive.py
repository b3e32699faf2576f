"""The cognitive agent with the scripted model: which prompts go out, in what order, with which sections;
every ablation switch; analysis scope; cadence; re-asks; experience carried to the next game."""

from __future__ import annotations

import asyncio
import re
from collections import Counter

import pytest

from avalon_agents.core import make_rules
from avalon_agents.core.types import Role
from avalon_agents.host.play import play_one
from avalon_agents.llm import ScriptedChatModel
from avalon_agents.modules import AgentConfig, ExperienceBook, load_agent_config
from tests.helpers import scripted_setup

SECTIONS = {
    "summary": "Summary of the earlier rounds:",
    "analysis": "Your analysis of the other players:",
    "plan": "Your current plan:",
    "action": "The action you chose (private",
}


def play(config: AgentConfig | None = None, seed: int = 3, book: ExperienceBook | None = None, model=None,
         kinds=None, layout: str | None = None):
    setup = scripted_setup(model, agent_config=config, experience=book or ExperienceBook(),
                           options={"prompt_layout": layout} if layout else {})
    host = asyncio.run(play_one(make_rules("official", 6), kinds or ["cognitive"] * 6, seed, setups=setup))
    return host, host.tracer.records


def calls(records, seat=None):
    return [r for r in records if r.type == "llm_call" and r.stage != "extract"
            and (seat is None or r.seat == seat)]


def user_prompt(call) -> str:
    return call.messages[-1].content


def module_of(call) -> str:
    return call.name


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_round_modules_run_in_order_once_per_round_then_one_call_per_request():
    host, records = play()
    for seat in range(1, 7):
        seq = [module_of(c) for c in calls(records, seat)]
        rounds = [c.quest for c in calls(records, seat) if c.name == "plan"]
        assert rounds == sorted(set(rounds)), "planning runs once per round"
        assert seq[:2] == ["analysis", "plan"]  # round 1: nothing to summarize yet
        for i, name in enumerate(seq):
            if name == "summary":
                assert seq[i + 1: i + 3] == ["analysis", "plan"]
        requests = sum(1 for r in records if r.type == "extraction" and r.seat == seat)
        answers = sum(1 for c in calls(records, seat) if c.name == "action+response")
        speeches = sum(1 for e in host.engine.events if e.type == "speech" and e.seat == seat)
        assert answers == requests + speeches  # one combined call per request


def test_slots_fill_and_later_prompts_carry_them():
    _, records = play()
    modules = [r for r in records if r.type == "module"]
    assert {r.slot for r in modules} >= {"summary", "analysis", "plan", "action", "response", "experience"}
    late = [c for c in calls(records) if c.name == "action+response" and c.quest >= 2]
    assert late and all(all(title in user_prompt(c) for title in SECTIONS.values() if "action" not in title)
                        for c in late)
    summary_call = next(c for c in calls(records) if c.name == "summary")
    assert "The game since then:" not in user_prompt(summary_call)  # its first: nothing summarized yet
    assert "Now: Summary, as Player" in user_prompt(summary_call).split("The game so far:")[1]  # the game, the step
    assert "How you work" in summary_call.messages[0].content  # the steps' standing instructions: the system's
    _, records = play(layout="paper")
    summary_call = next(c for c in calls(records) if c.name == "summary")
    assert '"message_type": "public"' in user_prompt(summary_call)  # the paper's JSON conversation shape


def test_a_seats_prompts_start_with_its_previous_ones_stable_part():
    """The cache layout: the system message, what the seat privately knows, the summary and the round's public
    entries come first, the module outputs and the task last, so within a round each of a seat's prompts (the
    round's summary, analysis and plan, every answer) starts with everything before the previous prompt's
    module outputs and task. (Seed 4: a game whose rounds fit the history budget.)"""
    _, records = play(seed=4)
    pairs = grown = 0
    for seat in range(1, 7):
        seated = calls(records, seat)
        for a, b in zip(seated, seated[1:]):
            if a.quest != b.quest or "experience" in (a.name, b.name):
                continue
            pairs += 1
            head = re.split(r"\n\n(?:Your analysis of|Your current plan|The action you chose|The host's instruction"
                            r"|Your previous plan|Now:)", user_prompt(a))[0]
            grown += user_prompt(b).startswith(head) and a.messages[0].content == b.messages[0].content
    assert pairs > 40 and grown / pairs > 0.8  # the rest: the round outgrew the history budget


def test_within_a_round_a_seats_answers_only_grow_at_the_end_in_the_papers_layout():
    """The paper's layout keeps its stable sections (summary, analysis, plan) before the round's entries: within
    a round everything before the instruction is a prefix of the seat's next answer."""
    _, records = play(seed=4, layout="paper")
    pairs = grown = 0
    for seat in range(1, 7):
        answers = [c for c in calls(records, seat) if c.name == "action+response"]
        for a, b in zip(answers, answers[1:]):
            if a.quest != b.quest:
                continue
            pairs += 1
            head = user_prompt(a).split("\n\nThe host's instruction:")[0]
            grown += user_prompt(b).startswith(head) and len(user_prompt(b)) > len(head)
    assert pairs > 20 and grown / pairs > 0.8  # the rest: the round outgrew the history budget


def test_system_prompt_is_rules_plus_role_card():
    host, records = play()
    for call in calls(records):
        system = call.messages[0].content
        role = host.engine.roles[call.seat].value
        assert f"Role: {role}" in system and "Goal:" in system and "Strategy:" in system


@pytest.mark.parametrize("slot", ["summary", "analysis", "plan", "action", "experience"])
@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_each_module_can_be_switched_off(slot):
    _, records = play(AgentConfig().without(slot))
    sent = Counter(module_of(c) for c in calls(records))
    if slot == "action":
        assert sent["action+response"] == 0 and sent["response"] > 0
    else:
        assert sent[slot] == 0 and sent["action+response"] > 0
    if slot in SECTIONS:
        assert not any(SECTIONS[slot] in user_prompt(c) for c in calls(records))
    if slot == "summary":  # without a summary, prompts show the raw recent entries
        assert any("The game so far:" in user_prompt(c) for c in calls(records))


def test_uncombined_action_is_a_separate_private_call_before_the_response():
    config = AgentConfig.model_validate({"action": {"options": {"combine": False}}})
    _, records = play(config)
    seq = [module_of(c) for c in calls(records, 1)]
    assert "action+response" not in seq
    for i, name in enumerate(seq):
        if name == "response":
            assert seq[i - 1] == "action"
    responses = [c for c in calls(records, 1) if module_of(c) == "response"]
    assert SECTIONS["action"] in user_prompt(responses[0])
    # as in the paper's code, the response step sees the plan and the action, not the analysis
    late = [c for c in responses if c.quest >= 2]
    assert late and not any(SECTIONS["analysis"] in user_prompt(c) for c in late)
    assert all(SECTIONS["plan"] in user_prompt(c) for c in late)
    shown = AgentConfig.model_validate({"action": {"options": {"combine": False}},
                                        "response": {"options": {"analysis": True}}})
    _, records = play(shown)
    late = [c for c in calls(records, 1) if module_of(c) == "response" and c.quest >= 2]
    assert late and all(SECTIONS["analysis"] in user_prompt(c) for c in late)


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_per_turn_cadence_runs_analysis_and_planning_before_every_answer():
    config = AgentConfig.model_validate({"analysis": {"options": {"cadence": "per_turn"}},
                                         "planning": {"options": {"cadence": "per_turn"}}})
    _, records = play(config)
    seq = [module_of(c) for c in calls(records, 2)]
    answers = [i for i, name in enumerate(seq) if name == "action+response"]
    assert all(seq[i - 2: i] == ["analysis", "plan"] for i in answers)


# the players named: in the whole task (the paper layout) or in the step's line (the cache layout)
SCOPE = re.compile(r"(?:the strategy of each of these players: |Now: Analysis, as Player \d+, the [^,]+, of )(.+?)"
                   r"(?:\. Point out|, in at most)")


@pytest.mark.parametrize("scope", ["all", "teammates", "adversaries"])
@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_analysis_scope_follows_what_the_seat_knows(scope):
    host, records = play(AgentConfig.model_validate({"analysis": {"options": {"scope": scope}}}))
    roles = host.engine.roles
    evil = {s for s, r in roles.items() if r.side.value == "evil"}
    for call in calls(records):
        if call.name != "analysis":
            continue
        seat, role = call.seat, roles[call.seat]
        named = {int(n) for n in re.findall(r"Player (\d+)", SCOPE.search(user_prompt(call)).group(1))}
        others = set(roles) - {seat}
        if scope == "all":
            expected = others
        elif role.side.value == "evil":
            expected = (evil - {seat}) if scope == "teammates" else others - evil
        elif role is Role.MERLIN:
            expected = others - evil if scope == "teammates" else evil
        else:  # Percival and Loyal Servants know no one for sure
            expected = others
        assert named == expected, (scope, role, named)


def test_reask_reruns_only_action_and_response():
    def respond(messages, kwargs):
        if "Your answer could not be used" in str(messages[-1].content):
            return None if kwargs.get("response_format") is None else '{"action": "vote - approve", ' \
                '"reason": "fine", "vote": "approve"}'
        return None

    scripted = ScriptedChatModel()
    model = ScriptedChatModel(respond=lambda m, kw: respond(m, kw) or scripted._default(m, kw))
    _, records = play(model=model)
    assert calls(records)  # the game ran; re-asks (if any) only repeat the answer call
    for r in records:
        if r.type == "extraction" and r.answers > 1:
            seat, quest, attempt = r.seat, r.quest, r.attempt
            same = [module_of(c) for c in calls(records, seat) if c.quest == quest and c.attempt == attempt]
            assert same.count("analysis") <= 1


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_experience_reaches_the_next_games_role_card():
    def respond(messages, kwargs):
        text = str(messages[-1].content)
        if "Write only the strategy" in text:
            role = re.search(r"Rewrite your strategy for the (.+?) in at most", text).group(1)
            return f"LEARNED strategy for {role}: keep calm."
        if "how each role other than" in text:
            return "NOTES: Merlin hints, the Assassin watches."
        return None

    scripted = ScriptedChatModel()
    model = ScriptedChatModel(respond=lambda m, kw: respond(m, kw) or scripted._default(m, kw))
    book = ExperienceBook()
    first, _ = play(book=book, model=model, seed=1)
    second, records = play(book=book, model=model, seed=2)
    learned = {r for r in first.engine.roles.values()}
    for call in calls(records):
        role = second.engine.roles[call.seat]
        system = call.messages[0].content
        if role in learned:
            assert f"Strategy: LEARNED strategy for {role.value}: keep calm." in system
            if call.name in ("analysis", "plan", "action+response"):
                assert "NOTES: Merlin hints" in user_prompt(call)


@pytest.mark.parametrize(("switch", "absent"), [("improve_strategy", ("suggestions", "strategy")),
                                                ("other_roles", ("other_roles",))])
def test_experience_switches(switch, absent):
    _, records = play(AgentConfig.model_validate({"experience": {"options": {switch: False}}}))
    purposes = {f"{c.name}/{c.part}" for c in calls(records)}
    for part in absent:
        assert f"experience/{part}" not in purposes
    assert any(p.startswith("experience/") for p in purposes)


@pytest.mark.parametrize(("yaml_text", "field"), [
    ("analysis: {options: {scope: friends}}", "analysis.options.scope"),
    ("planing: {enabled: false}", "planing"),
    ("action: {use: nonexistent}", "action.use"),
    ("response: {enabled: false}", "response.enabled"),
    ("summary: {on: false}", "summary"),  # YAML reads `on` as true: the key is `enabled`
    ("temperature: hot", "temperature"),
    ("analysis: [1, 2]", "analysis"),
])
def test_bad_agent_config_names_the_field(tmp_path, yaml_text, field):
    path = tmp_path / "agent.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ValueError) as err:
        load_agent_config(path)
    assert field in str(err.value) and str(path) in str(err.value)


def test_mixed_table_with_rule_bots_and_vanilla_llm():
    host, records = play(kinds=["cognitive", "rulebot", "llm", "cognitive", "random", "rulebot"])
    assert host.engine.is_over
    assert {c.seat for c in calls(records)} == {1, 3, 4}


def steps_of(config: AgentConfig) -> list[str]:
    """The step names the "How you work" section lists for these modules (modules.sections.standing)."""
    from avalon_agents.modules.sections import standing

    text = standing(config.build(None, None).values())
    return [line[2:].split(":")[0].split(" (")[0].split(",")[0] for line in text.splitlines() if line.startswith("- ")]


def test_the_system_message_says_each_enabled_steps_standing_instruction_once():
    """The cache layout's system message ends with the standing instruction of each step the seat's modules take,
    in the order they run; an ablated module's step is not there; the uncombined action is its own step."""
    assert steps_of(AgentConfig()) == ["Summary", "Analysis", "Plan", "Action and answer", "Answer"]
    assert steps_of(AgentConfig().without("analysis", "summary")) == ["Plan", "Action and answer", "Answer"]
    assert steps_of(AgentConfig.model_validate({"action": {"options": {"combine": False}}}))[3] == "Action"
    _, records = play(AgentConfig().without("analysis"))
    system = calls(records, 1)[0].messages[0].content
    assert system.count("How you work") == 1 and "\n- Plan:" in system and "\n- Analysis:" not in system
    sent = calls(records, 1)
    assert all(user_prompt(c).splitlines()[-1].startswith("Now: ") for c in sent if c.name != "experience")
    assert all("Task:" not in user_prompt(c) for c in sent if c.name != "experience")  # the task is the system's


@pytest.mark.parametrize("how", ["paper layout", "a profile without standing instructions"])
def test_the_paper_layout_and_a_profile_without_standing_keep_each_task_whole_at_the_end(how, monkeypatch):
    """The paper's layout, and a profile that keeps the steps out of the system message (`Profile.standing`
    False), carry each step's whole task at the end of its prompt, no standing section."""
    import dataclasses

    from avalon_agents import profiles

    if how == "paper layout":
        _, records = play(layout="paper")
    else:
        monkeypatch.setitem(profiles.PROFILES, "standard",
                            dataclasses.replace(profiles.PROFILES["standard"], standing=False))
        _, records = play()
    sent = [c for c in calls(records, 1) if c.name in ("analysis", "plan", "summary")]
    assert sent and all("How you work" not in c.messages[0].content for c in sent)
    assert all("\nNow: " not in user_prompt(c) and len(user_prompt(c).split("\n\n")[-1]) > 150 for c in sent)


def test_a_provider_that_caches_at_breakpoints_gets_one_where_each_prompts_game_so_far_ends():
    """The cognitive seat marks the stable part of its prompts (what it privately knows, the notes, the summary
    and the game so far): a provider that caches only at breakpoints (Anthropic) gets one at the system message's
    end and one where that part ends, before the module outputs and the step."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from avalon_agents.llm import ModelSettings, register_provider

    seen = []
    scripted = ScriptedChatModel()

    def respond(messages, kwargs):
        seen.append([m.model_copy() for m in messages])
        plain = [type(m)(content="".join(b["text"] for b in m.content) if isinstance(m.content, list) else m.content)
                 for m in messages]
        return scripted._default([SystemMessage(plain[0].content), HumanMessage(plain[1].content)], kwargs)

    register_provider("cog-breaks", lambda model, settings: ScriptedChatModel(respond=respond),
                      cache_breakpoints=True)
    setup = scripted_setup(None, settings=ModelSettings(spec="cog-breaks:m"), experience=ExperienceBook())
    asyncio.run(play_one(make_rules("official", 6), ["cognitive"] * 6, 3, setups=setup))
    answers = [m for m in seen if "Now: Action and answer" in m[1].content[-1]["text"]]
    assert len(answers) > 20
    for system, user in answers:
        assert system.content[-1]["cache_control"] == {"type": "ephemeral"}
        marked = "".join(b["text"] for b in user.content if "cache_control" in b)
        rest = user.content[-1]["text"]
        assert "cache_control" not in user.content[-1] and rest.startswith(("\n\nYour analysis", "\n\nYour current",
                                                                             "\n\nThe host's instruction:"))
        assert "The game so far:\n" in marked or "The game since then:\n" in marked
