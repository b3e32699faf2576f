"""A decision's records sit just before the event its decision kind declares it becomes (`DecisionKind.events`),
read by the replay timeline and so by the calls page's links into it: a Lady of the Lake decision before its own
`lady_examined`, not after its result and the next leader (issue 39)."""

from __future__ import annotations

from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.decisions.kinds import KINDS
from avalon_agents.view.game.timeline import game_data


def test_a_lady_decision_sits_just_before_its_own_examination_on_the_replay_timeline(tmp_path):
    out = tmp_path / "lady"
    done = CliRunner().invoke(cli, ["play", "--players", "7", "--lady-of-the-lake", "--seats", "llm", "--model",
                                    "scripted", "--games", "2", "--out", str(out)])
    assert done.exit_code == 0, done.output
    checked = 0
    for game in sorted(out.glob("game-*")):
        items = game_data(game, game.name)["items"]
        for i, item in enumerate(items):
            if item["item"] != "record" or item["type"] != "extraction":
                continue
            after = next(e for e in items[i + 1:] if e["item"] == "event")  # the first event after the decision
            if item["kind"] == "lady":
                assert (after["type"], after["holder"], after["quest"]) == \
                    ("lady_examined", item["seat"], item["quest"]), (item, after)
                checked += 1
            else:  # every other decision as its kind declares: its own event, or the public one it shows in
                assert after["type"] in {b.event for b in KINDS[item["kind"]].events}, (item, after)
    assert checked >= 2  # the Lady was used, after quests 2 to 4


def test_every_decision_kind_declares_the_event_it_becomes():
    from avalon_agents.core.events import EVENT_ADAPTER

    schema = EVENT_ADAPTER.json_schema()  # every event type the game records
    types = {d["properties"]["type"]["const"] for d in schema["$defs"].values() if "type" in d.get("properties", {})}
    for name, spec in KINDS.items():
        assert spec.events and {b.event for b in spec.events} <= types, name
