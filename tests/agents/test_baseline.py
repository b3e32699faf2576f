"""The paper's baseline (Xu et al. 2023a's Werewolf agent) with the scripted model: full games against the
cognitive agent, a filled-in system prompt, messages ranked by informativeness, retrieval by similarity, and
an experience pool that the next game draws suggestions from."""

from __future__ import annotations

import asyncio
import dataclasses
import re

import pytest

from avalon_agents.agents.baseline import (
    FIXED_QUESTIONS,
    RECENT,
    RECENT_STEP,
    WINDOW_KEEP,
    BaselineAgent,
    Message,
    concise,
    informativeness,
    recent_start,
)
from avalon_agents import profiles
from avalon_agents.core import Role, make_rules
from avalon_agents.core.types import seat_name
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.llm import ClientPool, ModelSettings, ScriptedChatModel
from avalon_agents.llm.prefix_cache import MIN_PREFIX
from avalon_agents.llm.stable import stable_chars
from avalon_agents.llm.tokens import count_tokens
from avalon_agents.narrate import system_prompt
from avalon_agents.stores.experience import ExperienceStore
from tests.helpers import SUGGEST_REQUEST, baseline_with_pool, scripted_setup

MIXED = ["cognitive", "baseline"] * 3


def models(model=None) -> AgentSetup:
    return scripted_setup(model)


def play(kinds, seed, shared: AgentSetup):
    host = asyncio.run(play_one(make_rules("official", 6), kinds, seed, setups=shared))
    return host, host.tracer.records


def baseline_calls(records, seat=None):
    return [r for r in records if r.type == "llm_call" and r.name == "baseline"
            and (seat is None or r.seat == seat)]


@pytest.fixture(scope="module")
def mixed_game():
    """One full game, baseline seats (2, 4, 6) against cognitive ones, read by several tests: (host, records)."""
    return play(MIXED, 3, models())


def check_full_game(host, records) -> None:
    assert host.engine.is_over
    for seat in (2, 4, 6):
        purposes = [c.part for c in baseline_calls(records, seat)]
        answers = purposes.count("respond")
        assert answers >= 3
        # every first answer to a request is prepared by questions then a reflection
        assert purposes.count("questions") == purposes.count("reflect") >= 3
        assert purposes[:3] == ["questions", "reflect", "respond"]
    cognitive = {r.seat for r in records if r.type == "llm_call" and r.stage == "module"}
    assert cognitive == {1, 3, 5}
    decisions = [r for r in records if r.type == "extraction" and r.seat in (2, 4, 6)]
    assert decisions and all(r.valid or r.method == "fallback" for r in decisions)


@pytest.mark.slow  # seconds: the fast suite stays under its 2 minutes
def test_baseline_plays_a_full_game_against_the_cognitive_agent(mixed_game):
    check_full_game(*mixed_game)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_baseline_plays_full_games_against_the_cognitive_agent(seed):
    check_full_game(*play(MIXED, seed, models()))


def test_recent_window_moves_a_step_at_a_time():
    assert [recent_start(n) for n in (0, 9, 10, 14, 15, 19, 20)] == [0, 0, 0, 0, 5, 5, 10]
    for n in range(200):
        assert RECENT <= n - recent_start(n) < RECENT + RECENT_STEP or (n < RECENT and recent_start(n) == 0)


def game_so_far(prompt: str) -> str:
    """The cache layout's stable part of a baseline prompt: the game so far, before the private section."""
    assert prompt.startswith("The game so far"), prompt[:100]
    return prompt.split("\n\nWhat only you know", 1)[0]


