"""The recipe "a new event" followed to its last consumers: every event type of the union (core/events.py) is
worded for the seats that see it (narrate.announce, unless told in the system prompt), has a line in the
transcript (unless declared unlisted), is described by the replay page (view/game/page.js) and declares its rows of
the analysis tables (core/rows.py), reaching them through analysis.load. A new event that misses one fails here,
naming the consumer."""

from __future__ import annotations

import dataclasses
import random
import typing
from functools import cache
from importlib import resources

import pytest

from avalon_agents.analysis.load import COLUMNS, RowsError, _add, _frames
from avalon_agents.core.events import GameEvent, SpeechGiven
from avalon_agents.core.rows import GameRows, check_declared
from avalon_agents.core.rules import RuleSet, make_rules
from avalon_agents.decisions.kinds import kind_of
from avalon_agents.engine import AvalonEngine
from avalon_agents.narrate import TOLD_IN_SYSTEM_PROMPT, announce
from avalon_agents.records.trace import Probe, TraceRecord
from avalon_agents.records.transcript import UNLISTED, transcript

SAMPLE_RULES: list[RuleSet] = [make_rules(preset, players) for preset in ("official", "paper") for players in (6, 7)]
SAMPLE_RULES.append(make_rules("official", 6).model_copy(update={"votes_public": False}))  # each seat's own vote
"""Rule sets whose random games between them produce every event type (add one that produces a new event)."""
if "lady_of_the_lake" in RuleSet.model_fields:
    SAMPLE_RULES.append(make_rules("official", 7).model_copy(update={"lady_of_the_lake": True}))


def event_types() -> set[str]:
    union = typing.get_args(GameEvent)[0]
    return {cls.model_fields["type"].default if hasattr(cls, "model_fields") else cls.__dataclass_fields__["type"]
            .default for cls in typing.get_args(union)}


@cache
def samples() -> dict[str, tuple[object, RuleSet]]:
    """One event of each type (and its rules), from random legal games."""
    found: dict[str, tuple[object, RuleSet]] = {}
    for rules in SAMPLE_RULES:
        for seed in range(40):
            engine, rng = AvalonEngine(rules, seed), random.Random(seed)
            engine.reset()
            while not engine.is_over:
                for request in engine.pending():
                    engine.submit(request.seat, kind_of(request).random(request, rng))
            for event in engine.events:
                found.setdefault(event.type, (event, rules))
    return found


def test_random_games_produce_every_event_type():
    missing = event_types() - set(samples())
    assert not missing, f"no sample game produced {sorted(missing)}: add rules that do to SAMPLE_RULES"


def test_every_event_is_worded_for_the_seats_that_see_it():
    unworded = [t for t, (event, rules) in samples().items()
                if t not in TOLD_IN_SYSTEM_PROMPT and not (announce(event, rules) or "").strip()]
    assert not unworded, f"narrate.announce has no words for {unworded}: seats would never hear of them"


def test_every_event_has_a_transcript_line_or_is_declared_unlisted():
    unlisted = [t for t, (event, rules) in samples().items() if t not in UNLISTED and not transcript([event])]
    assert not unlisted, f"records/transcript.py gives no line for {unlisted} (or declare them in UNLISTED)"


def test_every_event_is_described_by_the_replay_page():
    page = resources.files("avalon_agents.view.game").joinpath("page.js").read_text()
    undescribed = sorted(t for t in event_types() if f'case "{t}"' not in page)
    assert not undescribed, f"view/game/page.js's describeEvent has no case for {undescribed}"


def test_every_trace_record_is_described_by_the_replay_page():
    """The recipe "a new trace record": its type in the trace union (records/trace.py) is read back by
    read_trace and shown by the replay page's describeRecord in words, not as raw JSON."""
    types = {cls.model_fields["type"].default for cls in typing.get_args(typing.get_args(TraceRecord)[0])}
    page = resources.files("avalon_agents.view.game").joinpath("page.js").read_text()
    undescribed = sorted(t for t in types if f'r.type === "{t}"' not in page)
    assert not undescribed, f"view/game/page.js's describeRecord has no words for {undescribed}"


def test_every_event_declares_rows_that_reach_the_analysis_tables():
    """Each sample event's declared rows go to tables analysis.load makes, and load_run puts them there."""
    for kind, (event, rules) in samples().items():
        game = GameRows({"game": "g", "variant": "main", "series": 1, "game_index": 1},
                        {s: {"role": r.value, "side": r.side.value, "kind": "rulebot", "agent": "rulebot"}
                         for s, r in zip(range(1, rules.players + 1), rules.roles)}, rules.model_dump())
        given = event.rows(game)
        assert set(given) <= set(COLUMNS), f"{kind} gives rows to tables analysis.load does not make: {set(given)}"
        tables = _frames({name: given.get(name, []) for name in COLUMNS})
        for name, rows in given.items():
            assert len(getattr(tables, name)) == len(rows), f"{kind}'s {name} rows did not reach the table"


def test_a_type_without_rows_is_refused_in_one_line():
    """What a new event or trace record type that declares no rows meets at import (core/events.py and
    records/trace.py check their unions), and what analysis.load says of rows for a table it does not make."""
    @dataclasses.dataclass
    class Whispered:
        type: str = "whispered"

    with pytest.raises(TypeError, match=r"^event type Whispered declares no rows: give it rows\(self, game\)") as no:
        check_declared([SpeechGiven, Whispered], "event")
    assert "\n" not in str(no.value)
    records = typing.get_args(typing.get_args(TraceRecord)[0])
    with pytest.raises(TypeError, match="^trace record type Sneaky declares no rows"):
        check_declared([*records, type("Sneaky", (Probe,), {})], "trace record")
    with pytest.raises(RowsError, match="^event type whispered gives rows to table 'whispers', which analysis.load "
                                        "does not make"):
        _add({"speeches": []}, {"whispers": [{}]}, "event", "whispered")
