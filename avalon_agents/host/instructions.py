"""Plain wording of requests. The natural-language host templates (prompts/host/) replace this later."""

from __future__ import annotations

from avalon_agents.core.actions import ActionRequest, RequestKind
from avalon_agents.core.types import seat_name


def describe_request(request: ActionRequest) -> str:
    """A one-line instruction stating exactly what answer is expected."""
    where = f"Quest {request.quest}, proposal {request.attempt}"
    team = ", ".join(seat_name(s) for s in request.team)
    kind = request.kind
    if kind is RequestKind.PROPOSE:
        return f"{where}: you lead. Name exactly {request.team_size} players for the quest team."
    if kind is RequestKind.SPEAK:
        return f"{where}: it is your turn to speak" + (f" about the team {team}." if team else ".")
    if kind is RequestKind.VOTE:
        return f"{where}: vote to approve or reject the team {team}."
    if kind is RequestKind.QUEST:
        return f"Quest {request.quest}: play a success card" + (" or a fail card." if request.can_fail else ".")
    return "Name the player you believe is Merlin." + (" You may also hold off." if request.may_pass else "")