def resolved(prompt: str, line: str) -> str:
    """A line of a step's material with a cited message ("[12]") replaced by that message's text, which the
    prompt holds earlier (in the game so far, or quoted with its number); a quoted one's text."""
    if quoted := re.fullmatch(r"\[\d+\] (.+)", line):
        return quoted.group(1)
    if not re.fullmatch(r"\[\d+\]", line):
        return line
    before = prompt[:prompt.index("\n" + line + "\n")]
    quoted = re.search(rf"^{re.escape(line)} (.+)$", before, re.MULTILINE)
    assert quoted, f"{line} cited before it is shown"
    return quoted.group(1)


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_requests_steps_share_one_prefix_and_requests_extend_each_other(mixed_game):
    """The three steps of a request (questions, reflection, answer) begin with the same text: the game so far, the
    private facts and the host's question; the next request's game so far extends it until a cut, which is rare."""
    _, records = mixed_game
    extended = pairs = 0
    for seat in (2, 4, 6):
        calls = [c for c in baseline_calls(records, seat) if c.part in ("questions", "reflect", "respond")]
        prompts = [c.messages[1].content for c in calls]
        for i in range(0, len(prompts) - 2, 3):
            assert [c.part for c in calls[i:i + 3]] == ["questions", "reflect", "respond"]
            shared = prompts[i].split("\n\nNow: Questions.")[0]
            assert "\nThe host asks " + seat_name(seat) in shared
            assert prompts[i + 1].startswith(shared) and prompts[i + 2].startswith(shared)
        for before, after in zip(prompts[::3], prompts[3::3]):
            pairs += 1
            if after.startswith(game_so_far(before)):
                extended += 1
                continue
            # else a cut: the game so far starts later, at the newest messages in WINDOW_KEEP tokens
            starts = [int(re.match(r"The game so far(?: \(from message (\d+) on\))?:", p).group(1) or 1)
                      for p in (before, after)]
            assert starts[0] < starts[1], starts
            kept = game_so_far(after).splitlines()[2:]  # after its first message
            assert sum(count_tokens(line.split("] ", 1)[1]) for line in kept) <= WINDOW_KEEP
    # a cut every other request at most (a window moving at every request: none extended)
    assert pairs >= 9 and extended / pairs > 0.45, (extended, pairs)


def test_every_message_a_step_cites_is_in_its_prompt():
    """The cache layout cites a message of the game so far by its number, quotes an earlier one once (with its
    number) and cites it after that: every number a step's material names resolves to a message of the prompt."""
    agent = BaselineAgent(seat=1, context=scripted_setup().context(ClientPool().for_game(None)))
    agent.rules, agent.role = make_rules("official", 6), Role.MERLIN
    agent.messages = [Message(f"Player {i % 6 + 1} said: \"{'I doubt Player 3. ' * 12}\"" if i % 3 else
                              f"Quest {i // 3 + 1} failed: 1 fail card(s).", 1, 5 * (i % 3 == 0)) for i in range(30)]
    agent._move_window()
    assert agent.start > 0

    async def related(questions, messages):
        return [[29, 2, 5], [5, 28, 2], [0, 1, 29]]  # two of the game so far, three from before it (5 and 2 twice)

    prompts = []

    async def call(text, step, request=None, **_):
        prompts.append(text)
        return "Reflection: Player 3 is evil."

    agent._related, agent._call = related, call
    asyncio.run(agent._reflect(["Who is evil?", "Who failed?", "Who leads?"], SUGGEST_REQUEST))
    evidence = prompts[0].split("\nQuestion: ", 1)[1].split("\n\nNow: Reflection.", 1)[0]
    lines = [line for line in evidence.splitlines() if line.startswith("[")]
    assert lines == ["[30]", f"[3] {agent.messages[2].text}", f"[6] {agent.messages[5].text}", "[6]", "[29]", "[3]",
                     f"[1] {agent.messages[0].text}", f"[2] {agent.messages[1].text}", "[30]"]
    for line in lines:
        number, _, text = line[1:].partition("] ")
        assert (text or resolved(prompts[0], line)) == agent.messages[int(number.rstrip("]")) - 1].text
    _, answer = agent._respond_prompt("Vote.")
    top = answer.split("\nInformative messages:\n", 1)[1].split("\n\nYour reflection:", 1)[0].splitlines()
    assert [resolved(answer, line) for line in top] == [agent.messages[i].text for i in (27, 24, 21, 18, 15)]


