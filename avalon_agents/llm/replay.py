"""Answers already paid for: a game's recorded calls, answered again without asking any model.

Every `llm_call` record carries the hash of its request (the messages with their roles, and the schema asked
for): `request_hash`. A `Recording` indexes a game's recorded calls by that hash, and LLMClient looks there
before it sends anything:

- **resume**: an interrupted game is played again from its start with its own recorded answers; each request
  that matches a recorded one gets that answer (recorded again, marked `replayed`), the first that does not
  goes to the model, and so on live. The provider never sees a request twice.
- **`replay:RUN_DIR`**: a provider that answers every call from a finished run's records (each game from the
  game of the same place in RUN_DIR). Re-executing the run with no server gives the same events; a request
  that matches no recorded one stops the run (`ReplayMismatch`, a kind of ModelUnusable: one line, exit 3)
  with the seat, the step, what the call was for and the first difference from the recorded request of that
  seat and step: a recorded run is a regression test of the framework.

Identical requests recorded with different answers are answered in their recorded order.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from avalon_agents.llm.health import ModelUnusable
from avalon_agents.records.environment import differences
from avalon_agents.records.run_dir import check_layout, has_trace, read_trace
from avalon_agents.records.run_record import read_run_record
from avalon_agents.records.trace import LLMCall, Message


def request_hash(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
    """The identity of a request: its messages (role and text) and the JSON schema it constrains the answer to
    (None: free text), whatever way the provider is asked for it."""
    body = json.dumps([[m.role, m.content] for m in messages] + [schema], sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:24]


WORDS = re.compile(r"\w+|\s+|[^\w\s]")
"""Words, spaces and signs: a difference is shown as whole words."""


class ReplayMismatch(ModelUnusable):
    """A replayed run asked what its recording never did (one line: where, and the first difference)."""


class Recording:
    """A game's recorded answers by request hash.

    Args:
        calls: the game's `llm_call` records (those without an answer or a hash are left out).
        strict: a request without a recorded answer is an error (`replay:`), not a call to make live (resume).
        where: what the recording is, for messages.
        environment: the environment the recording was made in (its run record's), named in a mismatch
            beside this process's where they differ.
    """

    def __init__(self, calls: Iterable[LLMCall], *, strict: bool = False, where: str = "",
                 environment: dict[str, str] | None = None) -> None:
        self.strict = strict
        self.where = where
        self.environment = environment
        self.calls = [c for c in calls if c.outcome != "failed" and c.reply is not None and c.request_hash]
        self._by_hash: dict[str, deque[LLMCall]] = {}
        for call in self.calls:
            self._by_hash.setdefault(call.request_hash, deque()).append(call)
        self._lock = threading.Lock()
        self.replayed = 0

    def take(self, key: str) -> LLMCall | None:
        """The recorded call that answers this request (each recorded answer is given once), or None."""
        with self._lock:
            found = self._by_hash.get(key)
            if not found:
                return None
            self.replayed += 1
            return found.popleft()

    def mismatch(self, seat: int | None, step: int | None, label: str, messages: Sequence[Message]) -> ReplayMismatch:
        """The error for a request nothing recorded answers: the first difference from the recorded request of
        the same seat and step (and purpose, where one matches)."""
        same = [c for c in self.calls if c.seat == seat and c.step == step]
        near = next((c for c in same if c.purpose.label == label), same[0] if same else None)
        where = f"replay of {self.where}: seat {seat}, step {step}, {label}"
        if near is None:
            return ReplayMismatch(f"{where}: the recording has no call of this seat at this step")
        difference = first_difference(near.messages, messages)
        return ReplayMismatch(f"{where}: the request differs from the recorded one: {difference}"
                              f"{environment_note(self.environment)}")


SHOWN = 4
"""Environment differences named in a mismatch (the rest counted)."""


def environment_note(recorded: dict[str, str] | None) -> str:
    """What a mismatch says of the environments: the recording's differences from this process's, or that
    there are none, or that the recording kept none (a run from before run records)."""
    if recorded is None:
        return "; the recording names no environment"
    found = differences(recorded)
    if not found:
        return "; recorded in this same environment"
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return "; recorded elsewhere: " + ", ".join(found[:SHOWN]) + more


def first_difference(recorded: Sequence[Message], now: Sequence[Message]) -> str:
    """Where two requests first differ, in a few words: the message, and the text around the change."""
    for i, (old, new) in enumerate(zip(recorded, now), 1):
        if old.role != new.role:
            return f"message {i} is a {new.role} message, was a {old.role} message"
        if old.content != new.content:
            a, b = WORDS.findall(old.content), WORDS.findall(new.content)
            matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
            _, a0, a1, b0, b1 = next(op for op in matcher.get_opcodes() if op[0] != "equal")
            before = "".join(a[max(0, a0 - 8):a0])
            return (f"message {i} ({new.role}), after {before!r}: recorded {''.join(a[a0:a1])[:80]!r}, now "
                    f"{''.join(b[b0:b1])[:80]!r}")
    if len(recorded) != len(now):
        return f"{len(now)} messages, recorded {len(recorded)}"
    return "the output format asked for differs"


def game_place(path: Path) -> tuple[str, ...]:
    """Where a game directory sits in its run: (variant, series, game) or (game,)."""
    parts = Path(path).parts
    if len(parts) >= 3 and parts[-2].startswith("series-"):
        return parts[-3:]
    return parts[-1:]


def game_recording(game: Path, strict: bool = False) -> Recording:
    """The recording of a game directory's trace."""
    return Recording((r for r in read_trace(game) if isinstance(r, LLMCall)), strict=strict, where=str(game))


def run_recording(run_dir: Path, game: Path | None) -> Recording:
    """The strict recording of the game at `game`'s place in the finished run `run_dir`."""
    if game is None:
        raise ReplayMismatch(f"replay of {run_dir}: a call outside a recorded game (no game directory)")
    source = Path(run_dir).joinpath(*game_place(game))
    if not has_trace(source):
        raise ReplayMismatch(f"replay of {run_dir}: no recorded game at {source}")
    check_layout(Path(run_dir), [source])  # a run of a newer layout: one line, as every reader of runs says
    record = read_run_record(Path(run_dir))
    return Recording((r for r in read_trace(source) if isinstance(r, LLMCall)), strict=True, where=str(source),
                     environment=record.environment if record is not None else None)
