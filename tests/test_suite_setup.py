"""How the suite itself runs (pyproject.toml's addopts, tests/conftest.py): pytest loads only the plugins it is told
to load, and no test waits for the disk."""

from __future__ import annotations

import os

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