def test_its_steps_standing_instructions_are_said_once_in_its_system_message():
    """The cache layout: the system message ends with how it works (each step's standing instruction, the
    questions its side always considers, the game-end steps when it learns), which brings it past OpenAI's 1,024-
    token minimum for every role, so a cut of the game so far leaves the system message cached; each prompt ends
    with a short line naming its step. The small profile and the paper layout keep each task whole at its end."""
    agent = baseline_with_pool([])
    rules = agent.rules
    for role in set(rules.roles):
        agent.role = role
        system = agent.system()
        assert system.startswith(system_prompt(rules, 2, role)) and system.count("How you work.") == 1
        assert all(question in system for question in FIXED_QUESTIONS[role.side])
        assert "- Suggestions (when the game is over)" in system and "- Strategy (after the suggestions)" in system
        assert count_tokens(system) >= MIN_PREFIX, role
    agent.role, agent.messages = Role.PERCIVAL, [Message("Player 1 said: \"I doubt Player 3.\"", 1, 3)]
    _, text = agent._respond_prompt("Vote.")
    assert text.endswith("Your reflection: Player 3 looks evil.\n\nNow: Answer.") and "Think it through" not in text
    # no pool (nothing learned at game end): its request's steps alone
    context = scripted_setup().context(ClientPool().for_game(None))
    context.pool = None
    plain = BaselineAgent(seat=1, context=context)
    plain.rules, plain.role = rules, Role.PERCIVAL
    assert plain.steps.count("\n- ") == 4 and "- Suggestions (when" not in plain.steps
    # the small profile: its answer first, in its standing instruction; the host's form of the decision first
    small = scripted_setup(settings=ModelSettings(spec="scripted", profile="small"))
    first = BaselineAgent(seat=1, context=small.context(small.clients.for_game(None)))
    first.rules, first.role, first.messages = rules, Role.PERCIVAL, agent.messages
    assert 'Answer first, in a few sentences, then explain your thinking, in exactly this form: "My concise' in \
        first.system()
    _, text = first._respond_prompt("Vote.", first="Give your vote first.")
    assert text.endswith("\nGive your vote first.\nNow: Answer.")


def test_without_standing_instructions_each_prompt_carries_its_whole_task(monkeypatch):
    """A profile that keeps each task whole (Profile.standing False) and the paper layout: no "How you work" in the
    system message, the whole task at the end of each prompt."""
    rules = make_rules("official", 6)
    monkeypatch.setitem(profiles.PROFILES, "standard", dataclasses.replace(profiles.PROFILES["standard"],
                                                                          standing=False))
    for layout in ("cache", "paper"):
        other = BaselineAgent(seat=1, context=scripted_setup().context(ClientPool().for_game(None)),
                              prompt_layout=layout)
        other.rules, other.role = rules, Role.PERCIVAL
        other.messages = [Message("Player 1 said: \"I doubt Player 3.\"", 1, 3)]
        assert other.steps == "" and other.system() == system_prompt(rules, 1, Role.PERCIVAL)
        _, text = other._respond_prompt("Vote.")
        assert text.rstrip().endswith("My step-by-step thought process: ...\nMy concise talking content: ...")
        assert "Now:" not in text


