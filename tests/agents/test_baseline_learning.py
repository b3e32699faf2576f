"""The baseline's strategy is updated between games as ours is (the paper's App. A.5, Table 6), switched by the
agent's `learn`; its final answer's temperature and its two windows are options (the paper's code: 0, 15 and
15, what the paper configs set). Fast: the agent is driven directly, on the scripted model, with an in-memory
pool; tests/agents/test_baseline_series.py plays whole series."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from avalon_agents.agents.baseline import INFORMATIVE, RECENT, RECENT_STEP, WINDOW_KEEP, BaselineAgent, Message
from avalon_agents.core import Role, make_rules
from avalon_agents.core.actions import ActionRequest, RequestKind
from avalon_agents.core.events import GameResult
from avalon_agents.core.types import EndReason, Team
from avalon_agents.engine import AvalonEngine
from avalon_agents.experiments import load_experiments
from avalon_agents.llm import ScriptedChatModel
from avalon_agents.llm.tokens import count_tokens
from avalon_agents.narrate import role_card
from avalon_agents.records.trace import MemoryTracer
from avalon_agents.stores.book import ExperienceBook
from tests.helpers import scripted_setup

PAPER = Path(__file__).resolve().parents[2] / "experiments" / "paper"
SUGGESTIONS = "1. Players 5 and 6 failed quests.\n2. Watch P5.\n3. Trust seat 1."
IMPROVED = "Lead with Merlin's picks, and keep Players 5 and 6 off teams."
REQUEST = ActionRequest(seat=2, kind=RequestKind.VOTE, quest=1, attempt=1, team=(1, 2))


class Pool:
    """An in-memory experience pool: the strategy and suggestions by role (an ExperienceBook) and the turns."""

    def __init__(self) -> None:
        self.book = ExperienceBook()
        self.turns: list[tuple[str, dict]] = []

    def get(self, role: Role):
        return self.book.get(role)

    def put(self, role: Role, experience, result=None, seat: int = 0) -> None:
        self.book.put(role, experience, result, seat)

    def add(self, kind: str, text: str, **meta) -> None:
        self.turns.append((text, meta))

    def query(self, text: str, n: int = 3, **where) -> list:
        return []


def model() -> ScriptedChatModel:
    scripted = ScriptedChatModel()

    def answer(messages, kwargs):
        last = str(messages[-1].content)
        if "Give exactly 3 suggestions" in last or last.endswith("Now: Suggestions."):  # its whole task, or its step
            return SUGGESTIONS
        if "Write only the strategy" in last or last.endswith("Now: Strategy."):
            return IMPROVED
        return scripted._default(messages, kwargs)

    scripted.respond = answer
    return scripted


def seat_of(role: Role, seed: int) -> tuple[AvalonEngine, int, list]:
    """A 6-player game dealt by `seed`, the seat holding `role`, and the events that seat sees at the start."""
    engine = AvalonEngine(make_rules("official", 6), seed=seed)
    events = engine.reset()
    seat = next(s for s, r in engine.roles.items() if r is role)
    return engine, seat, [e for e in events if e.visible_to == "all" or seat in e.visible_to]


def baseline(seat: int, tracer: MemoryTracer, pool: Pool | None, setup=None, **options) -> BaselineAgent:
    setup = setup or scripted_setup(model())
    context = setup.context(setup.clients.for_game(tracer))
    context.pool = (lambda: pool) if pool is not None else None
    return BaselineAgent(seat=seat, context=context, **options)


def result(engine: AvalonEngine, winner: Team = Team.EVIL) -> GameResult:
    return GameResult(winner=winner, reason=EndReason.THREE_FAILS, roles=dict(engine.roles), quests=(), proposals=3)


def calls(tracer: MemoryTracer, part: str | None = None) -> list:
    return [r for r in tracer.records if r.type == "llm_call" and (part is None or r.part == part)]


def play_first_game(pool: Pool | None, role: Role = Role.PERCIVAL, **options) -> tuple[MemoryTracer, AvalonEngine]:
    """A seat of `role` sees a game start and end (lost: evil won); returns its calls and the game."""
    tracer = MemoryTracer()
    engine, seat, events = seat_of(role, seed=1)
    agent = baseline(seat, tracer, pool, **options)
    asyncio.run(agent.observe(events))
    agent.reflection = "Player 5 looks evil."  # as if it had answered
    agent.turns.append((agent.reflection, "I reject."))
    asyncio.run(agent.on_game_end(result(engine)))
    return tracer, engine


def test_second_games_system_prompt_carries_the_improved_strategy():
    pool = Pool()
    first_calls, first = play_first_game(pool)
    suggest, improve = calls(first_calls, "suggestions"), calls(first_calls, "strategy")
    assert len(suggest) == len(improve) == 1 and len(calls(first_calls)) == 2  # IS: two calls at game end
    card = role_card(Role.PERCIVAL)
    assert [c.stage for c in (*suggest, *improve)] == ["agent", "agent"]
    # the cache layout: the system message says the game-end steps' tasks (a seat that learns); each prompt names
    # its step, after the game so far and its last reflection; the role card holds the goal and the strategy
    assert suggest[0].name == "baseline" and suggest[0].prompt_id == "baseline/steps/suggestions"
    system, prompt = (m.content for m in suggest[0].messages)
    assert "- Suggestions (when the game is over): give exactly 3 suggestions" in system
    assert "- Strategy (after the suggestions): rewrite your strategy" in system
    assert f"Goal: {card['goal']}" in system and f"Strategy: {card['strategy']}" in system
    assert "Your last reflection: Player 5" in prompt and prompt.endswith("Now: Suggestions.")
    assert f"Result: evil won (three_fails); Player {suggest[0].seat} lost" in prompt
    assert improve[0].messages[0].content == system and SUGGESTIONS in improve[0].messages[-1].content
    # the paper layout: the experience module's prompts, each task whole
    paper_calls, _ = play_first_game(Pool(), prompt_layout="paper")
    paper = calls(paper_calls, "suggestions")[0]
    assert paper.prompt_id == "modules/experience_suggestions" and "How you work" not in paper.messages[0].content
    assert card["goal"] in paper.messages[-1].content and "Give exactly 3 suggestions" in paper.messages[-1].content

    learned = pool.get(Role.PERCIVAL)  # kept named by role: seats hold other roles in the next game
    assert learned.strategy == "Lead with Merlin's picks, and keep " + \
        f"{_named(first, 5)} and {_named(first, 6)} off teams."
    assert learned.suggestions.startswith(f"1. {_named(first, 5, True)} and {_named(first, 6)} failed quests.")

    tracer = MemoryTracer()
    engine, seat, events = seat_of(Role.PERCIVAL, seed=2)
    agent = baseline(seat, tracer, pool)
    asyncio.run(agent.observe(events))
    asyncio.run(agent._call("Which players are evil?", "questions", REQUEST))
    (call,) = calls(tracer)
    system = call.messages[0].content
    assert f"Strategy: {learned.strategy}" in system and card["strategy"] not in system
    # its next learning starts from what it plays with
    asyncio.run(agent.on_game_end(result(engine)))
    second = "\n".join(m.content for m in calls(tracer, "suggestions")[0].messages)
    assert learned.strategy in second and f"Suggestions from the game before: {learned.suggestions}" in second


def _named(engine: AvalonEngine, seat: int, start: bool = False) -> str:
    from avalon_agents.stores.book import role_name

    name = role_name(engine.roles[seat])
    return name[0].upper() + name[1:] if start else name


def test_without_learning_it_plays_its_card_and_learns_nothing():
    """`learn: false` (Tables 7 and 8) gives its seats no pool: no strategy update, the card's strategy."""
    tracer, _ = play_first_game(None)
    assert calls(tracer) == []
    engine, seat, events = seat_of(Role.PERCIVAL, seed=2)
    agent = baseline(seat, MemoryTracer(), None)
    asyncio.run(agent.observe(events))
    assert f"Strategy: {role_card(Role.PERCIVAL)['strategy']}" in agent.system()


