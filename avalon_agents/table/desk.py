"""A person's seat at the web table (a `Desk` of agents.human): what the seat's page shows, and the answers typed
there, read and checked as a terminal's are.

`state()` is exactly what `GET /api/seat/N` answers: built only from what the host showed this seat (its system
prompt, the narration of the events it may see, its own requests, what the fallback answered for it), so it can
hold nothing the seat may not know.
"""

from __future__ import annotations

import asyncio
from typing import Any

from avalon_agents.agents.human import NoAnswer, read_answer
from avalon_agents.agents.protocol import request_message, setup
from avalon_agents.aio import within
from avalon_agents.core.actions import Action, ActionRequest, IllegalAction
from avalon_agents.core.events import (
    EVENT_ADAPTER,
    GameEnded,
    GameEvent,
    GameResult,
    LeaderChosen,
    QuestCompleted,
    RoleAssigned,
)
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat
from avalon_agents.decisions.kinds import kind_of

MAX_ANSWER = 200
"""The most characters any other answer may have."""


class QuestTrack:
    """The public state of the table: each quest's team size and result, the current leader and proposal, the
    game's setup (as the seat protocol's `start` gives it)."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.results: dict[int, bool] = {}
        self.leader: Seat | None = None
        self.quest: int = 1
        self.proposal: int = 1

    def see(self, event: GameEvent) -> None:
        if isinstance(event, LeaderChosen):
            self.leader, self.quest, self.proposal = event.leader, event.quest, event.attempt
        elif isinstance(event, QuestCompleted):
            self.results[event.quest] = event.success

    def state(self) -> dict[str, Any]:
        quests = [{"quest": q, "team_size": size, "fails_required": fails,
                   "result": None if q not in self.results else ("success" if self.results[q] else "fail")}
                  for q, (size, fails) in enumerate(zip(self.rules.quest_sizes, self.rules.fails_required), 1)]
        return {"players": self.rules.players, "quests": quests, "leader": self.leader, "quest": self.quest,
                "proposal": self.proposal, "max_proposals": self.rules.max_proposals, "setup": setup(self.rules)}


def ending(result: GameResult | GameEnded) -> dict[str, Any]:
    """The end as the table shows it: the winner, why, and every seat's role."""
    return {"winner": result.winner.value, "reason": result.reason.value,
            "roles": {str(s): r.value for s, r in sorted(result.roles.items())}}


def seen(event: GameEvent) -> dict[str, Any]:
    """An event as a page reads it (its JSON fields, as in events.jsonl)."""
    return EVENT_ADAPTER.dump_python(event, mode="json")


class WebDesk:
    """One person's seat at the web table.

    Args:
        seat: the seat.
        rules: the game's rules (the quest track's sizes).
        decision_timeout: seconds a person may take over one request before the fallback decides (None: no
            limit).
    """

    def __init__(self, seat: Seat, rules: RuleSet, decision_timeout: float | None = None) -> None:
        self.seat = seat
        self.rules = rules
        self.decision_timeout = decision_timeout
        self.game = 0  # the game of the session the seat is in (1-based; 0: none dealt yet)
        self.changed = asyncio.Event()  # set at every change: an in-process client (the tests' pilot) waits on it
        self._asked = 0
        self._new_game()

    def _new_game(self) -> None:
        """What the seat knows starts afresh at each game's deal."""
        self.track = QuestTrack(self.rules)
        self.role: str | None = None
        self.system = ""
        self.lines: list[str] = []
        self.events: list[dict[str, Any]] = []  # the events shown, as data; `line`: the index of its narration
        self.request: dict[str, Any] | None = None  # the open request's protocol message
        self.result: dict[str, Any] | None = None
        self.replay: str | None = None  # the game's replay address, once written
        self.timeout_notice: dict[str, str] | None = None  # the last answer the fallback gave for this seat
        self._open: ActionRequest | None = None
        self._answer: asyncio.Future[str] | None = None

    # ------------------------------------------------------------------ the Desk the seat's HumanAgent uses

    def show(self, text: str, event: GameEvent | None = None) -> None:
        if isinstance(event, RoleAssigned):
            self._new_game()
            self.game += 1
            self.role, self.system = event.role.value, text
        else:
            if event is not None:
                self.events.append({**seen(event), "line": len(self.lines)})
                self.track.see(event)
            self.lines.append(text)
        self._changed()

    async def ask(self, request: ActionRequest, text: str) -> str:
        self._asked += 1
        self._open = request
        self.request = request_message(str(self.game), self.seat, f"{self.seat}-{self._asked}", request, text)
        self._answer = asyncio.get_running_loop().create_future()
        self._changed()
        try:
            return await within(self._answer, self.decision_timeout)
        except TimeoutError:
            raise NoAnswer(f"no answer in {self.decision_timeout:g} s (--decision-timeout)") from None
        finally:
            self._open = self.request = self._answer = None
            self._changed()

    def decided(self, request: ActionRequest, action: Action) -> None:
        """No answer came in time: the seat's state carries what the fallback answered (`timeout_notice`, until
        the person's next answer is taken), and its log says so."""
        words = kind_of(request).say(action)
        text = (f"No answer in {self.decision_timeout:g} s, so the host answered for you: {words}" if words else
                f"No answer in {self.decision_timeout:g} s, so you said nothing this time.")
        self.timeout_notice = {"id": f"{self.seat}-{self._asked}", "kind": request.kind.value, "text": text}
        self.lines.append(text)
        self._changed()

    def end(self, result: GameResult) -> None:
        self.result = ending(result)
        self._changed()

    # ------------------------------------------------------------------ the page's side

    def stale(self, request_id: str | None) -> str | None:
        """Why an answer meant for the request `request_id` (None: whichever is open) cannot be taken now (it was
        answered, or its time ran out and another may be open), or None."""
        if self.request is None:
            return "no request is open for this seat"
        if request_id is not None and request_id != self.request["id"]:
            return f"that request is no longer open (the open one is {self.request['id']})"
        return None

    def answer(self, text: str) -> str | None:
        """Take the person's answer to the open request: None if taken, else why not (the re-ask's reason). The
        answer is read as a terminal's line is (agents.human.read_answer: a speech takes any text up to
        decisions.kinds.MAX_SPEECH characters, an empty one too), any other answer at most MAX_ANSWER characters."""
        request = self._open
        if request is None or self._answer is None or self._answer.done():
            return "no request is open for this seat"
        if kind_of(request).key is not None and len(text) > MAX_ANSWER:  # a speech's cap: read_answer's
            return f"at most {MAX_ANSWER} characters, not {len(text)}"
        try:
            read_answer(text, request)
        except IllegalAction as exc:
            return str(exc)
        self._answer.set_result(text)
        self.request = self.timeout_notice = None  # taken: a page asking now sees no open request
        self._changed()
        return None

    def state(self) -> dict[str, Any]:
        """What `GET /api/seat/N` answers."""
        return {"seat": self.seat, "game": self.game, "role": self.role, "system": self.system,
                "lines": list(self.lines), "events": list(self.events), "request": self.request,
                "over": self.result is not None,
                **self.track.state(), "result": self.result, "replay": self.replay,
                "timeout_notice": self.timeout_notice}

    def _changed(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()
