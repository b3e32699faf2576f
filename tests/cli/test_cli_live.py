"""`avalon play` as a person at a terminal sees it: one game's transcript streams as the game goes, one line says
who the game is waiting for (never over a human seat's prompt), piped output stays as it was, and a run on the
embedded model says once what that model is for.

The terminal is a pseudo-terminal (the `pty` module) in this process: `avalon play` runs in a thread with its
standard streams on the terminal's side, and a reader drains the other side as a screen. The scripted model is
held at chosen calls (a gate) so the test can look at the screen while the game still runs.
"""

from __future__ import annotations

import asyncio
import fcntl
import io
import os
import pty
import re
import struct
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from avalon_agents.cli import base, live
from avalon_agents.core.actions import ActionRequest, RequestKind
from avalon_agents.llm.scripted import YOU_ARE, ScriptedChatModel
from tests.helpers import avalon

LLM_GAME = ("play", "--seats", "llm", "--model", "scripted", "--players", "5")
DRAWN = re.compile(r"\r\x1b\[K((?:waiting for|the seats think)[^\r\n]*?, \d+ s(?=\r))?")
"""The waiting line as drawn (back to the line's start, erase, its text up to the next redraw or erasure), or
erased."""
WAIT = 10.0


class Screen:
    """The terminal's other side, read in a thread: everything written to it, as text."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.text = ""
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # the terminal closed
                return
            if not data:
                return
            with self._changed:
                self.text += data.decode(errors="replace")
                self._changed.notify_all()

    def wait_for(self, pattern: str, start: int = 0, timeout: float = WAIT) -> re.Match:
        """The first match of `pattern` in the screen's text from `start`, waiting for it to be written."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while (found := re.compile(pattern).search(self.text, start)) is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{pattern!r} not on the screen after {timeout} s:\n{self.text[-3000:]!r}")
                self._changed.wait(left)
        return found

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())