@pytest.mark.parametrize("layout", ["cache", "paper"])
def test_its_user_message_marks_the_game_so_far_stable(layout):
    """A provider that caches at breakpoints (Anthropic: llm.stable) is told where the stable part ends: the game
    so far, which the seat's next prompts begin with too; the paper layout marks nothing."""
    agent = BaselineAgent(seat=1, context=scripted_setup().context(ClientPool().for_game(None)), prompt_layout=layout)
    agent.rules, agent.role = make_rules("official", 6), Role.MERLIN
    agent.messages = [Message(f"Player {i % 6 + 1} said: \"I doubt Player 3.\"", 1, 3) for i in range(12)]
    sent = []

    async def call(messages, **_):
        sent.append(messages)
        return "Which team failed?"

    agent.llm.call = call
    asyncio.run(agent._questions("Vote on the team."))
    text = sent[0][1].content
    assert stable_chars(sent[0][1]) == (len(agent.game_so_far()) if layout == "cache" else 0)
    assert text.startswith(agent.game_so_far()) == (layout == "cache")


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_system_prompt_is_every_llm_seats(mixed_game):
    """The paper gave both agents the same rules text: the baseline's system prompt is narrate's, rules of the
    active preset (quest sizes, the five-rejection rule, good only succeeds) and the role card."""
    host, records = mixed_game
    for call in baseline_calls(records):
        system = call.messages[0].content
        role = host.engine.roles[call.seat]
        # then how it works (the cache layout): its steps' standing instructions; its prompt names the step
        rules_and_card, _, steps = system.partition("\n\nHow you work.")
        assert rules_and_card == system_prompt(host.engine.rules, call.seat, role)
        assert steps.count("\n- ") == 6 and "\n- Answer: answer the host" in steps  # with the strategy update
        step = {"questions": "Questions", "reflect": "Reflection", "suggest": "Suggestion", "respond": "Answer",
                "suggestions": "Suggestions", "strategy": "Strategy"}[call.part]
        assert call.messages[1].content.endswith(f"\n\nNow: {step}.")
        assert "{" not in system and "}" not in system
        assert f"You are Player {call.seat}, and your role is {role.value}." in system
        assert "2, 3, 4, 3, 4 members" in system and "Good players can only play success" in system
        assert "playing with 5 other players" in system
        assert "Merlin, Percival, 2 Loyal Servants, Morgana, Assassin" in system
        assert ("rejected" in system or "reject" in system) and "five" in system.lower()


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_host_hears_only_the_concise_talking_content():
    reply = ("My step-by-step thought process: Player 3 is odd.\n"
             "My concise talking content: I propose Player 1 and Player 2.")
    assert concise(reply) == "I propose Player 1 and Player 2."
    assert concise("I approve.") == "I approve."

    model = ScriptedChatModel()

    def script(messages, kwargs):
        if messages[-1].content.endswith("\nNow: Answer."):  # the answer's step (its form: the system message's)
            return "My step-by-step thought process: secret musing.\nMy concise talking content: I approve."
        return model._default(messages, kwargs)

    model.respond = script
    host, records = play(MIXED, 5, models(model))
    speeches = [e.text for e in host.engine.events if e.type == "speech" and e.seat in (2, 4, 6)]
    assert speeches and all(text == "I approve." for text in speeches)
    assert not any("secret musing" in e.text for e in host.engine.events if e.type == "speech")


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_informative_messages_are_ranked_by_score(mixed_game):
    assert informativeness("Quest 2 failed with 1 fail card.") > informativeness("Quest 2 succeeded.")
    assert informativeness("Player 3 said: \"I am Merlin, trust me.\"") > informativeness("Player 3 said: hi")
    host, records = play(MIXED, 6, models())
    late = [c for c in baseline_calls(records) if c.part == "respond" and c.quest >= 3]
    assert late
    for call in late:
        prompt = call.messages[-1].content
        block = prompt.split("\nInformative messages:\n", 1)[1]
        lines = [resolved(prompt, line) for line in block.split("\n\nYour reflection:")[0].splitlines()]
        scores = [informativeness(line) for line in lines]
        assert scores == sorted(scores, reverse=True) and scores[0] > 0


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_reflection_questions_retrieve_related_messages():
    agent = BaselineAgent(seat=1, context=scripted_setup().context(ClientPool().for_game(None)))
    agent.messages = [Message(t, 1, informativeness(t)) for t in (
        "Quest 1 failed with 1 fail card; the team was Player 2 and Player 5.",
        "Player 4 said: \"I like pizza and sunny weather.\"",
        "Player 3 said: \"The weather is lovely today.\"",
    )]
    found = asyncio.run(agent._retrieve(["Which players were on the teams of failed quests?",
                                         "How is the weather?"]))
    assert found[0][0].startswith("Quest 1 failed")
    assert "weather" in found[1][0]


