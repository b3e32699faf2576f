"""Pipes: the seat protocol's messages as JSON lines on a program's standard input and its answers on its standard
output (agents.protocol's Transport; one process per seat per game).

A program is killed through a pidfd (`kill`), never with `Process.kill()`: subprocess.Popen.send_signal first polls
the child (waitpid), and a program that has just ended is then reaped behind the back of asyncio's child watcher,
which logs "Unknown child process pid N, will report returncode 255" and reports 255 for the program's exit code.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

from avalon_agents.agents.protocol import MAX_LINE, Answer, ProtocolError, SeatDown, dumps, read_line
from avalon_agents.aio import within

EXIT_WAIT = 1.0
"""Seconds a program has to exit after its `end` message (and its input closed) before it is killed."""

_EOF = object()
_LIVE: dict[asyncio.subprocess.Process, int | None] = {}
"""Each program running, with its pidfd (None where the system has none)."""


@atexit.register
def _kill_left() -> None:
    """The last resort: a program still running when Python exits (a loop torn down mid-game) is killed."""
    for proc, pidfd in list(_LIVE.items()):
        kill(proc, pidfd)


def pidfd(pid: int) -> int | None:
    """A file descriptor naming process `pid` for good (Linux), so a signal can never reach another process that
    takes its number once it is reaped; None where there is none (or the process is already gone)."""
    with contextlib.suppress(AttributeError, OSError):
        return os.pidfd_open(pid)
    return None


def kill(proc: asyncio.subprocess.Process, fd: int | None) -> None:
    """SIGKILL the program unless asyncio has seen it end, without reaping it (its watcher does, and reports its
    exit code): through its pidfd, else by number (asyncio's watcher reaps it, so the number is still its own)."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, OSError):
        if fd is not None:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        else:
            os.kill(proc.pid, signal.SIGKILL)


class Pipes:
    """A program started when the seat learns its role, reading one message a line and writing one answer a line;
    its input closed at the end, a moment to exit, then killed. Its standard error is not read."""

    def __init__(self, command: Sequence[str], timeout: float) -> None:
        self.command = list(command)
        self.timeout = timeout
        self.proc: asyncio.subprocess.Process | None = None
        self.pidfd: int | None = None
        self._reader: asyncio.Task | None = None
        self._inbox: asyncio.Queue | None = None
        self._closed = False

    async def open(self) -> None:
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=MAX_LINE + 1)
        except OSError as exc:
            raise SeatDown("crash", f"cannot start {self.command[0]!r}: {exc.strerror or exc}") from None
        self.pidfd = pidfd(self.proc.pid)
        _LIVE[self.proc] = self.pidfd
        self._inbox = asyncio.Queue()
        self._reader = asyncio.create_task(self._read(), name="seat-program-reader")

    async def send(self, message: dict[str, Any]) -> None:
        if self.proc is None or self._closed:
            return
        try:
            self.proc.stdin.write((dumps(message) + "\n").encode())
            await within(self.proc.stdin.drain(), self.timeout)
        except TimeoutError:
            raise SeatDown("timeout", f"took in no message for {self.timeout:g} s") from None
        except (BrokenPipeError, ConnectionResetError, RuntimeError, OSError):
            raise SeatDown("crash", await self._ended()) from None

    async def ask(self, message: dict[str, Any], stray: Callable[[Answer], None]) -> Answer:
        """The answer to the request; lines answering another id go to `stray` and the reading goes on."""
        await self.send(message)
        id, kind = message["id"], message["kind"]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            try:
                item = await within(self._inbox.get(), max(deadline - loop.time(), 0))
            except TimeoutError:
                raise SeatDown("timeout", f"no answer to {kind} request {id} in {self.timeout:g} s") from None
            if item is _EOF:
                raise SeatDown("crash", await self._ended())
            if isinstance(item, ProtocolError):
                raise item
            if item.id == id:
                return item
            stray(item)

    def abandon(self) -> None:
        if self.proc is not None:
            kill(self.proc, self.pidfd)  # a hung or broken program is not waited for again

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        proc = self.proc
        if proc is None:
            return
        try:
            if proc.returncode is None:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
                with contextlib.suppress(TimeoutError):
                    await within(asyncio.shield(proc.wait()), EXIT_WAIT)
        finally:
            kill(proc, self.pidfd)
            if self._reader is not None:
                self._reader.cancel()
            with contextlib.suppress(Exception):
                await within(asyncio.shield(proc.wait()), EXIT_WAIT)
            _LIVE.pop(proc, None)
            if self.pidfd is not None:
                os.close(self.pidfd)
                self.pidfd = None

    async def _read(self) -> None:
        """The one reader of the program's output: each line, read, into the inbox; _EOF at its end."""
        stream = self.proc.stdout
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # longer than MAX_LINE: asyncio drops it
                self._inbox.put_nowait(ProtocolError("bad_json", f"a line longer than {MAX_LINE} bytes"))
                continue
            except Exception as exc:  # noqa: BLE001  (a broken pipe ends the reading)
                self._inbox.put_nowait(_EOF)
                self._inbox.put_nowait(exc)
                return
            if not line:
                self._inbox.put_nowait(_EOF)
                return
            if not line.strip():
                continue
            try:
                self._inbox.put_nowait(read_line(line))
            except ProtocolError as exc:
                self._inbox.put_nowait(exc)

    async def _ended(self) -> str:
        """Why the program can be asked nothing more, with its exit code once it has one (its output closed or its
        input broken, it is given EXIT_WAIT seconds to end)."""
        with contextlib.suppress(TimeoutError):
            await within(asyncio.shield(self.proc.wait()), EXIT_WAIT)
        code = self.proc.returncode
        return "the program ended" + (f" (exit code {code})" if code is not None else " (its output closed)")
