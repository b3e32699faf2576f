"""Ten consecutive games of a series through the runner, ours on evil and the baseline on good (Table 6's
setting), on a scripted model whose experience, reflections and speeches name seats in every spelling: no
experience carried into a later game's prompts names a seat, and the baseline's second and later games play
with the strategy its role learned (App. A.5)."""

from __future__ import annotations

import asyncio
import re

import pytest

from avalon_agents.core.types import Role
from avalon_agents.experiments import load_experiments
from avalon_agents.experiments.runner import Job, run_series
from avalon_agents.llm import ClientPool, ScriptedChatModel
from avalon_agents.narrate import role_card
from avalon_agents.records import read_result, read_trace
from avalon_agents.records.run_dir import game_dir, series_dir
from avalon_agents.stores.experience import ExperienceStore
from tests.stores.test_name_roles import NAMES_A_SEAT

GAMES = 10
CONFIG = f"""\
name: seats
model: scripted
agents:
  ours: {{kind: cognitive}}
  baseline: {{kind: baseline, options: {{recent: 15, informative: 15, respond_temperature: 0}}}}
sides: {{good: baseline, evil: ours}}
series: 1
games_per_series: {GAMES}
"""

# what the model writes, naming seats in every spelling name_roles reads
SUGGESTIONS = ("1. Players 3 and 4 were evil, so watch P3/P4 and Player 3's votes.\n"
               "2. PLAYER 2, Player3 and player #4 voted together on Quest 3; seats 1 and 2 did not.\n"
               "3. Trust Players 2, 3 and 5 only after 3 quests, 2 fails and round 4; seat 6 lied.")
STRATEGY = "Put Player 1 and P2 on teams, and keep seats 5 and 6 and player #3 off them."
OTHER_ROLES = "Merlin: Player1 hinted at P5.\nAssassin: seat 6 watched Players 2, 3 and 4 and PLAYER 5."
REFLECTION = "Answers: P3 lied.\nReflection: Players 3 and 4 look evil; Player 5 and seat 6 look good."
SPEECH = ("My step-by-step thought process: P2 and player #4 matter.\n"
          "My concise talking content: I trust Players 1 and 2; P3/P4 and seat 5 worry me, and so does PLAYER 6.")

# where a prompt carries what earlier games taught (the strategy, the other roles' notes, the last suggestions,
# the baseline pool's answers)
CARRIED = (
    re.compile(r"^Strategy: (.*)$", re.MULTILINE),  # every system prompt
    re.compile(r"What earlier games taught you about the other roles:\n(.*?)(?:\n\n|\Z)", re.DOTALL),
    re.compile(r"in this game: (.*)$", re.MULTILINE),  # experience learning's prompts
    re.compile(r"Suggestions from the game before: (.*?)\n\n", re.DOTALL),
    re.compile(r"^(?:Current strategy|The game is over\. Your strategy for the .+? in this game): (.*)$",
               re.MULTILINE),  # the strategy update's, in either layout
    re.compile(r"had noted about the other roles before: (.*?)\n\n", re.DOTALL),
    re.compile(r"^An answer that ended (?:well|badly) \(score [-0-9.]+\): (.*)$", re.MULTILINE),  # the pool's
)


def model() -> ScriptedChatModel:
    scripted = ScriptedChatModel()

    def answer(messages, kwargs):
        last = str(messages[-1].content)
        if "Give exactly 3 suggestions" in last or last.endswith("Now: Suggestions."):  # whole task, or its step
            return SUGGESTIONS
        if "Write only the strategy" in last or last.endswith("Now: Strategy."):
            return STRATEGY
        if "each role other than" in last:
            return OTHER_ROLES
        # situations that differ, so the pool finds other games'
        if last.rstrip().endswith(("Reflection: ...", "Now: Reflection.")):
            return f"{REFLECTION} {scripted._default(messages, kwargs)}"
        if "Your turn to speak" in last and last.rstrip().endswith(("My concise talking content: ...", "Now: Answer.")):
            return SPEECH
        return scripted._default(messages, kwargs)

    scripted.respond = answer
    return scripted


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """The series' games, in order: (result, trace records); and the run directory."""
    out = tmp_path_factory.mktemp("series")
    path = out / "seats.yaml"
    path.write_text(CONFIG)
    (exp,) = load_experiments(path).values()
    asyncio.run(run_series(Job("main", 1, exp), out, ClientPool(models={"scripted": model()}),
                           on_game=lambda job, n, game: None))
    folder = series_dir(out, "main", 1)
    games = [(read_result(game_dir(folder, n)), read_trace(game_dir(folder, n))) for n in range(1, GAMES + 1)]
    return games, folder


