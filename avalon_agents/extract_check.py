"""What `avalon extract` runs: one extraction outside a game (the CLI's tool, beside it on the top floor; the
extractor itself is `extract/`)."""

from __future__ import annotations

from typing import Any

from avalon_agents.core.actions import ActionRequest, Reply, RequestKind
from avalon_agents.core.rules import QUEST_SIZES
from avalon_agents.decisions.kinds import KINDS, plain
from avalon_agents.extract.extractor import EXTRACTOR_SETTINGS, Extractor
from avalon_agents.llm import ClientPool, check_reachable


def request_for(kind: str, *, team_size: int, players: int, seat: int, evil: bool) -> ActionRequest:
    """A request like the one the host would have sent (`kind`: a decision kind's name, decisions.kinds.KINDS)."""
    spec = KINDS[kind]
    proposing = spec.kind is RequestKind.PROPOSE
    if proposing and not 1 <= team_size <= players:
        raise ValueError(f"team-size: must be 1..{players}, got {team_size}")
    seats = tuple(range(1, players + 1))
    team = tuple(s for s in seats if s != seat)[: QUEST_SIZES[players][0] - 1] + (seat,)
    return ActionRequest(
        seat=seat,
        kind=spec.kind,
        quest=1,
        attempt=1,
        options=seats if proposing else tuple(s for s in seats if s != seat),  # only a team may hold the speaker
        team_size=team_size if proposing else None,
        team=tuple(sorted(team)),
        can_fail=evil,
    )


async def run_extract(kind: str, text: str, *, team_size: int, players: int, seat: int, evil: bool,
                      model_spec: str | None) -> dict[str, Any]:
    request = request_for(kind, team_size=team_size, players=players, seat=seat, evil=evil)
    llm = None
    if model_spec:
        settings = EXTRACTOR_SETTINGS.model_copy(update={"spec": model_spec})
        check_reachable(settings)
        llm = ClientPool().get(settings)
    extraction = await Extractor(llm=llm).extract(request, Reply(text=text))
    return {"action": plain(extraction.action), "method": extraction.method, "valid": extraction.valid}
