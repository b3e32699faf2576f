"""The spectator's view of a web table: public events only (what every seat may see), who the game is waiting
for, and the roles once the game has ended. A GameWatcher (host.host): told, never asked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from avalon_agents.core.actions import ActionRequest
from avalon_agents.core.events import GameEnded, GameEvent, GameStarted
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat
from avalon_agents.decisions.kinds import kind_of
from avalon_agents.records.transcript import transcript
from avalon_agents.table.desk import QuestTrack, ending, seen


class Spectator:
    """What `GET /api/watch` answers: the transcript of the public events, the quest track, the seats the game
    waits on (a public fact: everyone sees who has not voted yet), the end with every role."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.game = 0
        self.waiting_on: dict[int, tuple[Seat, str]] = {}
        self.asked: set[tuple[Seat, str]] = set()  # every (seat, kind) shown as waited on
        self._new_game()

    def _new_game(self) -> None:
        self.track = QuestTrack(self.rules)
        self.events: list[GameEvent] = []
        self.lines: list[str] = []  # the transcript of the public events
        self.shown: list[dict[str, Any]] = []  # each public event as data; `line`: the index of its first line
        self.started: GameStarted | None = None  # the game's rules, which the transcript's lines name
        self.result: dict[str, Any] | None = None
        self.replay: str | None = None

    def waiting(self, request: ActionRequest) -> None:
        if kind_of(request).asked_in_public:  # never whom an assassination is asked of
            self.waiting_on[id(request)] = (request.seat, request.kind.value)
            self.asked.add(self.waiting_on[id(request)])

    def answered(self, request: ActionRequest) -> None:
        self.waiting_on.pop(id(request), None)

    def tracing(self, records: Sequence[Any]) -> None:
        """The trace (LLM calls, extractions) is no spectator's business."""

    def delivered(self, events: Sequence[GameEvent]) -> None:
        for e in events:
            if isinstance(e, GameStarted):
                self._new_game()
                self.game += 1
            if e.visible_to != "all":
                continue
            self.events.append(e)
            if isinstance(e, GameStarted):
                self.started = e
            self.shown.append({**seen(e), "line": len(self.lines)})
            context = [self.started] if self.started is not None and e is not self.started else []  # one line
            self.lines += transcript([*context, e])[len(context):]
            self.track.see(e)
            if isinstance(e, GameEnded):
                self.result = ending(e)

    def waited_on(self) -> list[dict[str, Any]]:
        """The seats the game is waiting for, and for what (never an assassination: see `waiting`)."""
        return [{"seat": s, "kind": k} for s, k in sorted(set(self.waiting_on.values()))]

    def state(self) -> dict[str, Any]:
        return {"seat": None, "game": self.game, "role": None, "lines": list(self.lines),
                "events": list(self.shown), "request": None,
                "over": self.result is not None, "waiting": self.waited_on(),
                **self.track.state(), "result": self.result, "replay": self.replay}