@pytest.mark.slow  # ten games with both agents: seconds
def test_no_experience_carried_into_a_later_game_names_a_seat(series):
    games, folder = series
    carried: dict[int, int] = {}
    for pattern_index, pattern in enumerate(CARRIED):
        for _, records in games[1:]:
            for call in (r for r in records if r.type == "llm_call"):
                for message in call.messages:
                    for text in pattern.findall(message.content):
                        assert not NAMES_A_SEAT.search(text), (pattern.pattern, text)
                        carried[pattern_index] = carried.get(pattern_index, 0) + 1
    # every kind of carried experience reached a later game's prompts (the check above read something)
    assert set(carried) == set(range(len(CARRIED))), carried
    # what was carried is the model's seat-laden text, named by role ("Players 3 and 4" in a list of roles)
    learned = [text for _, records in games[1:] for call in records if call.type == "llm_call"
               for message in call.messages[:1] for text in CARRIED[0].findall(message.content)]
    assert any(text.startswith("Put ") and " on teams, and keep " in text for text in learned)

    # and nothing either agent keeps for later games names a seat
    for agent in ("ours", "baseline"):
        store = ExperienceStore(folder / "experience" / agent)
        texts = []
        for collection in store.client.list_collections():
            found = store.client.get_collection(collection.name).get(include=["documents", "metadatas"])
            texts += found["documents"] + [m["answer"] for m in found["metadatas"] if "answer" in m]
        assert texts and not [t for t in texts if NAMES_A_SEAT.search(t)], agent


@pytest.mark.slow  # ten games with both agents: seconds
def test_baseline_plays_later_games_with_the_strategy_its_role_learned(series):
    games, _ = series
    baseline_roles = (Role.MERLIN, Role.PERCIVAL, Role.LOYAL_SERVANT)  # it plays good
    learned_by: dict[Role, str] = {}
    later = 0
    for n, (result, records) in enumerate(games, 1):
        calls = [r for r in records if r.type == "llm_call" and r.name == "baseline"]
        assert {result.roles[c.seat] for c in calls} <= set(baseline_roles)
        for call in calls:
            role = result.roles[call.seat]
            strategy = call.messages[0].content.split("\nStrategy: ", 1)[1].split("\n")[0]
            if role in learned_by:  # a second or later game of the role: the strategy it learned
                assert strategy == learned_by[role], (n, role)
                later += 1
            else:
                assert strategy == role_card(role)["strategy"], (n, role)
        if n < GAMES:  # a series' last game learns nothing
            parts = [c.part for c in calls]
            assert parts.count("suggestions") == parts.count("strategy") == 4, n  # its four seats
            for call in calls:
                if call.part == "strategy":
                    assert call.reply == STRATEGY
                    learned_by[result.roles[call.seat]] = _named(call.reply, result.roles)
        else:
            assert not {c.part for c in calls} & {"suggestions", "strategy"}
        respond = [c for c in calls if c.part == "respond"]
        assert respond and {c.settings["temperature"] for c in respond} == {0.0}
        assert {c.settings["temperature"] for c in calls if c.part != "respond"} == {0.3}
    assert later > 0


def _named(text: str, roles: dict[int, Role]) -> str:
    from avalon_agents.stores.book import name_roles

    return name_roles(text, roles)
