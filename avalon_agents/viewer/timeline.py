"""One game as the viewer shows it: its events and private trace records in one timeline, as plain JSON.

Each item is an event (as in events.jsonl) or a trace record (a module output, an extraction, a belief probe;
LLM calls are left out), with `item` ("event" or "record") and `visible_to` ("all" or the seats that may see
it: a record is its own seat's only). The page's seat filter needs nothing else.

Trace records carry no event number, so each is placed where it happened: an extraction just before the event
its decision made (the proposal, the vote, the quest card or result, the assassination), a `response` module
output before the speech it became, a probe after the quest it is about, and any other record before the next
of these in trace order (at the end if none follows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from avalon_agents.core.events import EVENT_ADAPTER
from avalon_agents.records.run_dir import read_events, read_meta, read_result, read_trace
from avalon_agents.records.trace import Extraction, LLMCall, ModuleOutput, Probe

EXTRACTION, MODULE, PROBE = (t.model_fields["type"].default for t in (Extraction, ModuleOutput, Probe))


def game_data(path: Path, name: str) -> dict[str, Any]:
    """What a game's page embeds: title, seats (kind, role), result and the timeline."""
    path = Path(path)
    meta = read_meta(path)
    result = read_result(path)
    events = [EVENT_ADAPTER.dump_python(e, mode="json") for e in read_events(path)]
    records = [r.model_dump(mode="json") for r in read_trace(path) if not isinstance(r, LLMCall)]
    kinds = meta.seats
    seats = {str(s): {"kind": kinds.get(s, "?"), "role": role.value} for s, role in sorted(result.roles.items())}
    return {"game": name, "seed": meta.seed, "rules": meta.rules.get("name"),
            "seats": seats, "result": result.model_dump(mode="json"), "items": timeline(events, records)}


def timeline(events: list[dict], records: list[dict]) -> list[dict]:
    """Events in order, with each record placed before the event at its position (see the module docstring)."""
    used: set[int] = set()
    positions = [len(events)] * len(records)  # records after the last anchored one go at the end
    pending: list[int] = []  # records waiting for the next anchored one
    last = 0
    for i, record in enumerate(records):
        pending.append(i)
        at = _anchor(events, used, record)
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
    items: list[dict] = []
    by_position: dict[int, list[dict]] = {}
    for j, record in enumerate(records):
        by_position.setdefault(positions[j], []).append({**record, "item": "record", "visible_to": [record["seat"]]})
    for i, event in enumerate(events):
        items += by_position.get(i, []) + [{**event, "item": "event"}]
    return items + by_position.get(len(events), [])


def _first(events: list[dict], used: set[int], mark: bool, **match: Any) -> int | None:
    for i, e in enumerate(events):
        if i not in used and all(e.get(k) == v for k, v in match.items()):
            if mark:
                used.add(i)
            return i
    return None


def _anchor(events: list[dict], used: set[int], r: dict) -> int | None:
    """The event a record's decision or speech became, if it is one the viewer anchors on."""
    if r["type"] == EXTRACTION:
        q, a, s = r["quest"], r["attempt"], r["seat"]
        match r["kind"]:
            case "propose":
                return _first(events, used, True, type="team_proposed", leader=s, quest=q, attempt=a)
            case "vote":
                own = _first(events, used, True, type="vote_cast", seat=s, quest=q, attempt=a)
                return own if own is not None else _first(events, used, False, type="votes_revealed", quest=q,
                                                            attempt=a)
            case "quest":
                own = _first(events, used, True, type="quest_card", seat=s, quest=q)
                return own if own is not None else _first(events, used, False, type="quest_completed", quest=q)
            case "assassinate":
                hit = _first(events, used, False, type="assassination")
                return hit if hit is not None else _first(events, used, False, type="assassination_declined")
    if r["type"] == MODULE and r["slot"] == "response":
        return _first(events, used, True, type="speech", seat=r["seat"], text=r["text"])
    return None


def _quest_end(events: list[dict], quest: int) -> int | None:
    return next((i for i, e in enumerate(events) if e["type"] == "quest_completed" and e["quest"] == quest), None)
