"""The paper's baseline (Xu et al. 2023a's Werewolf agent) with the scripted model: full games against the
cognitive agent, a filled-in system prompt, messages ranked by informativeness, retrieval by similarity, and
an experience pool that the next game draws suggestions from."""

from __future__ import annotations

import asyncio

import pytest

from avalon_agents.agents.baseline import RECENT, RECENT_STEP, BaselineAgent, concise, informativeness, recent_start
from avalon_agents.core import Role, make_rules
from avalon_agents.host.play import AgentSetup, play_one
from avalon_agents.llm import ClientPool, ScriptedChatModel
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


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_answers_prompts_extend_each_other_between_window_moves(mixed_game):
    """A seat's answer prompts keep the same window start for several answers, so a server's prompt cache
    resumes them: many answer prompts begin with the whole recent block of the one before."""
    _, records = mixed_game
    extended = pairs = 0
    for seat in (2, 4, 6):
        prompts = [c.messages[1].content for c in baseline_calls(records, seat)
                   if c.part == "respond"]
        for before, after in zip(prompts, prompts[1:]):
            block = before.split("\n\nInformative messages")[0]
            pairs += 1
            extended += after.startswith(block)
    assert pairs >= 9 and extended / pairs > 0.35, (extended, pairs)  # a window moving every message: 10%


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_system_prompt_is_every_llm_seats(mixed_game):
    """The paper gave both agents the same rules text: the baseline's system prompt is narrate's, rules of the
    active preset (quest sizes, the five-rejection rule, good only succeeds) and the role card."""
    host, records = mixed_game
    for call in baseline_calls(records):
        system = call.messages[0].content
        role = host.engine.roles[call.seat]
        assert system == system_prompt(host.engine.rules, call.seat, role)
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
        if messages[-1].content.rstrip().endswith("My concise talking content: ..."):
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
        block = prompt.split("Informative messages (most informative first):\n", 1)[1].split("\n\nYour reflection:")[0]
        lines = [line for line in block.splitlines() if line.strip()]
        scores = [informativeness(line) for line in lines]
        assert scores == sorted(scores, reverse=True) and scores[0] > 0


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_reflection_questions_retrieve_related_messages():
    agent = BaselineAgent(seat=1, context=scripted_setup().context(ClientPool().for_game(None)))
    from avalon_agents.agents.baseline import Message

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
    section leads each), also when it has left the windows of recent and informative messages."""
    host, records = mixed_game
    night = {e.seat: e for e in host.engine.events if e.type == "night_info"}
    for call in baseline_calls(records):
        prompt = call.messages[-1].content
        head = prompt.split("\n\n")[0]
        assert head.startswith("What only you know (private facts"), head[:200]
        assert head.splitlines()[1].startswith("Night: "), head[:200]
        assert bool(night[call.seat].seats) == ("no one" not in head)
