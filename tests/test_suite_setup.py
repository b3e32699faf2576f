"""How the suite itself runs (pyproject.toml's addopts, tests/conftest.py): pytest loads only the plugins it is told
to load, collecting keeps its bytecode, and no test waits for the disk."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest


def test_only_the_plugins_named_in_addopts_are_loaded(pytestconfig):
    """Autoload is off: pytest would rewrite the asserts of every module of an autoloaded plugin's package (langsmith,
    anyio, hypothesis, platformdirs, whole) in every process. xdist's and hypothesis's plugins are named with -p."""
    names = {name for name, _ in pytestconfig.pluginmanager.list_name_plugin()}
    assert {"xdist", "hypothesispytest"} <= names
    assert not names & {"langsmith_plugin", "anyio", "platformdirs"}
    assert pytestconfig.getoption("hypothesis_show_statistics") is False  # hypothesis's own options are there


def test_fsync_is_not_awaited_but_a_bad_descriptor_is_still_refused(tmp_path):
    with open(tmp_path / "f", "w") as f:
        f.write("x")
        assert os.fsync(f.fileno()) is None and os.fsync(f) is None
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    os.close(fd)
    with pytest.raises(OSError):
        os.fsync(fd)


def test_collection_keeps_the_rewritten_test_modules_and_a_test_writes_as_the_environment_asks():
    """Collecting wrote this module's bytecode, asserts rewritten (tests/conftest.py: pytest_collection), whatever
    PYTHONDONTWRITEBYTECODE says; while tests run, bytecode is written only if the environment allows it."""
    here = Path(__file__)
    cached = here.parent / "__pycache__" / f"{here.stem}.{sys.implementation.cache_tag}-pytest-{pytest.__version__}.pyc"
    assert cached.is_file() and cached.stat().st_mtime >= here.stat().st_mtime
    assert sys.dont_write_bytecode == bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
