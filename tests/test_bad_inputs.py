"""Every bad input is one line on stderr naming the problem, exit code 2, never a traceback: the cases that
once ended in a Python traceback or a hang, each as the user would type it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import avalon

ROOT = Path(__file__).parent.parent
BASE = """\
name: bad
model: scripted
agents:
  ours: {kind: cognitive}
  bots: {kind: rulebot}
sides: {good: ours, evil: bots}
"""


def one_line_error(result, *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize(("change", "field"), [
    ("model: nonsense", "model.spec"),
    ("extractor: {model: 'openai-compatible:m'}", "extractor.model.spec"),
    ("agents:\n  ours: {kind: cognitive, modules: {summary: {model: bogus}}}\n  bots: {kind: rulebot}",
     "agents.ours.modules.summary.model.spec"),
    ("games_per_series: 100000000000000000000", "games_per_series"),
])
def test_a_bad_config_is_named_by_check(tmp_path, change, field):
    key = change.split(":")[0]
    kept, skipping = [], False
    for line in BASE.splitlines():  # drop the key being replaced, with its indented lines
        skipping = line.startswith(key + ":") or (skipping and line.startswith("  "))
        if not skipping:
            kept.append(line)
    text = "\n".join(kept) + "\n" + change + "\n"
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    one_line_error(avalon("run", "--check", str(path)), field)


def test_the_paper_configs_without_a_key_are_one_line(tmp_path):
    result = avalon("run", str(ROOT / "experiments/paper/table2.yaml"), "--out", str(tmp_path / "run"),
                    env={"OPENAI_API_KEY": ""})
    one_line_error(result, "OPENAI_API_KEY")


def test_an_agent_config_naming_a_bad_model(tmp_path):
    path = tmp_path / "agent.yaml"
    path.write_text("summary: {model: {spec: 'openai-compatible:x@ftp://nowhere'}}\n")
    one_line_error(avalon("play", "--seats", "cognitive", "--model", "scripted", "--agent-config", str(path)),
                   "openai-compatible")


@pytest.mark.parametrize("command", [["play"], ["run", str(ROOT / "experiments/quickstart.yaml"), "--model",
                                                         "scripted"]])
def test_an_out_that_cannot_be_written(tmp_path, command):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    one_line_error(avalon(*command, "--out", str(blocker / "run")), "cannot write")


def test_a_malformed_openai_compatible_url_and_a_model_seat_in_bench_engine():
    one_line_error(avalon("play", "--seats", "llm", "--model", "openai-compatible:m@http://[::1/v1"), "URL")
    one_line_error(avalon("bench", "engine", "--seats", "llm", "--games", "1"), "seats")


@pytest.fixture(scope="module")
def a_game(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("one")
    assert avalon("play", "--seats", "llm", "--model", "scripted", "--out", str(folder), "--json").returncode == 0
    return folder / "game-00001"


@pytest.mark.parametrize(("name", "content"), [
    ("result.json", "{not json"),
    ("trace.jsonl", '{"type": "llm_call", "seat": "x"}\n'),
    ("meta.json", json.dumps([1, 2, 3])),
    ("events.jsonl", '{"seq": 0}\n'),
])
def test_analyze_names_the_game_it_cannot_read(tmp_path, a_game, name, content):
    game = tmp_path / "run" / "game-00001"
    shutil.copytree(a_game, game)
    (game / name).write_text(content)
    one_line_error(avalon("analyze", str(tmp_path / "run")), "cannot be read", "game-00001")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    shutil.copy(a_game / name, game / name)
    one_line_error(avalon("analyze", str(tmp_path / "run"), "--out", str(blocker / "out")), "cannot write")
