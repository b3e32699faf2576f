"""Order effects controlled (issue #19, point 3): listing orders of the host's wording drawn from the seed, the
engine untouched, the balanced schedule's Latin square over seats, roles and speaking positions."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from avalon_agents import narrate
from avalon_agents.core import ActionRequest, RequestKind, make_rules
from avalon_agents.core.types import Role
from avalon_agents.decisions.kinds import KINDS, decision_schema, instruct
from avalon_agents.engine import AvalonEngine
from avalon_agents.experiments.config import load_experiments
from avalon_agents.experiments.runner import game_orders, game_seed, run_experiment_sync, seating
from avalon_agents.host.play import play_one, trace_of
from avalon_agents.modules.memory import Entry, Memory
from avalon_agents.orders import FIXED, Orders, current, using
from avalon_agents.records.run_dir import EVENTS, META, SEATING, TRACE
from tests.helpers import scripted_setup

SHUFFLED = {"players": "shuffled", "options": "shuffled", "speeches": "shuffled"}
VOTE = ActionRequest(seat=1, kind=RequestKind.VOTE, quest=2, attempt=1, team=(2, 4, 5))
QUEST = ActionRequest(seat=2, kind=RequestKind.QUEST, quest=2, attempt=1, team=(2, 4, 5), can_fail=True)
PROPOSE = ActionRequest(seat=1, kind=RequestKind.PROPOSE, quest=1, attempt=1, options=(1, 2, 3, 4, 5, 6),
                        team_size=2)
ASSASSINATE = ActionRequest(seat=5, kind=RequestKind.ASSASSINATE, quest=5, attempt=1, options=(1, 2, 3, 4, 6))


def prompts(orders: Orders, seed: int = 3) -> list:
    host = asyncio.run(play_one(make_rules(), ["llm"] * 6, seed, setups=scripted_setup(), probes=True, orders=orders))
    return [r.messages for r in trace_of(host) if r.type == "llm_call"]


def seats_in(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"Player (\d+)", text)]


# --------------------------------------------------------------------------- fixed: today's wording


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_fixed_orders_word_everything_as_before():
    rules = make_rules()
    assert not FIXED.players and FIXED.vote == ("approve", "reject") and FIXED.card == ("success", "fail")
    assert current() is FIXED  # outside a game
    assert instruct(VOTE, rules).startswith('Vote on the team Player 2, Player 4 and Player 5 for quest 2. Answer '
                                            'with "approve" or "reject" and one sentence of reasons.')
    assert instruct(QUEST, rules).endswith('Play your card: answer "success" or "fail".')
    good = dataclasses.replace(QUEST, can_fail=False)
    assert instruct(good, rules).endswith('answer "success" (good players can only play success).')
    assert decision_schema(VOTE)["properties"]["vote"]["enum"] == ["approve", "reject"]
    assert KINDS[RequestKind.VOTE].answers(VOTE) == '"approve" or "reject"'
    assert "playing with 5 other players: Player 1, Player 3, Player 4, Player 5 and Player 6." in \
        narrate.system_prompt(rules, 2, Role.MERLIN)
    # an all-fixed Orders drawn from a seed is the default, prompt for prompt
    made = Orders.make(7, 6)
    assert made.fixed and made.players == () and made.vote == FIXED.vote
    assert prompts(made) == prompts(FIXED)


# --------------------------------------------------------------------------- shuffled


def test_shuffled_orders_follow_the_seed():
    drawn = [Orders.make(seed, 6, modes=SHUFFLED) for seed in range(30)]
    assert drawn[4] == Orders.make(4, 6, modes=SHUFFLED)  # same seed, same orders
    assert len({o.players for o in drawn}) > 20 and len({o.options for o in drawn}) > 20
    assert {o.vote for o in drawn} == {("approve", "reject"), ("reject", "approve")}
    assert {o.card for o in drawn} == {("success", "fail"), ("fail", "success")}
    for o in drawn:
        assert sorted(o.players) == sorted(o.options) == sorted(o.speeches) == [1, 2, 3, 4, 5, 6]
    # each list from its own stream: shuffling options alone leaves the players' order fixed
    alone = Orders.make(4, 6, modes={"options": "shuffled"})
    assert alone.players == () and alone.options == drawn[4].options and alone.vote == drawn[4].vote


def test_shuffled_orders_reach_every_listing_and_option():
    rules = make_rules()
    seed = next(s for s in range(50) if (o := Orders.make(s, 6, modes=SHUFFLED)).vote[0] == "reject"
                and o.card[0] == "fail" and o.players[:2] != (1, 2))
    orders = Orders.make(seed, 6, modes=SHUFFLED)
    with using(orders):
        others = [s for s in orders.players if s != 2]
        assert seats_in(narrate.system_prompt(rules, 2, Role.MERLIN).split("You are Player 2")[1])[:5] == others
        assert 'Answer with "reject" or "approve"' in instruct(VOTE, rules)
        assert seats_in(instruct(VOTE, rules)) == [s for s in orders.players if s in (2, 4, 5)]
        assert instruct(QUEST, rules).endswith('answer "fail" or "success".')
        assert decision_schema(VOTE)["properties"]["vote"]["enum"] == ["reject", "approve"]
        assert decision_schema(QUEST)["properties"]["card"]["enum"] == ["fail", "success"]
        team_enum = decision_schema(PROPOSE)["properties"]["team"]["items"]["enum"]
        assert team_enum == list(orders.options)
        assert seats_in(KINDS[RequestKind.PROPOSE].answers(PROPOSE)) == list(orders.options)
        targets = [s for s in orders.options if s != 5]
        assert decision_schema(ASSASSINATE)["properties"]["merlin"]["enum"] == targets
        assert seats_in(instruct(ASSASSINATE, rules)) == targets
    # and back to the defaults outside
    assert decision_schema(VOTE)["properties"]["vote"]["enum"] == ["approve", "reject"]
    assert decision_schema(PROPOSE)["properties"]["team"]["items"]["enum"] == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_game_with_shuffled_orders_is_reproducible_and_differs_from_fixed():
    orders = Orders.make(3, 6, modes=SHUFFLED)
    shuffled = prompts(orders)
    assert shuffled == prompts(Orders.make(3, 6, modes=SHUFFLED))  # same seed, same prompts
    assert shuffled != prompts(FIXED)
    system = shuffled[0][0].content
    listed = seats_in(system.split("other players:")[1].split("\n")[0])
    assert listed == [s for s in orders.players if s in listed] and listed != sorted(listed)


def test_shuffling_changes_words_never_the_game(tmp_path):
    """Same seed and agents: the same events byte for byte, and every announcement names the same seats."""
    rules = make_rules()
    for seed in range(3):
        runs = {}
        for name, orders in (("fixed", FIXED), ("shuffled", Orders.make(seed, 6, modes=SHUFFLED))):
            out = tmp_path / f"{name}-{seed}"
            asyncio.run(play_one(rules, ["rulebot", "random"] * 3, seed, out, orders=orders))
            runs[name] = out
        assert (runs["fixed"] / EVENTS).read_bytes() == (runs["shuffled"] / EVENTS).read_bytes()
        meta = json.loads((runs["shuffled"] / META).read_text())
        assert meta["orders"]["player_order"] == list(Orders.make(seed, 6, modes=SHUFFLED).players)
        assert "orders" not in json.loads((runs["fixed"] / META).read_text())
        engine = AvalonEngine(rules, seed)
        host = asyncio.run(play_one(rules, ["rulebot"] * 6, seed))
        for event in host.engine.events:
            fixed = narrate.announce(event, rules)
            with using(Orders.make(seed, 6, modes=SHUFFLED)):
                shuffled = narrate.announce(event, rules)
            assert (fixed is None) == (shuffled is None)
            if fixed is not None:
                assert Counter(seats_in(fixed)) == Counter(seats_in(shuffled))
                assert sorted(re.findall(r"\w+", fixed)) == sorted(re.findall(r"\w+", shuffled))
        assert engine.roles == host.engine.roles


def test_the_summary_lists_a_proposals_speeches_in_the_games_order():
    entries = [Entry("Host", "leads", 1, 1, True), *(Entry(f"Player {s}", f"s{s}", 1, 1, True, s) for s in (3, 4, 5)),
               Entry("Host", "votes", 1, 1, True), *(Entry(f"Player {s}", f"t{s}", 1, 2, True, s) for s in (4, 5))]
    assert Memory.listed(entries, FIXED) == entries
    orders = Orders(speeches=(5, 1, 3, 2, 4, 6))
    assert [e.text for e in Memory.listed(entries, orders)] == ["leads", "s5", "s3", "s4", "votes", "t5", "t4"]
    # reversed: each proposal's speeches from the last spoken, whoever spoke
    reversed_ = Orders.make(1, 6, modes={"speeches": "reversed"})
    assert [e.text for e in Memory.listed(entries, reversed_)] == ["leads", "s5", "s4", "s3", "votes", "t5", "t4"]


def test_reversed_orders_list_everything_the_other_way_round():
    orders = Orders.make(9, 6, modes={"players": "reversed", "options": "reversed"})
    assert orders == Orders.make(1, 6, modes={"players": "reversed", "options": "reversed"})  # not drawn
    assert orders.players == orders.options == (6, 5, 4, 3, 2, 1)
    assert orders.vote == ("reject", "approve") and orders.card == ("fail", "success")
    assert orders.meta()["players"] == "reversed" and not orders.fixed
    rules = make_rules()
    with using(orders):
        assert 'Answer with "reject" or "approve"' in instruct(VOTE, rules)
        assert decision_schema(PROPOSE)["properties"]["team"]["items"]["enum"] == [6, 5, 4, 3, 2, 1]
        assert seats_in(instruct(VOTE, rules)) == [5, 4, 2]


# --------------------------------------------------------------------------- configs and the runner


CONFIG = """\
name: orders
model: scripted
players: 6
agents: {a: {kind: rulebot}, b: {kind: rulebot}, c: {kind: random}, d: {kind: rulebot}, e: {kind: random},
         f: {kind: rulebot}}
