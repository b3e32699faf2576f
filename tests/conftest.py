"""Fixtures shared across the test suite.

The default run (`python -m pytest -q`) leaves out tests marked `slow` (the embedded llama.cpp model,
Jupyter notebooks, Ray, the kill -9 resume, the 10,000-game invariants) and `live`
(a real provider); run them with `-m slow` / `-m live`. Plain helpers (engine policies, the in-process
`avalon` command, scripted models) live in tests/helpers.py.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session):
    """Collecting keeps the bytecode of what it imports: pytest keeps each test module, its asserts rewritten,
    beside it (and Python the project's modules), unless PYTHONDONTWRITEBYTECODE is set, as on this machine: then
    every worker of every run rewrote and compiled every test module again (4-5 s of CPU a worker). Kept as
    setup.sh's compileall keeps the project's; what the tests themselves import (a plugin file a test writes) and
    the processes they start write none, as the environment asks."""
    asked = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = asked


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything: every run checks every test
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`serial` is a kind of slow test: CI runs `-m "slow and not serial"` on both cores, then `-m "slow and
    serial"` alone, so a serial test that is not slow would run in the fast suite beside another worker."""
    stray = [item.nodeid for item in items
             if item.get_closest_marker("serial") and not item.get_closest_marker("slow")]
    if stray:
        raise pytest.UsageError(f"marked serial but not slow (serial tests are slow tests): {', '.join(stray)}")


@pytest.fixture(scope="session", autouse=True)
def fsync_not_awaited() -> Iterator[None]:
    """The suite does not wait for the disk: os.fsync (the records' atomic JSON writes, the judges' cache) guards
    against the machine losing power, which no test does; every write, rename and their order are as they were, and
    a bad file descriptor is still refused. About 2,000 fsyncs of 3-4 ms each were 7 s of the fast suite's wall. A
    test of what fsync does patches it itself (tests/records/test_recorder.py)."""

    def fsync(fd) -> None:
        os.fstat(fd if isinstance(fd, int) else fd.fileno())

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", fsync)
        yield


@pytest.fixture(autouse=True)
def restored_registries() -> Iterator[None]:
    """Every test leaves the process's registries (agent kinds, modules, providers, importers, plugins, pacers)
    as it found them, so what one test registers (a plugin's `register_provider`, the README's
    `@register_module`) is seen by no later test, in this process or in a pytest-xdist worker."""
    from tests.helpers import registries_restored

    with registries_restored():
        yield


# A small scripted experiment with two variants, probes on, cognitive (good) against baseline (evil):
# two games, every record kind the analysis reads (seed 1: both games end in an assassination, one missed).
ANALYSIS_CONFIG = """\
name: tiny
model: scripted
probes: true
seed: 1
agents:
  ours: {kind: cognitive}
  baseline: {kind: baseline}
sides: {good: ours, evil: baseline}
series: 1
games_per_series: 1
variants:
  full: {}
  wo_analysis: {agents: {ours: {modules: {analysis: {enabled: false}}}}}
"""


@pytest.fixture(scope="session")
def analysis_run(tmp_path_factory) -> Path:
    """A finished scripted experiment (ANALYSIS_CONFIG) made once per session by `avalon run`; the analysis
    tests and the notebooks read it. Treat it as read-only. Under pytest-xdist the workers share one: the first
    that needs it makes it (in the run's temporary folder, under a lock), the others wait for it and read it."""
    import fcntl

    from click.testing import CliRunner

    from avalon_agents.cli import cli

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the folder every worker's own temporary folder is in
    folder = root / "analysis-run"
    with open(root / "analysis-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "done").exists():
            folder.mkdir(exist_ok=True)
            (folder / "tiny.yaml").write_text(ANALYSIS_CONFIG)
            result = CliRunner().invoke(cli, ["run", str(folder / "tiny.yaml"), "--out", str(folder / "run")])
            assert result.exit_code == 0, result.output
            (folder / "done").touch()
    return folder / "run"


@pytest.fixture
def loopback() -> Iterator:
    """An OpenAI-compatible loopback server on 127.0.0.1 with its default replies, stopped after the test."""
    from avalon_agents.llm.loopback import openai_server

    with openai_server() as server:
        yield server
