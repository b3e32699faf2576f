"""The seat protocol (docs/seats.md): the messages a program playing a seat gets, and the reading of its answers.

Protocol version `PROTOCOL` (1). Messages are JSON objects, each carrying `type`, `game` (the game's id, unique
within its run) and `seat`. The framework sends `start` (the protocol's version, the seat's role, the game's setup
as data and the seat's system prompt), `event` (the host's narration of one event the seat may see, and the event
as in events.jsonl), `request` (a unique id, the request's kind, the host's instruction and the legal answers) and
`end` (the result). The seat answers each request with `{"id": ID, "answer": TEXT}` (read as a person's line is: a
JSON decision in it, else the whole-word rule parse) or `{"id": ID, "action": {...}}`, a typed action keyed as
the constrained answers of decisions.kinds are: `{"team": [1, 2]}`, `{"vote": "approve"}`, `{"card": "fail"}`,
`{"merlin": 4}` (0: pass, where allowed), `{"text": "..."}` for a speech.

The builders return plain dicts and `read_line` / `read_answer` take what came back, so the same objects can go
over any transport: a `Transport` carries them (agents.pipes: a process's standard input and output;
agents.web_seat: HTTP POSTs to a server) and raises `SeatDown` when its program can be asked nothing more. Nothing
here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from avalon_agents.core.actions import Action, ActionRequest, IllegalAction, Speak
from avalon_agents.core.events import EVENT_ADAPTER, GameEvent, GameResult
from avalon_agents.core.rules import LADY_QUESTS, RuleSet, lady_first_holder
from avalon_agents.core.types import Role, Seat
from avalon_agents.decisions.kinds import MAX_SPEECH, kind_of

PROTOCOL = 1
"""The protocol's version, sent in `start` (docs/seats.md says what changes between versions)."""
MAX_LINE = 1 << 20
"""The longest line a program may write (bytes); a longer one is a protocol error."""


class ProtocolError(ValueError):
    """A message that breaks the protocol. `problem` is its SeatFault problem (`bad_json`, `unknown_id`,
    `illegal`)."""

    def __init__(self, problem: str, detail: str) -> None:
        super().__init__(detail)
        self.problem = problem


class SeatDown(Exception):
    """The program (or server) can be asked nothing more this game. `problem` is its SeatFault problem: `timeout`
    (no answer in time) or `crash` (it cannot start, ended, broke its pipes; a server that refuses, resets or
    answers an error status)."""

    def __init__(self, problem: str, detail: str) -> None:
        super().__init__(detail)
        self.problem = problem
        self.detail = detail


SETUP_RESOLVED: dict[str, tuple[str, str]] = {
    "assassin": ("string or null", "The role that strikes at Merlin (the RuleSet's `assassin`, resolved: the "
                                   "Assassin unless the rules name another evil role); null: no Merlin in play, "
                                   "nobody strikes."),
    "lady_of_the_lake": ("object or null", "null: the Lady of the Lake is not used. Else `first_holder`: the seat "
                                           "that holds it first (the seat before the first leader; null when the "
                                           "first leader is drawn: the `lady_given` event names it), and "
                                           "`after_quests`: the quests after which its holder examines a player."),
    "sides": ("object", "Each role in play (by name) and its side, `\"good\"` or `\"evil\"`."),
}
"""The keys of `setup` that are not a RuleSet field as meta.json records it: their type and meaning (docs)."""


def setup(rules: RuleSet) -> dict[str, Any]:
    """The game's setup as data, as `start` carries it: every field of the RuleSet as meta.json records it (a new
    field reaches programs without a change here), with `assassin` resolved to the role that strikes at Merlin
    (None: no Merlin, nobody strikes), `lady_of_the_lake` to None (not used) or where it starts and when it is
    used, and `sides`: the side of each role in play."""
    return {**rules.model_dump(mode="json"),
            "assassin": rules.assassin_role.value if rules.assassin_role else None,
            "lady_of_the_lake": _lady(rules),
            "sides": {role.value: role.side.value for role in dict.fromkeys(rules.roles)}}


def _lady(rules: RuleSet) -> dict[str, Any] | None:
    if not rules.lady_of_the_lake:
        return None
    first = rules.first_leader
    return {"first_holder": None if first == "random" else lady_first_holder(first, rules.players),
            "after_quests": list(LADY_QUESTS)}


def start(game: str, seat: Seat, role: Role, rules: RuleSet, system: str) -> dict[str, Any]:
    """The seat learns its role: the protocol's version, the game's setup (`setup`) and the seat's system prompt."""
    return {"type": "start", "protocol": PROTOCOL, "game": game, "seat": seat, "players": rules.players,
            "role": role.value, "setup": setup(rules), "system": system}


def event(game: str, seat: Seat, e: GameEvent, text: str | None) -> dict[str, Any]:
    """One event the seat may see: the host's narration of it ("" for an event the host does not narrate) and the
    event as events.jsonl holds it."""
    return {"type": "event", "game": game, "seat": seat, "text": text or "",
            "event": EVENT_ADAPTER.dump_python(e, mode="json")}


def legal(request: ActionRequest) -> dict[str, Any]:
    """The legal answers of a request, as its message carries them."""
    return kind_of(request).legal(request)


