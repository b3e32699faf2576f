"""docs/seats.md cannot drift from the seat protocol: its written blocks (every event type's fields, the setup's
fields, an example start) are what agents.protocol_doc writes from the code now; its tables name every field of
every message, every decision kind's typed action; the example bots it shows are the files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest
from pydantic import BaseModel

from avalon_agents.agents import protocol, protocol_doc
from avalon_agents.core import make_rules
from avalon_agents.core.actions import ActionRequest, RequestKind
from avalon_agents.core.events import GameEvent, GameResult, SpeechGiven
from avalon_agents.core.types import EndReason, Role, Team
from avalon_agents.decisions.kinds import KINDS

ROOT = Path(__file__).resolve().parents[2]
SEATS = ROOT / "docs" / "seats.md"


def test_the_written_blocks_are_current():
    """Fails when an event, a RuleSet field or the start message changed and the doc was not written again: run
    `python -m avalon_agents.agents.protocol_doc docs/seats.md`."""
    text = SEATS.read_text()
    assert protocol_doc.written(text) == text


def test_a_stale_block_is_found():
    text = SEATS.read_text()
    stale = text.replace("| `approve_count` | integer |", "| `approve_count` | string |")
    assert stale != text and protocol_doc.written(stale) == text
    with pytest.raises(ValueError, match="events"):
        protocol_doc.written(re.sub(r"<!-- END events -->", "", text))


def test_every_event_type_of_the_union_has_its_fields_listed():
    text = SEATS.read_text()
    for event in get_args(get_args(GameEvent)[0]):
        fields = event.__dataclass_fields__
        heading = f"#### `{fields['type'].default}`"
        assert heading in text, heading
        section = text.split(heading, 1)[1].split("####", 1)[0]
        for name in fields:
            if name not in ("type", "seq", "quest", "attempt", "visible_to"):
                assert f"| `{name}` |" in section, (heading, name)


def test_every_field_of_every_message_is_in_the_messages_table():
    rules = make_rules("official", 6)
    request = ActionRequest(seat=3, kind=RequestKind.VOTE, quest=1, attempt=1, team=(1, 3))
    result = GameResult(winner=Team.GOOD, reason=EndReason.ASSASSIN_MISSED, roles=dict(zip(rules.seats, rules.roles)),
                        quests=(), proposals=1)
    messages = [protocol.start("g", 3, Role.MERLIN, rules, "..."),
                protocol.event("g", 3, SpeechGiven(seq=1, quest=1, attempt=1, seat=2, text="hi"), "..."),
                protocol.request_message("g", 3, "3-1", request, "Vote."), protocol.end("g", 3, result)]
    rows = {line.split("|")[1].strip(): line for line in SEATS.read_text().splitlines() if line.startswith("| `")}
    for message in messages:
        row = rows[f"`{message['type']}`"]
        for key in message:
            if key not in ("type", "game", "seat"):  # every message's: said above the table
                assert f"`{key}`" in row, (message["type"], key)
    for key in GameResult.model_fields:  # the end's result: result.json's fields
        assert f"`{key}`" in rows["`end`"], key


def test_every_decision_kind_has_its_typed_action():
    text = SEATS.read_text()
    for name, kind in KINDS.items():
        assert f'| {name} | `{{"{kind.key or "text"}": ' in text, name


@pytest.mark.parametrize("bot, start", [("random_bot.py", "import json"), ("http_bot.py", "sides = {}")])
def test_the_example_bots_shown_are_the_files(bot, start):
    code = (ROOT / "experiments" / "bots" / bot).read_text()
    shown = code[code.index(start):]
    if bot == "http_bot.py":
        shown = shown[:shown.index("server = ThreadingHTTPServer")].rstrip("\n") + "\n"
    assert f"```python\n{shown}```" in SEATS.read_text()


def test_every_field_of_the_end_and_its_quests_is_in_the_end_table():
    from avalon_agents.core.events import QuestOutcome

    section = SEATS.read_text().split("### The end", 1)[1].split("### ", 1)[0]
    result, quests = section.split("Each item of `quests`", 1)
    for model, part in ((GameResult, result), (QuestOutcome, quests)):
        for name in model.model_fields:
            assert f"| `{name}` |" in part, (model.__name__, name)
    with pytest.raises(ValueError, match="Bare.fails has no docstring"):  # a new result field must say its meaning
        protocol_doc._fields(Bare, Bare.model_json_schema()["properties"], {})


class Bare(BaseModel):
    quest: int
    """Documented."""
    fails: int


def test_the_hand_written_parts_say_what_the_code_does():
    """Mordred is hidden from Merlin and Oberon from evil (the engine's sets, named in the doc); the Lady's events
    carry the quest just finished (checked in a played game); the speech cap is the one decisions.kinds holds."""
    import asyncio

    from avalon_agents.decisions.kinds import MAX_SPEECH
    from avalon_agents.engine.engine import HIDDEN_FROM_MERLIN, UNSEEN_BY_EVIL
    from avalon_agents.host.play import play_one

    text = " ".join(SEATS.read_text().split())
    assert [r.value for r in HIDDEN_FROM_MERLIN] == ["Mordred"] and "(Mordred is hidden from Merlin" in text
    assert [r.value for r in UNSEEN_BY_EVIL] == ["Oberon"] and "each other **except Oberon**" in text
    assert f"At most {MAX_SPEECH:,} characters" in text and f'{{"max_chars": {MAX_SPEECH}}}' in text
    assert "carry that quest, the one just finished" in text
    rules = make_rules("official", 8, lady_of_the_lake=True)
    host = asyncio.run(play_one(rules, ["rulebot"] * 8, 1))
    events = host.engine.events
    for i, e in enumerate(events):
        if e.type in ("lady_examined", "lady_result"):
            finished = [q for q in events[:i] if q.type == "quest_completed"][-1]
            assert e.quest == finished.quest and e.quest in (2, 3, 4)
    assert any(e.type == "lady_examined" for e in events)
