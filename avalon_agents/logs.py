"""The framework's diagnostic log (loguru): retries, fallbacks, slow calls and warnings, for people.

Library code logs through `loguru.logger` and never prints; the package disables its own messages on import,
so a notebook or a script sees nothing unless it asks (`logger.enable("avalon_agents")`). The CLI turns them
on: warnings on stderr by default, more with `-v`, only errors with `-q`, and everything from INFO up in the
run directory's `run.log`. Nothing parses run.log; the trace is the record.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from loguru import logger

RUN_LOG = "run.log"
FORMAT = "{time:YYYY-MM-DD HH:mm:ss.SSS} {level: <7} {message}"
LEVELS = {-1: "ERROR", 0: "WARNING", 1: "INFO", 2: "DEBUG"}


def configure(verbosity: int) -> None:
    """stderr shows WARNING and above (verbosity 0), INFO (1), DEBUG (2 or more) or ERROR only (-1)."""
    logger.remove()
    logger.enable("avalon_agents")
    level = LEVELS[max(-1, min(2, verbosity))]
    logger.add(sys.stderr, level=level, format="{level}: {message}", colorize=False)


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
