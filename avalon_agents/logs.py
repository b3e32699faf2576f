"""The framework's diagnostic log (loguru): retries, fallbacks, slow calls and warnings, for people.

Library code logs through `loguru.logger` and never prints; the package disables its own messages on import,
so a notebook or a script sees nothing unless it asks (`logger.enable("avalon_agents")`). The CLI turns them
on: warnings on stderr by default, more with `-v`, only errors with `-q`, and everything from INFO up in the
run directory's `run.log`. Nothing parses run.log; the trace is the record.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from loguru import logger

RUN_LOG = "run.log"
FORMAT = "{time:YYYY-MM-DD HH:mm:ss.SSS} {level: <7} {message}"
LEVELS = {-1: "ERROR", 0: "WARNING", 1: "INFO", 2: "DEBUG"}
STDERR_FORMAT = "{level}: {message}"

_stderr: dict[str, Any] = {}
"""The stderr sink `configure` added: its handler id, stream and level (empty: not configured)."""


def configure(verbosity: int) -> None:
    """stderr shows WARNING and above (verbosity 0), INFO (1), DEBUG (2 or more) or ERROR only (-1)."""
    logger.remove()
    logger.enable("avalon_agents")
    level = LEVELS[max(-1, min(2, verbosity))]
    _stderr.clear()
    _stderr.update(stream=sys.stderr, level=level,
                   id=logger.add(sys.stderr, level=level, format=STDERR_FORMAT, colorize=False))


@contextmanager
def stderr_through(write: Callable[[str], None]) -> Iterator[None]:
    """While the block runs, the messages `configure` sends to stderr go to `write` instead (each message one
    string, its line end included): a live line on the terminal clears itself before a message is written."""
    if not _stderr:
        yield
        return
    logger.remove(_stderr["id"])
    _stderr["id"] = logger.add(write, level=_stderr["level"], format=STDERR_FORMAT, colorize=False)
    try:
        yield
    finally:
        logger.remove(_stderr["id"])
        _stderr["id"] = logger.add(_stderr["stream"], level=_stderr["level"], format=STDERR_FORMAT, colorize=False)


@contextmanager
def run_log(folder: Path) -> Iterator[Path]:
    """Append INFO and above to `folder/run.log` while the block runs."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / RUN_LOG
    sink = logger.add(path, level="INFO", format=FORMAT, enqueue=False)
    try:
        yield path
    finally:
        logger.remove(sink)
