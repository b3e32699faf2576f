"""JSON decisions: the schema an agent's constrained answer follows for each request, and reading it back.

With constrained output the server can only produce text matching the schema, so even a 135M-parameter
model names the right number of real seats. Reading is strict: anything that does not fit is None.
"""

from __future__ import annotations

import json
import re
from typing import Any

from avalon_agents.core.actions import Action, ActionRequest, Assassinate, ProposeTeam, QuestCard, RequestKind, Vote

REASON = {"type": "string", "maxLength": 200}
JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def decision_schema(request: ActionRequest) -> dict[str, Any] | None:
    """The JSON schema of a decision answer (None for speeches, which are free text)."""
    kind = request.kind
    if kind is RequestKind.PROPOSE:
        seats = {"type": "integer", "enum": list(request.options)}
        answer = {"team": {"type": "array", "items": seats, "minItems": request.team_size,
                           "maxItems": request.team_size}}
    elif kind is RequestKind.VOTE:
        answer = {"vote": {"type": "string", "enum": ["approve", "reject"]}}
    elif kind is RequestKind.QUEST:
        answer = {"card": {"type": "string", "enum": ["success", "fail"] if request.can_fail else ["success"]}}
    elif kind is RequestKind.ASSASSINATE:
        targets = list(request.options) + ([0] if request.may_pass else [])
        answer = {"merlin": {"type": "integer", "enum": targets}}
    else:
        return None
    key = next(iter(answer))
    return {"type": "object", "properties": {"reason": REASON, **answer}, "required": ["reason", key]}


def load_json(text: str) -> dict[str, Any] | None:
    """The JSON object in `text` (whole, or the first {...} block), or None."""
    for candidate in (text, *(m.group(0) for m in [JSON_OBJECT.search(text)] if m)):
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, TypeError):
            continue
        if isinstance(value, dict):
            return value
    return None


def read_decision(text: str, request: ActionRequest) -> Action | None:
    """The action in a JSON decision answer, or None if the text is not one."""
    value = load_json(text)
    if value is None:
        return None
    kind = request.kind
    try:
        if kind is RequestKind.PROPOSE and isinstance(value.get("team"), list):
            return ProposeTeam(team=tuple(int(s) for s in value["team"]))
        if kind is RequestKind.VOTE and value.get("vote") in ("approve", "reject"):
            return Vote(approve=value["vote"] == "approve")
        if kind is RequestKind.QUEST and value.get("card") in ("success", "fail"):
            return QuestCard(success=value["card"] == "success")
        if kind is RequestKind.ASSASSINATE and "merlin" in value:
            target = int(value["merlin"])
            return Assassinate(target=target or None)
    except (TypeError, ValueError):
        return None
    return None
