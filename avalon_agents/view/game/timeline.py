"""One game as the viewer shows it: its events and private trace records in one timeline, as plain JSON.

Each item is an event (as in events.jsonl) or a trace record (a module output, an extraction, a speech check,
a belief probe, an LLM call with its prompt and reply), with `item` ("event" or "record") and `visible_to`
("all" or the seats that may see it: a record is its own seat's only, a record of no seat nobody's). The
page's seat filter needs nothing else. The contents of the LLM calls' messages are kept once, in the game's
`texts` (each seat's system prompt goes with every call it makes): a message is `{"role", "text"}`, `text`
the index of its content there.

Trace records carry no event number, so each is placed where it happened: an extraction just before the event
its decision made (the one its decision kind declares, `DecisionKind.events`: the proposal, the vote, the quest
card or result, the Lady's examination, the assassination), a `response` module
output and a speech check before the speech they became, a probe after the quest it is about, an LLM call just
before the record it led to (the next of its seat's records in trace order), and any other record before the
next of these in trace order (at the end if none follows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from avalon_agents.core.events import EVENT_ADAPTER
from avalon_agents.decisions.kinds import KINDS
from avalon_agents.records.run_dir import RESULT, read_events, read_meta, read_result, read_trace
from avalon_agents.records.trace import Extraction, LLMCall, ModuleOutput, Probe, SpeechCheck

EXTRACTION, MODULE, PROBE, CALL, CHECK = (t.model_fields["type"].default
                                          for t in (Extraction, ModuleOutput, Probe, LLMCall, SpeechCheck))


def game_data(path: Path, name: str) -> dict[str, Any]:
    """What a game's page embeds: title, seats (kind, role), result, the timeline and the calls' texts."""
    path = Path(path)
    meta = read_meta(path)
    events = [EVENT_ADAPTER.dump_python(e, mode="json") for e in read_events(path)]
    result = (read_result(path).model_dump(mode="json") if (path / RESULT).is_file() else so_far(events))
    records = [r.model_dump(mode="json") for r in read_trace(path)]
    texts = share_texts(records)
    kinds = meta.seats
    seats = {str(s): {"kind": kinds.get(int(s), "?"), "role": role} for s, role in sorted(
        result["roles"].items(), key=lambda item: int(item[0]))}
    return {"game": name, "seed": meta.seed, "rules": meta.rules.get("name"), "seats": seats,
            "result": result, "items": timeline(events, records), "texts": texts}


def so_far(events: list[dict]) -> dict[str, Any]:
    """A game still playing, in result.json's shape: no winner yet (`winner` None, `reason` "playing"), the roles
    dealt, the quests done and the proposals made so far."""
    roles = {str(e["seat"]): e["role"] for e in events if e["type"] == "role_assigned"}
    quests = [{"quest": e["quest"], "team": e["team"], "fails": e["fails"], "success": e["success"]}
              for e in events if e["type"] == "quest_completed"]
    return {"winner": None, "reason": "playing", "roles": roles, "quests": quests,
            "proposals": sum(e["type"] == "team_proposed" for e in events)}


def share_texts(records: list[dict]) -> list[str]:
    """Each distinct message content of the LLM calls among `records`, once; each call's messages become
    `{"role", "text"}` with `text` its content's index in the list (the records are changed in place)."""
    index: dict[str, int] = {}
    for r in records:
        if r["type"] == CALL:
            r["messages"] = [{"role": m["role"], "text": index.setdefault(m["content"], len(index))}
                             for m in r["messages"]]
    return list(index)


def timeline(events: list[dict], records: list[dict]) -> list[dict]:
    """Events in order, with each record placed before the event at its position (see the module docstring)."""
    used: set[int] = set()
    checked: set[int] = set()
    positions = [len(events)] * len(records)  # records after the last anchored one go at the end
    pending: list[int] = []  # records waiting for the next anchored one
    last = 0
    for i, record in enumerate(records):
        pending.append(i)
        at = _anchor(events, used, checked, record)
        if at is not None:
            last = max(last, at)
            for j in pending:
                positions[j] = last
            pending = []
    for j, record in enumerate(records):
        if record["type"] == PROBE:
            after = _quest_end(events, record["quest"])
            if after is not None:
                positions[j] = min(positions[j], after + 1)
    order = list(range(len(records)))  # where a record sits among those at its position: trace order, but a
    for j, t in _led_to(records).items():  # call just before the record it led to
        positions[j], order[j] = positions[t], t
    by_position: dict[int, list[dict]] = {}
    for j in sorted(range(len(records)), key=lambda j: (order[j], records[j]["type"] != CALL, j)):
        record = records[j]
        seen = [record["seat"]] if record.get("seat") is not None else []
        by_position.setdefault(positions[j], []).append({**record, "item": "record", "visible_to": seen})
    items: list[dict] = []
    for i, event in enumerate(events):
        items += by_position.get(i, []) + [{**event, "item": "event"}]
    return items + by_position.get(len(events), [])


def _led_to(records: list[dict]) -> dict[int, int]:
    """Each LLM call's record index -> the index of the record it led to: the next of its seat's records that
    is no call (calls without a seat, or after their seat's last record, have none)."""
    waiting: dict[Any, list[int]] = {}
    led: dict[int, int] = {}
    for j, r in enumerate(records):
        seat = r.get("seat")
        if seat is None:
            continue
        if r["type"] == CALL:
            waiting.setdefault(seat, []).append(j)
        else:
            led.update((call, j) for call in waiting.pop(seat, []))
    return led


def _first(events: list[dict], used: set[int], mark: bool, **match: Any) -> int | None:
    for i, e in enumerate(events):
        if i not in used and all(e.get(k) == v for k, v in match.items()):
            if mark:
                used.add(i)
            return i
    return None


def _anchor(events: list[dict], used: set[int], checked: set[int], r: dict) -> int | None:
    """The event a record's decision or speech became, if it is one the viewer anchors on (`used`: the events
    a record has taken; `checked`: the speeches a speech check has). An extraction's is the first of the events
    its decision kind declares it becomes (decisions.kinds, `DecisionKind.events`) that is there."""
    if r["type"] == EXTRACTION:
        spec = KINDS.get(r["kind"])
        for becomes in spec.events if spec is not None else ():
            at = _first(events, used, becomes.own, **becomes.match(r["seat"], r["quest"], r["attempt"]))
            if at is not None:
                return at
        return None
    if r["type"] == MODULE and r["slot"] == "response":
        return _first(events, used, True, type="speech", seat=r["seat"], text=r["text"])
    if r["type"] == CHECK:
        return _first(events, checked, True, type="speech", seat=r["seat"], quest=r["quest"], attempt=r["attempt"])
    return None


def _quest_end(events: list[dict], quest: int) -> int | None:
    return next((i for i, e in enumerate(events) if e["type"] == "quest_completed" and e["quest"] == quest), None)