lineup: {a: 1, b: 1, c: 1, d: 1, e: 1, f: 1}
series: 2
games_per_series: 12
"""


def test_balanced_schedule_puts_every_agent_in_every_seat_role_and_speaking_position(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG)
    (exp,) = load_experiments(path).values()
    assert exp.schedule == "balanced"
    rules = exp.game_rules()
    for series in (1, 2):
        for block in (range(1, 7), range(7, 13)):
            seats, roles, positions = (Counter() for _ in range(3))
            seeds = {game_seed(exp, series, g) for g in block}
            assert len(seeds) == 1  # one deal per block
            for g in block:
                seed = game_seed(exp, series, g)
                engine = AvalonEngine(rules, seed)
                for seat, name in zip(rules.seats, seating(exp, seed, series, g)):
                    seats[name, seat] += 1
                    roles[name, engine.roles[seat]] += 1
                    positions[name, (seat - engine.leader) % 6] += 1  # first-round speaking position
            assert set(seats.values()) == {1} and len(seats) == 36
            assert set(positions.values()) == {1} and len(positions) == 36
            for name in exp.agents:
                assert Counter({r: n for (a, r), n in roles.items() if a == name}) == Counter(rules.roles)


def test_a_run_with_shuffled_orders_records_them_per_game(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG.replace("series: 2\ngames_per_series: 12", "games_per_series: 2")
                    + "order: {players: shuffled, options: shuffled}\n")
    (exp,) = load_experiments(path).values()
    assert exp.order.modes() == {"players": "shuffled", "options": "shuffled", "speeches": "fixed"}
    for out in ("one", "two"):
        run_experiment_sync(path, tmp_path / out)
    for game in ("main/series-1/game-00001", "main/series-1/game-00002"):
        metas = [json.loads((tmp_path / out / game / META).read_text()) for out in ("one", "two")]
        assert metas[0]["orders"] == metas[1]["orders"]
        assert metas[0]["orders"] == game_orders(exp, metas[0]["seed"]).meta()
        assert metas[0]["orders"]["players"] == "shuffled" and metas[0]["orders"]["speeches"] == "fixed"
        assert metas[0]["orders"]["speech_order"] is None and len(metas[0]["orders"]["player_order"]) == 6
        seating_json = json.loads((tmp_path / "one" / game / SEATING).read_text())
        assert seating_json["schedule"] == "balanced"
    # an all-fixed order is left out of the config's dump, so fingerprints of earlier runs stay as they were
    path.write_text(CONFIG)
    (plain,) = load_experiments(path).values()
    assert "order" not in plain.model_dump(mode="json")


@pytest.mark.parametrize("bad, field", [
    ("order: {players: sometimes}\n", "order.players"),
    ("order: {seats: shuffled}\n", "order.seats"),
    ("order: shuffled\n", "order"),
    ("schedule: latin\n", "schedule"),
])
def test_bad_order_values_are_one_line_naming_the_field(tmp_path, bad, field):
    path = tmp_path / "bad.yaml"
    path.write_text(CONFIG + bad)
    with pytest.raises(ValueError) as err:
        load_experiments(path)
    message = str(err.value)
    assert "\n" not in message and field in message and "bad.yaml:9:" in message, message


def test_orders_refuse_unknown_lists_and_modes():
    with pytest.raises(ValueError, match="order.seats: unknown list"):
        Orders.make(1, 6, modes={"seats": "shuffled"})
    with pytest.raises(ValueError, match="order.players: 'sometimes'"):
        Orders.make(1, 6, modes={"players": "sometimes"})
    with pytest.raises(ValueError, match="not fixed, shuffled or reversed"):
        Orders.make(1, 6, modes={"players": "backwards"})


def test_the_runner_draws_orders_from_the_game_seed(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG + "order: {players: shuffled, options: fixed, speeches: shuffled}\n")
    (exp,) = load_experiments(path).values()
    assert game_orders(exp, 11) == game_orders(exp, 11) != game_orders(exp, 12)
    assert game_orders(exp, 11).vote == ("approve", "reject")
    assert Path(path).exists()


def test_play_takes_the_orders_on_the_command_line(tmp_path):
    from click.testing import CliRunner

    from avalon_agents.cli import cli

    out = tmp_path / "g"
    result = CliRunner().invoke(cli, ["play", "--seats", "llm", "--model", "scripted", "--order", "options=reversed",
                                      "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["order"] == {"options": "reversed"}
    recorded = json.loads((out / "game-00001" / META).read_text())["orders"]
    assert recorded["options"] == "reversed" and recorded["vote_options"] == ["reject", "approve"]
    prompts = [json.loads(line) for line in (out / "game-00001" / TRACE).read_text().splitlines()]
    assert any('"reject" or "approve"' in m["content"] for p in prompts for m in p.get("messages", []))
    for bad, says in (("options=backwards", "order.options"), ("speech", "LIST=MODE"), ("seats=fixed", "order.seats")):
        wrong = CliRunner().invoke(cli, ["play", "--order", bad])
        assert wrong.exit_code == 2 and says in wrong.output and "Traceback" not in wrong.output