def test_a_series_last_game_learns_nothing():
    pool = Pool()
    tracer = MemoryTracer()
    engine, seat, events = seat_of(Role.MERLIN, seed=1)
    agent = baseline(seat, tracer, pool)
    agent.end_learning = False
    asyncio.run(agent.observe(events))
    asyncio.run(agent.on_game_end(result(engine)))
    assert calls(tracer) == [] and pool.get(Role.MERLIN).strategy is None


def test_improve_strategy_false_keeps_the_pool_but_not_the_strategy_update():
    pool = Pool()
    tracer, _ = play_first_game(pool, improve_strategy=False)
    assert calls(tracer) == []
    assert pool.get(Role.PERCIVAL).strategy is None
    assert [meta["extra"]["answer"] for _, meta in pool.turns] == ["I reject."]  # its turns still go to the pool


def test_final_answer_temperature_is_an_option_recorded_in_the_trace():
    tracer = MemoryTracer()
    engine, seat, events = seat_of(Role.MERLIN, seed=1)
    agent = baseline(seat, tracer, None, respond_temperature=0)
    asyncio.run(agent.observe(events))
    for step in ("questions", "respond"):
        asyncio.run(agent._call("What now?", step, REQUEST))
    temperatures = {c.part: c.settings["temperature"] for c in calls(tracer)}
    assert temperatures == {"questions": 0.3, "respond": 0.0}
    # unset: the final answer at the agent's own temperature
    tracer = MemoryTracer()
    agent = baseline(seat, tracer, None)
    asyncio.run(agent.observe(events))
    asyncio.run(agent._call("What now?", "respond", REQUEST))
    assert calls(tracer)[0].settings["temperature"] == 0.3


