"""GameHost: delivery, concurrency of simultaneous requests, run directories."""

from __future__ import annotations

import asyncio
import json

import pytest

from avalon_agents.agents import RuleBot
from avalon_agents.agents.base import Reply
from avalon_agents.core import EVENT_ADAPTER, RequestKind, make_rules
from avalon_agents.host import GameHost, NoActionError
from avalon_agents.host.batch import play_games
from avalon_agents.records import is_done, read_events, read_result
from avalon_agents.records.run_dir import EVENTS, HEALTH, META, RESULT, TRACE


class SlowVoter(RuleBot):
    """A rule bot that takes its time on votes and notes how many voters were thinking at once."""

    thinking = 0
    most = 0

    async def act(self, request, instruction):
        if request.kind is RequestKind.VOTE:
            SlowVoter.thinking += 1
            SlowVoter.most = max(SlowVoter.most, SlowVoter.thinking)
            await asyncio.sleep(0.001)
            SlowVoter.thinking -= 1
        return await super().act(request, instruction)


def test_simultaneous_requests_are_asked_concurrently():
    rules = make_rules("official", 6)
    agents = {s: SlowVoter(seat=s, seed=s) for s in rules.seats}
    asyncio.run(GameHost(rules=rules, agents=agents, seed=1).run())
    assert SlowVoter.most == 6


class Chatty(RuleBot):
    reads_instructions = True

    def __init__(self, **kw):
        super().__init__(**kw)
        self.instructions: list[str] = []

    async def act(self, request, instruction):
        self.instructions.append(instruction)
        return await super().act(request, instruction)


def test_instructions_state_the_expected_answer():
    rules = make_rules("official", 6)
    agents = {s: Chatty(seat=s, seed=s) for s in rules.seats}
    asyncio.run(GameHost(rules=rules, agents=agents, seed=2).run())
    said = [i for a in agents.values() for i in a.instructions]
    assert any("Name exactly 2 players" in i for i in said)
    assert any('Answer with "approve" or "reject"' in i for i in said)


class TextOnly(RuleBot):
    async def act(self, request, instruction):
        return Reply(text="I approve, I think.")


def test_text_without_an_extractor_is_a_clear_error():
    rules = make_rules("official", 6)
    agents = {s: TextOnly(seat=s, seed=s) for s in rules.seats}
    with pytest.raises(NoActionError, match="configure an extractor"):
        asyncio.run(GameHost(rules=rules, agents=agents, seed=3).run())


def test_host_needs_one_agent_per_seat():
    rules = make_rules("official", 6)
    with pytest.raises(ValueError, match="agents: need one agent for each seat"):
        GameHost(rules=rules, agents={1: RuleBot(seat=1)}, seed=0)


def test_run_directory(tmp_path):
    rules = make_rules("paper", 7)
    results = asyncio.run(play_games(rules, ["rulebot"] * 7, seed=5, games=2, out=tmp_path))
    games = sorted(tmp_path.iterdir())
    assert [g.name for g in games] == ["game-00001", "game-00002"]
    for game, result in zip(games, results):
        assert is_done(game)
        assert sorted(p.name for p in game.iterdir()) == [EVENTS, HEALTH, META, RESULT, TRACE]
        events = read_events(game)
        assert events[-1].type == "game_ended" and events[-1].winner is result.winner
        assert read_result(game) == result
        meta = json.loads((game / META).read_text())
        assert meta["rules"]["name"] == "paper" and meta["seed"] in (5, 6) and meta["seats"]["1"] == "rulebot"
        lines = (game / EVENTS).read_text().splitlines()
        assert [EVENT_ADAPTER.validate_json(line) for line in lines] == events
    assert not list(tmp_path.rglob("*.tmp"))  # atomic writes leave no temp files


def test_unfinished_game_is_not_done(tmp_path):
    class Crash(RuleBot):
        async def act(self, request, instruction):
            if request.quest == 2:
                raise KeyboardInterrupt
            return await super().act(request, instruction)

    from avalon_agents.records import GameRecorder

    rules = make_rules("official", 6)
    host = GameHost(rules=rules, agents={s: Crash(seat=s, seed=s) for s in rules.seats}, seed=4,
                    recorder=GameRecorder(tmp_path / "g"))
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(host.run())
    assert not is_done(tmp_path / "g")
    assert read_events(tmp_path / "g")[-1].quest == 2  # what happened so far is on disk


