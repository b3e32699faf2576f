"""A readable transcript of a game from its events (the ground truth, all of it)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from avalon_agents.core.events import (
    AssassinationAttempted,
    AssassinationDeclined,
    GameEnded,
    GameEvent,
    GameStarted,
    LadyExamined,
    LadyGiven,
    LadyRevealed,
    LeaderChosen,
    NightInfoRevealed,
    QuestCardPlayed,
    QuestCompleted,
    RoleAssigned,
    SpeechGiven,
    TeamProposed,
    VoteCast,
    VotesRevealed,
)
from avalon_agents.core.types import seat_name
from avalon_agents.records.trace import Extraction, SeatFault

REASONS = {
    "three_successes": "three quests succeeded",
    "assassin_missed": "three quests succeeded and the assassination missed Merlin",
    "three_fails": "three quests failed",
    "merlin_assassinated": "the assassination found Merlin",
    "five_rejections": "five team proposals in one quest were rejected",
}


def printable(text: str) -> str:
    """What a seat said, safe to print on a terminal: control and format characters (an escape sequence, a
    right-to-left override, a line separator) shown as `\\uXXXX` escapes, never obeyed; a new line stays one,
    indented under the speaker."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\n    ")
        elif ch != "\t" and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def _names(seats: Iterable[int]) -> str:
    return ", ".join(seat_name(s) for s in seats)


UNLISTED = ("role_assigned", "vote_cast", "quest_card", "assassination_declined")
"""The events the transcript leaves out (a seat's own role, vote and card are in the game's result and votes;
a declined assassination changes nothing); every other event is a line."""


Decided = frozenset[tuple[str, int, int, int]]
"""The decisions a fallback made: (request kind, seat, quest, attempt)."""


def fell_back(records: Iterable[object]) -> Decided:
    """The decisions of a game's trace records that its fallback made, not its seat: an LLM seat's answer no stage
    could read (an Extraction by `fallback`), a program's or a person's after its errors or its time
    (a SeatFault `fallback`)."""
    return frozenset((r.kind, r.seat, r.quest, r.attempt) for r in records
                     if (isinstance(r, Extraction) and r.method == "fallback")
                     or (isinstance(r, SeatFault) and r.problem == "fallback" and r.kind and r.quest is not None
                         and r.attempt is not None))


def _fallback(decided: Decided, kind: str, seats: Iterable[int], quest: int | None, attempt: int | None = None,
              what: str = "") -> str:
    """The mark of a transcript line whose decision, or some seats' part of it, a fallback made ("" if none; a
    None quest or attempt: any)."""
    fell = [s for s in seats if any(k == kind and seat == s and quest in (None, q) and attempt in (None, a)
                                    for k, seat, q, a in decided)]
    if not fell:
        return ""
    return f"  [fallback, no answer could be read: the {what} of {_names(fell)}]"


def transcript(events: Iterable[GameEvent], speeches: bool = True, decided: Decided = frozenset()) -> list[str]:
    """One line per game event (private night information included, marked as such); a decision a fallback made
    (`decided`, from the game's trace: `fell_back`) marked on its line, so a game a fallback decided says so."""
    lines: list[str] = []
    holder = "Assassin"  # the role that carries the assassination, as the rules name it
    for e in events:
        if isinstance(e, GameStarted):
            r = e.rules
            holder = r.assassin_role.value if r.assassin_role else holder
            lines.append(f"Avalon, {r.players} players, {r.name} rules; quest sizes {list(r.quest_sizes)}")
        elif isinstance(e, RoleAssigned):
            continue
        elif isinstance(e, NightInfoRevealed):
            what = {"evil": "sees evil at", "merlin_or_morgana": "sees Merlin/Morgana at",
                    "evil_teammates": "sees evil teammates at", "nothing": "sees"}[e.known_as]
            lines.append(f"  (night) {seat_name(e.seat)} {what} {_names(e.seats) or 'nobody'}")
        elif isinstance(e, LeaderChosen):
            last = " (last proposal)" if e.final else ""
            lines.append(f"Quest {e.quest}.{e.attempt}: {seat_name(e.leader)} leads; team of {e.team_size}{last}")
        elif isinstance(e, SpeechGiven):
            if speeches:
                lines.append(f"  {seat_name(e.seat)}: {printable(e.text)}")
        elif isinstance(e, TeamProposed):
            how = "assigns" if e.assigned else "proposes"
            lines.append(f"  {seat_name(e.leader)} {how} {_names(e.team)}"
                         + _fallback(decided, "propose", [e.leader], e.quest, e.attempt, "team"))
        elif isinstance(e, VotesRevealed):
            verdict = "approved" if e.approved else "rejected"
            who = f" (approve: {_names(e.approvals) or 'none'})" if e.approvals or e.rejections else ""
            lines.append(f"  vote {e.approve_count}-{e.reject_count}: {verdict}{who}"
                         + _fallback(decided, "vote", sorted([*e.approvals, *e.rejections]), e.quest, e.attempt,
                                     "vote"))
        elif isinstance(e, (VoteCast, QuestCardPlayed, AssassinationDeclined)):
            continue
        elif isinstance(e, QuestCompleted):
            verdict = "SUCCESS" if e.success else "FAIL"
            score = f"score good {e.good_points} - evil {e.evil_points}"
            lines.append(f"  quest {e.quest} {verdict} with {e.fails} fail card(s); {score}"
                         + _fallback(decided, "quest", e.team, e.quest, None, "card"))
        elif isinstance(e, AssassinationAttempted):
            verdict = "hit: it was Merlin" if e.hit else "missed"
            lines.append(f"{holder} {seat_name(e.assassin)} names {seat_name(e.target)} as Merlin: {verdict}"
                         + _fallback(decided, "assassinate", [e.assassin], None, None, "target"))
        elif isinstance(e, LadyGiven):
            lines.append(f"  {seat_name(e.holder)} holds the Lady of the Lake")
        elif isinstance(e, LadyExamined):
            lines.append(f"  Lady of the Lake: {seat_name(e.holder)} examines {seat_name(e.target)}"
                         + _fallback(decided, "lady", [e.holder], e.quest, None, "choice"))
        elif isinstance(e, LadyRevealed):
            lines.append(f"  (private) the Lady shows {seat_name(e.holder)}: {seat_name(e.target)} is "
                         f"{e.loyalty.value}")
        elif isinstance(e, GameEnded):
            lines.append(f"{e.winner.value.upper()} wins: {REASONS[e.reason.value]}")
            lines.append("Roles: " + "; ".join(f"{seat_name(s)} {r.value}" for s, r in sorted(e.roles.items())))
    return lines