@pytest.mark.parametrize(("recent", "informative"), [(None, INFORMATIVE), (RECENT, INFORMATIVE), (15, 15), (3, 0)])
def test_windows_are_options(recent, informative):
    agent = baseline(1, MemoryTracer(), None, recent=recent, informative=informative)
    agent.messages = [Message(f"Quest {i} failed." if i % 2 else f"Message {i}: {'a long speech ' * 20}", 1,
                              i % 2 * 5) for i in range(40)]
    agent._move_window()  # a request's start
    _, prompt = agent._respond_prompt("Vote.")  # the cache layout: the game so far leads, numbered
    head, block = prompt.split("\n\n", 1)[0].split("\n", 1)
    block = block.splitlines()
    assert head == f"The game so far (from message {41 - len(block)} on):"
    assert block[-1] == "[40] Quest 39 failed." and len(block) >= (recent or 1)
    # a cut keeps the newest messages in WINDOW_KEEP tokens, or the newest `recent` if they are more
    assert sum(count_tokens(line.split("] ", 1)[1]) for line in block[1:]) <= WINDOW_KEEP or len(block) == recent
    top = prompt.split("alone: message N above):\n", 1)[1].split("\n\nYour reflection:", 1)[0].splitlines()
    shown = 41 - len(block)  # the informative messages the game so far holds are cited by their number
    assert top == ([f"[{n}]" if n >= shown else f"[{n}] Quest {n - 1} failed."
                    for n in range(40, 40 - 2 * informative, -2)] or ["(none yet)"])
    agent.layout = "paper"
    _, prompt = agent._respond_prompt("Vote.")
    block = prompt.split("Recent messages:\n", 1)[1].split("\n\nInformative messages", 1)[0].splitlines()
    assert (recent or RECENT) <= len(block) < (recent or RECENT) + RECENT_STEP and block[-1] == "Quest 39 failed."
    top = prompt.split("(most informative first):\n", 1)[1].split("\n\nYour reflection:", 1)[0].splitlines()
    assert top == ([f"Quest {i} failed." for i in range(39, 39 - 2 * informative, -2)] or ["(none yet)"])


@pytest.mark.parametrize(("options", "named"), [
    ({"recent": 0}, "recent"), ({"recent": "15"}, "recent"), ({"informative": -1}, "informative"),
    ({"informative": True}, "informative"), ({"respond_temperature": 3}, "respond_temperature"),
    ({"respond_temperature": "zero"}, "respond_temperature"), ({"improve_strategy": "yes"}, "improve_strategy"),
])
def test_a_bad_option_is_refused_naming_it(tmp_path, options, named):
    import yaml

    config = {"name": "x", "model": "scripted", "agents": {"b": {"kind": "baseline", "options": options},
                                                           "bots": {"kind": "rulebot"}},
              "sides": {"good": "b", "evil": "bots"}}
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ValueError, match=named):
        load_experiments(path)
    with pytest.raises(ValueError, match=named):
        baseline(1, MemoryTracer(), None, **options)


def test_paper_configs_give_the_baseline_the_papers_values():
    """The code the paper used: windows of 15 and 15, the final answer at temperature 0."""
    for table in ("table2", "table6", "table7", "table8"):
        for name, exp in load_experiments(PAPER / f"{table}.yaml").items():
            options = exp.agents["baseline"].options
            assert options == {"recent": 15, "informative": 15, "respond_temperature": 0}, (table, name)
    # Table 6 learns from experience for both agents (the baseline's strategy too); Table 7 and 8 for neither
    assert all(exp.agents["baseline"].learn for exp in load_experiments(PAPER / "table6.yaml").values())
    assert not any(exp.agents["baseline"].learn for exp in load_experiments(PAPER / "table7.yaml").values())