def test_host_and_plain_loop_play_the_same_games():
    """Delivery through the host (asyncio, concurrent votes) changes nothing about what bots decide."""
    from avalon_agents.bench import play_direct

    for preset, players in (("official", 6), ("paper", 8)):
        rules = make_rules(preset, players)
        hosted = asyncio.run(play_games(rules, ["rulebot"] * players, seed=100, games=20))
        direct = [play_direct(rules, "rulebot", 100 + i).result() for i in range(20)]
        assert hosted == direct


class Preparing(RuleBot):
    """A rule bot with the per-round hook: records when it runs, and whether others overlapped it."""

    log: list = []

    async def prepare(self) -> None:
        Preparing.log.append(("start", self.seat, self.quest_seen))
        await asyncio.sleep(0.01)
        Preparing.log.append(("end", self.seat, self.quest_seen))

    async def observe(self, events) -> None:
        await super().observe(events)
        self.quest_seen = max([getattr(e, "quest", 0) for e in events] + [getattr(self, "quest_seen", 0)])

    async def on_game_end(self, result) -> None:
        Preparing.log.append(("game_end", self.seat, None))
        await asyncio.sleep(0.01)
        Preparing.log.append(("game_end_done", self.seat, None))


def test_round_hook_runs_for_every_seat_at_once_with_its_events_delivered():
    Preparing.log = []
    rules = make_rules("official", 6)
    host = GameHost(rules=rules, agents={s: Preparing(seat=s, seed=s) for s in rules.seats}, seed=4)
    asyncio.run(host.run())
    leaders = {e.quest for e in host.engine.events if e.type == "leader_chosen"}
    starts = [entry for entry in Preparing.log if entry[0] == "start"]
    assert len(starts) == 6 * len(leaders)  # once for every quest that is played
    log = [entry[0] for entry in Preparing.log]
    first_end = log.index("end")
    assert log[:first_end] == ["start"] * 6  # all six started before any finished: concurrent
    for i in range(0, len(starts), 6):  # each round's hook sees that round's events
        assert len({q for _, _, q in starts[i:i + 6]}) == 1
    ends = [entry[0] for entry in Preparing.log if entry[0].startswith("game_end")]
    assert ends[:6] == ["game_end"] * 6  # experience learning at the end is concurrent too


def test_only_model_seats_count_in_the_valid_response_rate():
    """A rule bot's typed decision (or a person's, or a program's) is no answer of a model: the extractor records
    only the model seats' decisions, so a mixed game's valid response rate is theirs alone."""
    from avalon_agents.host.play import play_one
    from avalon_agents.records.usage import usage
    from tests.helpers import scripted_setup

    rules = make_rules("official", 6)
    kinds = ["llm", "rulebot", "rulebot", "llm", "rulebot", "rulebot"]
    host = asyncio.run(play_one(rules, kinds, 3, setups=scripted_setup()))
    extractions = [r for r in host.tracer.records if r.type == "extraction"]
    assert extractions and {r.seat for r in extractions} == {1, 4}
    bot_decisions = [e for e in host.engine.events if e.type == "team_proposed" and e.leader not in (1, 4)]
    assert bot_decisions  # the bots did decide: they are only not counted
    assert usage(host.tracer.records)["decisions"] == len(extractions)


class SlowLearner(RuleBot):
    """A rule bot whose learning at game end waits until it is cancelled."""

    learning = None

    async def on_game_end(self, result):
        SlowLearner.learning.set()
        await asyncio.Event().wait()


def test_a_run_stopped_during_the_learning_at_game_end_leaves_no_unretrieved_error():
    """Ctrl-C or SIGTERM while the seats learn at game end cancels the game under its watchdog: every error of the
    seats' gathered work is retrieved (it printed "_GatheringFuture exception was never retrieved" after the stop
    line when the watchdog waited on the bare gather)."""
    import gc

    rules = make_rules("official", 5)
    unretrieved = []

    async def stopped() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: unretrieved.append(context))
        SlowLearner.learning = asyncio.Event()
        agents = {s: SlowLearner(seat=s, seed=s) for s in rules.seats}
        game = asyncio.ensure_future(GameHost(rules=rules, agents=agents, seed=1, watchdog=60).run())
        await SlowLearner.learning.wait()
        game.cancel()
        with pytest.raises(asyncio.CancelledError):
            await game
        del game
        gc.collect()
        await asyncio.sleep(0)

    asyncio.run(stopped())
    assert unretrieved == []
