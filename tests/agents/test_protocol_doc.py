"""docs/seats.md cannot drift from the seat protocol: its written blocks (every event type's fields, the setup's
fields, an example start) are what agents.protocol_doc writes from the code now; its tables name every field of
every message, every decision kind's typed action; the example bots it shows are the files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

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
