"""Run directories are safe: one run at a time (a stale lock of a dead process is free again), a resume with a
different config is refused naming what changed, and --max-games caps the run's total, spread over the
variants and series, so a smoke run compares every variant and rerunning converges."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.experiments.guard import allotment, run_lock
from avalon_agents.records import is_done
from avalon_agents.records.run_dir import EXPERIMENT

CONFIG = """\
name: guarded
model: scripted
agents:
  ours: {kind: llm, model: {temperature: 0.3}}
  bots: {kind: rulebot}
sides: {good: ours, evil: bots}
series: 2
games_per_series: 2
variants:
  a: {}
  b: {agents: {ours: {model: {temperature: 0.5}}}}
  c: {agents: {ours: {model: {temperature: 0.7}}}}
"""


def run(tmp_path, *args, config=CONFIG):
    path = tmp_path / "c.yaml"
    path.write_text(config)
    return CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "run"), *args])


def finished(tmp_path) -> list[str]:
    return sorted(str(g.relative_to(tmp_path / "run")) for g in (tmp_path / "run").glob("*/series-*/game-*")
                  if is_done(g))


def test_a_second_run_on_the_same_directory_is_refused_in_one_line(tmp_path):
    with run_lock(tmp_path / "run"):
        result = run(tmp_path)
    assert result.exit_code == 2 and "is in use by process" in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and not finished(tmp_path)


@pytest.mark.slow  # seconds: the fast suite stays under its 2 minutes
def test_a_lock_left_by_a_killed_process_is_free_again(tmp_path):
    code = ("import sys, time; from pathlib import Path; from avalon_agents.experiments.guard import run_lock\n"
            "with run_lock(Path(sys.argv[1])):\n    print('locked', flush=True); time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "run")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    assert run(tmp_path, "--max-games", "1").exit_code == 2  # held
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    time.sleep(0.1)
    result = run(tmp_path, "--max-games", "1")
    assert result.exit_code == 0, result.output


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_resume_with_another_config_is_refused_naming_what_changed(tmp_path):
    assert run(tmp_path, "--max-games", "3").exit_code == 0
    changed = CONFIG.replace("c: {agents: {ours: {model: {temperature: 0.7}}}}",
                             "c: {agents: {ours: {model: {temperature: 0.9}}}}")
    result = run(tmp_path, config=changed)
    assert result.exit_code == 2
    assert "variants.c.agents.ours.model.temperature changed" in result.output
    assert run(tmp_path, "--max-games", "3", config=CONFIG.replace("name: guarded", "name: guarded\nconcurrency: "
                                                                   "{games: 3}")).exit_code == 0  # not a change


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_resume_may_change_timeouts_retries_and_rate_limits(tmp_path):
    """How calls are made is not what a run measured: a resume under other limits goes on."""
    assert run(tmp_path, "--max-games", "2", "--timeout", "30").exit_code == 0
    slower = CONFIG.replace("model: scripted", "model: {spec: scripted, timeout: 90, retries: 5, rpm: 6000, tpm: 1e7}")
    result = run(tmp_path, "--max-games", "3", "--rpm", "60000", "--retries", "1", config=slower)
    assert result.exit_code == 0, result.output
    assert run(tmp_path, "--max-games", "4", "--temperature", "0.9").exit_code == 2  # this one is measured


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_max_games_spreads_over_variants_and_series_and_converges(tmp_path):
    assert run(tmp_path, "--max-games", "3").exit_code == 0
    assert finished(tmp_path) == ["a/series-1/game-00001", "b/series-1/game-00001", "c/series-1/game-00001"]
    assert run(tmp_path, "--max-games", "3").exit_code == 0  # the same command again plays nothing more
    assert len(finished(tmp_path)) == 3
    assert run(tmp_path, "--max-games", "6").exit_code == 0
    assert {g.split("/")[1] for g in finished(tmp_path)} == {"series-1", "series-2"}
    assert all(g.endswith("game-00001") for g in finished(tmp_path)) and len(finished(tmp_path)) == 6
    meta = json.loads((tmp_path / "run" / EXPERIMENT).read_text())
    assert meta["fingerprint"]["variants"]["b"]["agents"]["ours"]["model"]["temperature"] == 0.5


def test_allotment_takes_first_games_first_and_never_exceeds_the_total():
    pending = [(v, k, n) for v in range(2) for k in (1, 2) for n in (1, 2, 3)]
    assert allotment(pending, 0, 4) == {(0, 1, 1), (1, 1, 1), (0, 2, 1), (1, 2, 1)}
    assert allotment(pending, 4, 4) == set() and len(allotment(pending, 1, 6)) == 5


def test_a_lineup_run_from_before_balanced_changed_meaning_is_refused_on_resume(tmp_path):
    import pytest

    from avalon_agents.experiments.guard import ConfigChanged, check_same_config, fingerprint

    config = {"name": "x", "lineup": {"a": 3, "b": 3}, "schedule": "balanced"}
    before = {"variants": {"main": dict(config)}, "model_override": None}  # as an earlier version stored it
    now = fingerprint({"main": config}, None)
    assert now != before and "Latin square" in now["variants"]["main"]["schedule"]
    assert fingerprint({"main": {**config, "schedule": "roles"}}, None)["variants"]["main"]["schedule"] == "roles"
    sides = {"name": "x", "sides": {"good": "a", "evil": "b"}, "schedule": "balanced"}
    assert fingerprint({"main": sides}, None)["variants"]["main"]["schedule"] == "balanced"  # seating unaffected
    (tmp_path / EXPERIMENT).write_text(json.dumps({"fingerprint": before}))
    with pytest.raises(ConfigChanged, match=r"variants\.main\.schedule changed"):
        check_same_config(tmp_path, now)