def request_message(game: str, seat: Seat, id: str, request: ActionRequest, text: str) -> dict[str, Any]:
    """A request: its kind, the host's instruction, the legal answers by shape, and `key`, the key of a typed
    answer (`{"action": {key: value}}`), so a program can answer a kind it has never seen by the shape alone; and
    `team`, the team the request is about (voted on, sent on the quest, discussed) when there is one."""
    return {"type": "request", "game": game, "seat": seat, "id": id, "kind": request.kind.value, "text": text,
            "legal": legal(request), "key": kind_of(request).key or "text",
            **({"team": list(request.team)} if request.team else {})}


def end(game: str, seat: Seat, result: GameResult) -> dict[str, Any]:
    return {"type": "end", "game": game, "seat": seat, "result": result.model_dump(mode="json")}


def dumps(message: dict[str, Any]) -> str:
    """One message as one line (ASCII-escaped JSON: no character in it can break the line)."""
    return json.dumps(message, ensure_ascii=True, separators=(",", ":"))


@dataclass(frozen=True)
class Answer:
    """A program's answer to a request: its id, and its text or its typed action's JSON object."""

    id: str
    text: str | None = None
    action: dict[str, Any] | None = None


class Transport(Protocol):
    """What carries one seat's messages to its program and the program's answers back, for one game (built
    with the request timeout, `timeout` seconds). Each method but `abandon` and `close` raises SeatDown when the
    program can be asked nothing more; ExternalAgent decides what follows (re-asks, fallbacks, faults)."""

    async def open(self) -> None:
        """The seat learns its role: start the program (or the connection to it)."""

    async def send(self, message: dict[str, Any]) -> None:
        """Deliver a `start`, `event` or `end` message (or hold it until the next request; never an `end`)."""

    async def ask(self, message: dict[str, Any], stray: Callable[[Answer], None]) -> Answer:
        """Deliver a `request` message and return the program's answer to it. Raises ProtocolError for a reply
        that is no answer to it; calls `stray` with an answer to another id that is skipped (over pipes, where the
        right answer may still come)."""

    def abandon(self) -> None:
        """The program is down: stop it at once; nothing more is sent."""

    async def close(self) -> None:
        """The game is over or stopped: release the program (a process, a session). Safe to call more than once."""


def read_line(line: str | bytes) -> Answer:
    """One line a program wrote, as an answer; ProtocolError `bad_json` if it is none."""
    if len(line) > MAX_LINE:
        raise ProtocolError("bad_json", f"a line of {len(line)} bytes (at most {MAX_LINE})")
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        raise ProtocolError("bad_json", f"not JSON: {_short(line)}") from None
    if not isinstance(value, dict):
        raise ProtocolError("bad_json", f"not a JSON object: {_short(line)}")
    id = value.get("id")
    if not isinstance(id, str):
        raise ProtocolError("bad_json", f"no string \"id\": {_short(line)}")
    answer, action = value.get("answer"), value.get("action")
    if (answer is None) == (action is None):
        raise ProtocolError("bad_json", f"give one of \"answer\" (a string) or \"action\" (an object): {_short(line)}")
    if answer is not None and not isinstance(answer, str):
        raise ProtocolError("bad_json", "\"answer\" must be a string")
    if action is not None and not isinstance(action, dict):
        raise ProtocolError("bad_json", "\"action\" must be a JSON object")
    return Answer(id=id, text=answer, action=action)


def read_answer(answer: Answer, request: ActionRequest) -> Action:
    """The legal action an answer gives `request`; ProtocolError `illegal` naming why there is none."""
    spec = kind_of(request)
    if answer.action is not None:
        key = spec.key or "text"
        if key not in answer.action:
            raise ProtocolError("illegal", f"the action of a {request.kind.value} request is {{\"{key}\": ...}}")
        value = answer.action[key]
        if spec.key is None:  # a speech
            if not isinstance(value, str):
                raise ProtocolError("illegal", "a speech's \"text\" must be a string")
            return speech(value)
        action = spec.value_of(value)
        if action is None:
            raise ProtocolError("illegal", f"{key}: {_short(json.dumps(value))} names no {request.kind.value}")
    else:
        text = answer.text or ""
        if spec.key is None:  # a speech
            return speech(text)
        action = spec.read_json(text) or spec.parse(text, request)
        if action is None:
            raise ProtocolError("illegal", "no clear answer")
    try:
        return request.validate(action)
    except IllegalAction as exc:
        raise ProtocolError("illegal", str(exc)) from None


def too_long(text: str) -> str | None:
    """Why a speech is too long (decisions.kinds.MAX_SPEECH, a program's or a person's at the web table), or
    None."""
    return f"a speech has at most {MAX_SPEECH} characters, not {len(text)}" if len(text) > MAX_SPEECH else None


def speech(text: str) -> Speak:
    """A speech answered; ProtocolError `illegal` (re-asked with the reason) when it is longer than MAX_SPEECH."""
    if (why := too_long(text)) is not None:
        raise ProtocolError("illegal", why)
    return Speak(text=text)


def _short(text: str | bytes, limit: int = 80) -> str:
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")