@pytest.mark.slow
def test_experience_pool_feeds_suggestions_in_the_next_game(tmp_path):
    shared = models()
    shared.experience_dir = tmp_path
    host, _ = play(MIXED, 7, shared)
    winner = host.engine.result().winner.value
    pool = ExperienceStore(tmp_path, collection="baseline_pool")
    docs = pool.collection.get(where={"kind": "baseline_turn"})
    assert docs["ids"], "the first game's turns are in the pool"
    assert all(m["score"] in (1.0, -1.0) and m["answer"] for m in docs["metadatas"])
    assert all(m["outcome"] == ("won" if m["side"] == winner else "lost") for m in docs["metadatas"])
    assert {m["role"] for m in docs["metadatas"]} == {host.engine.roles[s].value for s in (2, 4, 6)}

    # one game's turns of a role all scored the same: nothing to contrast, so no suggestion is asked for
    _, records = play(MIXED, 8, shared)
    assert not [c for c in baseline_calls(records) if c.part == "suggest"]

    # every turn also ended the other way once, with another answer: now the answers found differ in score
    pool = shared.pool()
    for doc, meta in zip(docs["documents"], docs["metadatas"]):
        pool.add("baseline_turn", doc, role=Role(meta["role"]), won=meta["score"] < 0, seat=meta["seat"],
                 extra={"answer": "Other outcome: " + meta["answer"], "score": -meta["score"]})
    _, records = play(MIXED, 9, shared)
    suggest = [c for c in baseline_calls(records) if c.part == "suggest"]
    assert suggest, "the next game asks for suggestions from the pool"
    for call in suggest:
        prompt = call.messages[-1].content
        good = prompt.split("ended well (score ", 1)[1].split("\n")[0]
        bad = prompt.split("ended badly (score ", 1)[1].split("\n")[0]
        assert good.startswith("1.0): ") and bad.startswith("-1.0): ")
        assert good.split("): ", 1)[1] != bad.split("): ", 1)[1], "two different answers"
    rounds = [(c.seat, c.quest) for c in suggest]
    assert len(rounds) == len(set(rounds)), "at most one suggestion per seat and round"
    later = [c for c in baseline_calls(records) if c.part == "respond"
             and "Suggestion from earlier games:" in c.messages[-1].content]
    assert later


def suggest_prompts(scored: list[tuple[str, float]]) -> list[str]:
    """The prompts of the suggestion calls a seat makes from a pool holding `scored` (answer, score) pairs."""
    agent = baseline_with_pool(scored)
    prompts = []

    async def call(text, step, request, **_):
        prompts.append(text)
        return "Back the team you trust."

    agent._call = call
    asyncio.run(agent._suggest(SUGGEST_REQUEST))
    return prompts


def test_no_suggestion_when_every_answer_found_scored_the_same():
    assert suggest_prompts([("I approve.", 1.0), ("I reject.", 1.0), ("I approve.", 1.0)]) == []
    assert suggest_prompts([("I reject.", -1.0)] * 5) == []
    assert suggest_prompts([]) == []


def test_no_suggestion_contrasts_an_answer_with_itself():
    """The same answer that ended well in one game and badly in another teaches nothing by contrast."""
    assert suggest_prompts([("I approve this team.", 1.0), ("I approve this team.", -1.0)]) == []
    [prompt] = suggest_prompts([("I approve this team.", 1.0), ("I approve this team.", -1.0), ("No.", -1.0)])
    assert "ended well (score 1.0): I approve this team." in prompt and "ended badly (score -1.0): No." in prompt


def test_suggestion_contrasts_two_answers_with_different_scores():
    prompts = suggest_prompts([("I approve.", -1.0), ("I reject, Player 3 is on it.", 1.0), ("Fine.", -1.0)])
    assert len(prompts) == 1
    assert "ended well (score 1.0): I reject, Player 3 is on it." in prompts[0]
    assert "ended badly (score -1.0): I approve." in prompts[0]


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_its_night_information_is_in_every_answer_it_gives(mixed_game):
    """The paper's baseline keeps what its role card showed it: the night line is in every prompt (its private
    section: after the game so far in the cache layout), also when it has left the windows of messages."""
    host, records = mixed_game
    night = {e.seat: e for e in host.engine.events if e.type == "night_info"}
    for call in baseline_calls(records):
        prompt = call.messages[-1].content
        assert prompt.count("What only you know (private facts") == 1, prompt[:200]
        section = prompt.split("What only you know (private facts", 1)[1].split("\n\n")[0]
        assert section.splitlines()[1].startswith("Night: "), section[:200]
        assert bool(night[call.seat].seats) == ("no one" not in section)