@contextmanager
def terminal(monkeypatch) -> Iterator[Screen]:
    """stdin, stdout and stderr on one pseudo-terminal, 200 columns wide; yields its screen."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # "\n" stays "\n" on the screen
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    out = open(slave, "w", buffering=1, closefd=False)  # noqa: SIM115 (closed below)
    inp = open(slave, closefd=False)  # noqa: SIM115
    for name, stream in (("stdin", inp), ("stdout", out), ("stderr", out)):
        monkeypatch.setattr(sys, name, stream)
    monkeypatch.setattr(live, "TICK", 0.02)
    screen = Screen(master)
    try:
        yield screen
    finally:
        out.close()
        inp.close()
        os.close(slave)
        time.sleep(0.05)  # the reader drains what is left
        os.close(master)


@contextmanager
def running(*args: str) -> Iterator[dict]:
    """`avalon ARGS` in a thread (its standard streams: this process's); yields {"code": exit code} once done."""
    from avalon_agents.cli import main

    result: dict = {}

    def work() -> None:
        argv = sys.argv
        sys.argv = ["avalon", *args]
        try:
            main()
            result["code"] = 0
        except SystemExit as exc:
            result["code"] = exc.code
        except BaseException as exc:  # noqa: BLE001 (the test reports it)
            result["error"] = exc
        finally:
            sys.argv = argv

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        yield result
    finally:
        thread.join(WAIT)
        assert not thread.is_alive(), "avalon play did not end"


class Gate:
    """Holds each scripted model call that `hold(prompt, last message)` picks until it is released, in order: the
    game waits there."""

    def __init__(self, monkeypatch, hold: Callable[[str, str], bool]) -> None:
        self.hold = hold
        self.held: list[int] = []  # the seats whose call was held, in order
        self.released = 0
        gate = self
        answer = ScriptedChatModel._agenerate

        async def held(model, messages, stop=None, run_manager=None, **kwargs):
            prompt = "\n".join(str(m.content) for m in messages)
            if gate.hold(prompt, str(messages[-1].content)):
                number = len(gate.held)
                gate.held.append(int(YOU_ARE.search(prompt).group(1)))
                deadline = time.monotonic() + WAIT
                while gate.released <= number and time.monotonic() < deadline:
                    await asyncio.sleep(0.005)
            return await answer(model, messages, stop, run_manager, **kwargs)

        monkeypatch.setattr(ScriptedChatModel, "_agenerate", held)

    def holding(self, calls: int) -> list[int]:
        """The seats held once `calls` calls are (the waiting line is drawn before the seat's call reaches the
        model: under load the line can come first)."""
        deadline = time.monotonic() + WAIT
        while len(self.held) < calls and time.monotonic() < deadline:
            time.sleep(0.005)
        return self.held

    def release(self) -> None:
        """Let the first call still held go on."""
        self.released += 1

    def open(self) -> None:
        """Hold nothing any more."""
        self.released = 10**9


def shown(text: str) -> list[str]:
    """The lines of `avalon play`'s output but the one with the seconds per call (a held call takes longer)."""
    return [line for line in text.split("\n") if not line.startswith("LLM calls: ")]


def plain(screen_text: str) -> str:
    """The screen without the waiting line's drawing."""
    return DRAWN.sub("", screen_text)


def test_the_waiting_line_in_words():
    assert live.waiting_line([], 3) == ""
    assert live.waiting_line([(3, RequestKind.VOTE)], 12.7) == "waiting for Player 3 to vote, 12 s"
    assert (live.waiting_line([(4, RequestKind.VOTE), (1, RequestKind.VOTE), (2, RequestKind.VOTE)], 0)
            == "waiting for Player 1, Player 2 and Player 4 to vote, 0 s")
    words = {kind: live.waiting_line([(1, kind)], 1) for kind in RequestKind}
    assert words == {RequestKind.PROPOSE: "waiting for Player 1 to propose a team, 1 s",
                     RequestKind.VOTE: "waiting for Player 1 to vote, 1 s",
                     RequestKind.QUEST: "waiting for Player 1 to play a quest card, 1 s",
                     RequestKind.SPEAK: "waiting for Player 1 to speak, 1 s",
                     RequestKind.ASSASSINATE: "waiting for Player 1 to name Merlin, 1 s",
                     RequestKind.LADY: "waiting for Player 1 to examine a player with the Lady of the Lake, 1 s"}


class Tty(io.StringIO):
    """A terminal's stream in memory."""

    def isatty(self) -> bool:
        return True


def test_the_waiting_line_is_not_drawn_while_a_person_is_asked_and_says_when_all_seats_think():
    now = [100.0]
    view = live.LiveView(status=Tty(), human=3, tick=60, clock=lambda: now[0])
    vote = {s: ActionRequest(seat=s, kind=RequestKind.VOTE, quest=1, attempt=1, team=(1, 2)) for s in (1, 3)}
    with view.running():
        assert view.line() == ""
        now[0] += 2  # a round's preparation: every seat thinks, none is asked
        assert view.line() == "the seats think, 2 s"  # not on what: a person is at the terminal
        view.waiting(vote[1])
        now[0] += 5
        assert view.line() == "waiting for Player 1 to vote, 5 s"
        view.waiting(vote[3])
        assert view.line() == ""  # the person is typing
        view.answered(vote[3])
        assert view.line() == "waiting for Player 1 to vote, 5 s"
        view.answered(vote[1])
        assert view.line() == ""
        now[0] += 0.5
        assert view.line() == ""  # answers and events come in a stream: no line in between


def test_while_every_seat_thinks_the_line_names_the_last_calls_step_and_seat():
    """The game's trace as the host tells it (`tracing`: the tracer's list, growing): the line names its last LLM
    call's seat and step (what is not an LLM call passes by); with a person at the terminal, neither."""
    from avalon_agents.records.trace import Extraction, LLMCall

    now = [100.0]
    records: list = []
    views = [live.LiveView(status=Tty(), tick=60, clock=lambda: now[0]),
             live.LiveView(status=Tty(), human=2, tick=60, clock=lambda: now[0])]
    for view in views:
        view.tracing(records)
    with views[0].running(), views[1].running():
        now[0] += 2
        assert [view.line() for view in views] == ["the seats think, 2 s"] * 2  # no call yet
        records.append(LLMCall(seat=3, stage="module", name="analysis", prompt_id="p", prompt_hash="h"))
        records.append(LLMCall(seat=4, stage="module", name="plan", prompt_id="p", prompt_hash="h"))
        records.append(Extraction(seat=4, kind="vote", quest=1, attempt=1, method="rule", valid=True))
        now[0] += 1
        assert [view.line() for view in views] == ["the seats think: Player 4's plan, 3 s", "the seats think, 3 s"]
        records.append(LLMCall(stage="judge", name="speeches", prompt_id="p", prompt_hash="h"))
        assert views[0].line() == "the seats think: speeches, 3 s"  # a call of no seat: its step alone


def test_the_host_tells_the_view_its_trace_as_it_is_written():
    """The host hands its watcher the tracer's own list at the start: a call traced later is named."""
    from avalon_agents.agents.rulebot import RuleBot
    from avalon_agents.core.rules import make_rules
    from avalon_agents.host.host import GameHost
    from avalon_agents.records.trace import LLMCall, MemoryTracer

    now = [100.0]
    rules, tracer = make_rules("official", 5), MemoryTracer()
    view = live.LiveView(status=Tty(), tick=60, clock=lambda: now[0])
    host = GameHost(rules=rules, agents={s: RuleBot(seat=s, seed=s) for s in rules.seats}, seed=1, tracer=tracer,
                    watcher=view)
    with view.running():
        asyncio.run(host.run())
        tracer.records.append(LLMCall(seat=2, stage="module", name="reflection", prompt_id="p", prompt_hash="h"))
        now[0] += 5
        assert view.line() == "the seats think: Player 2's reflection, 5 s"


@pytest.mark.slow  # two cognitive games on a terminal: seconds
def test_avalon_play_names_the_step_and_seat_while_the_seats_prepare(monkeypatch, tmp_path):
    """A cognitive game on a terminal, Player 3's second call (its plan in the first round's preparation) held:
    with nothing asked for a second the line names the seat and step of the last call answered, one of that
    preparation's calls as the game's trace records them; in memory as with --out."""
    from avalon_agents.records.run_dir import read_trace
    from avalon_agents.records.trace import LLMCall

    def named(*extra: str) -> tuple[int, str]:
        """The seat and step the line names while Player 3's second call is held, in a game of `extra`."""
        calls = [0]

        def hold(prompt: str, last: str) -> bool:
            seat = YOU_ARE.search(prompt)
            calls[0] += seat is not None and seat.group(1) == "3"
            return seat is not None and seat.group(1) == "3" and calls[0] == 2

        with monkeypatch.context() as patch:
            gate = Gate(patch, hold)
            args = ("play", "--seats", "cognitive", "--model", "scripted", "--players", "5", *extra)
            with terminal(patch) as screen, running(*args) as result:
                said = screen.wait_for(r"the seats think: Player (\d)'s ([\w+]+), \d+ s")
                assert gate.holding(1) == [3] and "Roles:" not in screen.text  # the game still runs
                gate.release()
                screen.wait_for(r"Roles: ", timeout=60)
            assert result.get("code") == 0, result
            assert "waiting for the seats to think" not in screen.text
        return int(said.group(1)), said.group(2)

    kept = named("--out", str(tmp_path / "run"))
    in_memory = named()
    trace = read_trace(tmp_path / "run" / "game-00001")
    preparation = {(r.seat, r.name) for r in trace if isinstance(r, LLMCall) and r.step == 1}
    assert {name for _, name in preparation} == {"analysis", "plan"}  # the cognitive seats' registered steps
    assert {kept, in_memory} <= preparation, (kept, in_memory, preparation)


def test_a_person_at_the_terminal_never_learns_whom_an_assassination_is_asked_of():
    now = [100.0]
    strike = ActionRequest(seat=5, kind=RequestKind.ASSASSINATE, quest=2, attempt=1, options=(1, 2, 3, 4, 6),
                           may_pass=True)
    for human, shown in ((3, ""), (None, "waiting for Player 5 to name Merlin, 0 s")):
        view = live.LiveView(status=Tty(), human=human, tick=60, clock=lambda: now[0])
        with view.running():
            view.waiting(strike)
            assert view.line() == shown  # without a person, the transcript shows everything anyway


def test_one_game_streams_on_a_terminal_and_names_who_it_waits_for(monkeypatch):
    """The first speech is on the screen while the game waits for the next speaker, whom the waiting line names;
    then for one seat's vote while the others have voted. At the end the screen, without the waiting line, is
    what a pipe gets: every line once."""
    piped = avalon(*LLM_GAME)
    assert piped.returncode == 0 and "\x1b" not in piped.stdout and "\r" not in piped.stdout
    asked: list[str] = []

    def hold(prompt: str, last: str) -> bool:
        """The second speech, and Player 2's first vote."""
        kind = "speak" if "Your turn to speak" in last else "vote 2" if "Vote on the team" in last and \
            "You are Player 2" in prompt else "other"
        asked.append(kind)
        return asked.count(kind) == (2 if kind == "speak" else 1) and kind != "other"

    gate = Gate(monkeypatch, hold)
    with terminal(monkeypatch) as screen, running(*LLM_GAME) as result:
        first = screen.wait_for(r"(?:\n|\x1b\[K)  Player (\d): As Player \1, ")
        speaker = screen.wait_for(r"waiting for Player (\d) to speak, \d+ s", first.end())
        assert int(speaker.group(1)) == gate.holding(1)[0] != int(first.group(1))
        assert "wins:" not in screen.text and "Roles:" not in screen.text  # the game still runs
        gate.release()
        screen.wait_for(r"waiting for Player 2 to vote, \d+ s", speaker.end())
        assert gate.holding(2)[1:] == [2] and "wins:" not in screen.text
        gate.release()
        screen.wait_for(r"health: [^\n]*\n")
    assert result.get("code") == 0, result
    assert gate.held == [gate.held[0], 2]

    assert shown(plain(screen.text)) == shown(piped.stdout)


def test_piped_output_is_unchanged_and_streams_only_when_asked():
    default, at_end, streamed = (avalon(*LLM_GAME, *extra) for extra in ((), ("--no-stream",), ("--stream",)))
    assert shown(default.stdout) == shown(at_end.stdout) == shown(streamed.stdout)
    for out in (default, at_end, streamed):
        assert out.returncode == 0 and not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", out.stdout + out.stderr)
    assert default.stdout.startswith("Avalon, 5 players") and default.stdout.count("Roles: ") == 1


@pytest.mark.parametrize("extra, says", [(("--json",), "--json"), (("--human", "2"), "your seat"),
                                         (("--games", "2"), "one game")])
def test_stream_where_it_cannot_be_is_one_line(extra, says):
    out = avalon("play", "--stream", *extra)
    assert out.returncode == 2 and says in out.stderr and len(out.stderr.splitlines()) == 1


def test_a_person_at_the_terminal_is_never_written_over(monkeypatch):
    """A human seat at the terminal: while it is asked to vote and another seat's vote is still awaited, no
    waiting line is drawn over its prompt; once it answers, the line names the seat still voting."""
    gate = Gate(monkeypatch, lambda prompt, last: "Vote on the team" in last and "You are Player 1" in prompt)
    args = ("play", "--human", "3", "--seats", "llm", "--model", "scripted", "--players", "5")
    with terminal(monkeypatch) as screen, running(*args) as result:
        at = 0
        while True:  # answer as Player 3 until it is asked to vote
            asked = screen.wait_for(r"\n(You lead quest \d\. Name exactly (\d)|Your turn to speak|Vote on the "
                                    r"team)[^\n]*\nYour answer \([^\n]*\):\n", at)
            at = asked.end()
            if asked.group(1).startswith("Vote"):
                break
            if asked.group(2):
                screen.type(" and ".join(f"Player {s}" for s in range(1, int(asked.group(2)) + 1)) + "\n")
            else:
                screen.type("I trust this team.\n")
        time.sleep(10 * live.TICK)  # Player 1's vote is held meanwhile: the line would be drawn by now
        assert gate.held == [1] and "waiting for" not in screen.text[at:]
        assert screen.text.endswith("Your answer (\"approve\" or \"reject\"):\n")
        screen.type("approve\n")
        screen.wait_for(r"waiting for Player 1 to vote, \d+ s", at)
        screen.type("\x04")  # the input ends: the game stops in one line
        gate.open()
        screen.wait_for(r"error: human: the input ended")
    assert result.get("code") == 2, result
    assert "Roles:" not in screen.text  # the person never sees the transcript


@pytest.fixture
def embedded(monkeypatch):
    """The embedded model's package and weights count as installed (the fast suite needs neither), and asking it
    stops the command before it loads, in one line."""
    from avalon_agents.llm import local
    from avalon_agents.llm.settings import ModelSpecError

    def no_model(name):
        raise ModelSpecError("model: the test stops before the embedded model loads")

    monkeypatch.setattr(local, "local_server", no_model)
    monkeypatch.setattr(base, "_loads", lambda spec: True)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


NOTICE = "note: local:smollm2 is the small embedded model"


def test_the_embedded_model_is_named_for_smoke_runs_once_before_it_loads(embedded):
    first = avalon("play", "--seats", "llm", "--players", "5", "--json")  # the default spec: the embedded model
    assert first.returncode == 2 and first.stdout == ""
    notice, error = first.stderr.splitlines()
    assert notice.startswith(NOTICE) and "for smoke runs, not for studying behaviour" in notice
    assert "--model openai-compatible:MODEL@URL" in notice and "OPENAI_API_KEY" in notice
    assert error == "error: model: the test stops before the embedded model loads"
    both = avalon("play", "--seats", "llm", "--model", "local:smollm2", "--extractor-model", "local:smollm2")
    assert both.returncode == 2 and both.stderr.count("note:") == 1  # --model, the seats, the extractor: once


def test_no_notice_without_the_embedded_model_or_with_q(embedded):
    assert avalon("play", "--players", "5").stderr == ""  # rule bots: the default spec is never used
    assert avalon(*LLM_GAME, "--json").stderr == ""
    quiet = avalon("play", "--seats", "llm", "--model", "local:smollm2", "-q", "--players", "5")
    assert quiet.returncode == 2 and "note:" not in quiet.stderr


def test_no_notice_when_the_embedded_model_cannot_load(monkeypatch):
    """Its error is the one line (tests/test_wheel.py: without llama-cpp-python)."""
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    assert not base._loads("local:smollm2") and not base._loads("local:llama70b")


def test_a_run_on_the_embedded_model_says_so_at_its_start(embedded, tmp_path):
    config = Path(__file__).parents[2] / "experiments" / "quickstart.yaml"
    out = avalon("run", str(config), "--check", "--out", str(tmp_path / "run"), "--json")
    assert out.returncode == 0 and out.stderr.startswith(NOTICE) and out.stderr.count("note:") == 1
    assert "note:" not in out.stdout


def test_a_log_message_never_lands_on_the_waiting_line(monkeypatch):
    """A warning during the game goes on its own line: the waiting line is erased before it and drawn again
    below it; after the game the stderr sink is back."""
    from loguru import logger

    from avalon_agents import logs

    status, before = Tty(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", before)
    logs.configure(0)  # as the command line does: warnings to stderr
    view = live.LiveView(status=status, tick=60, clock=lambda: 0.0)
    with view.running():
        view.waiting(ActionRequest(seat=4, kind=RequestKind.SPEAK, quest=1, attempt=1))
        view._draw(again=True)  # what the ticker does
        logger.warning("slow LLM call")
    logger.warning("after")
    assert status.getvalue() == (f"{live.CLEAR}waiting for Player 4 to speak, 0 s{live.CLEAR}WARNING: slow LLM call\n"
                                 f"{live.CLEAR}waiting for Player 4 to speak, 0 s{live.CLEAR}")
    assert before.getvalue() == "WARNING: after\n"
