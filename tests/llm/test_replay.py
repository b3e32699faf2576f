"""No call paid twice: a resumed game takes the answers it already paid for, and `replay:RUN_DIR` re-executes a
recorded run offline, byte for byte, or stops at the first request that differs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.llm.loopback import openai_server
from avalon_agents.records.run_dir import COST, EVENTS, META, RESULT, TRACE

DATA = Path(__file__).resolve().parents[1] / "data" / "replay"
GAME = "main/series-1/game-00001"


def replay(out: Path, run: Path = DATA / "run"):
    return CliRunner().invoke(cli, ["run", str(DATA / "config.yaml"), "--model", f"replay:{run}", "--out", str(out)])


def test_a_recorded_run_replays_byte_for_byte_with_no_model(tmp_path):
    result = replay(tmp_path / "again")
    assert result.exit_code == 0, result.output
    again = (tmp_path / "again" / GAME / EVENTS).read_bytes()
    assert again == (DATA / "run" / GAME / EVENTS).read_bytes()
    calls = [json.loads(line) for line in open(tmp_path / "again" / GAME / TRACE)]
    calls = [c for c in calls if c["type"] == "llm_call"]
    assert calls and all(c["replayed"] for c in calls)


def _edit_a_recorded_request(run: Path) -> dict:
    """Change step 3's recorded request (as if the framework had asked this when it was recorded); returns it."""
    trace = run / GAME / TRACE
    lines = trace.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if '"type":"llm_call"' in line and '"step":3' in line)
    call = json.loads(lines[i])
    call["messages"][-1]["content"] = call["messages"][-1]["content"].replace("Player", "Seat", 1)
    call["request_hash"] = "0" * 24
    lines[i] = json.dumps(call)
    trace.write_text("\n".join(lines) + "\n")
    return call


def test_a_request_that_differs_stops_the_replay_with_where_and_the_first_difference(tmp_path):
    run = tmp_path / "recorded"
    shutil.copytree(DATA / "run", run)
    call = _edit_a_recorded_request(run)
    result = replay(tmp_path / "again", run)
    assert result.exit_code == 3, result.output
    message = result.output.strip().splitlines()[-1]
    assert f"seat {call['seat']}, step 3" in message and "differs from the recorded one" in message
    assert "recorded 'Seat'" in message and "now 'Player'" in message


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_resumed_game_does_not_pay_again_for_the_answers_it_has(tmp_path):
    out = tmp_path / "run"
    with openai_server() as server:
        spec = f"openai-compatible:m@{server.base_url}"
        args = ["run", str(DATA / "config.yaml"), "--model", spec, "--out", str(out)]
        assert CliRunner().invoke(cli, args).exit_code == 0
        first = len(server.state.requests)
        game = out / GAME
        events = (game / EVENTS).read_bytes()
        lines = (game / TRACE).read_text().splitlines()
        calls = [k for k, line in enumerate(lines) if '"type":"llm_call"' in line]
        kept = calls[len(calls) // 2]  # killed halfway: the trace ends before this call, no result
        (game / TRACE).write_text("\n".join(lines[:kept]) + "\n")
        (game / RESULT).unlink()
        resumed = CliRunner().invoke(cli, args)
        assert resumed.exit_code == 0, resumed.output
        again = len(server.state.requests) - first
    assert again == len(calls) - len(calls) // 2  # only the calls it had not made
    assert (game / EVENTS).read_bytes() == events  # the same game
    replayed = [json.loads(line)["replayed"] for line in open(game / TRACE) if '"type":"llm_call"' in line]
    assert replayed.count(True) == len(calls) // 2


def test_a_run_of_a_newer_layout_is_refused_as_a_replay_source_in_one_line(tmp_path):
    run = tmp_path / "recorded"
    shutil.copytree(DATA / "run", run)
    meta = json.loads((run / GAME / META).read_text())
    (run / GAME / META).write_text(json.dumps({**meta, "layout": 99}))
    result = replay(tmp_path / "again", run)
    assert result.exit_code == 2, result.output
    assert "holds a game of layout 99" in result.output and "Traceback" not in result.output


def test_a_replay_costs_nothing_and_a_budget_is_accepted(tmp_path):
    """A replay asks no model: its cost line says $0 and the tokens the recording holds, and a budget (never
    reached) is kept as for any run."""
    out = tmp_path / "again"
    result = CliRunner().invoke(cli, ["run", str(DATA / "config.yaml"), "--model", f"replay:{DATA / 'run'}",
                                      "--out", str(out), "--budget-usd", "0.01"])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if ": cost: " in line]
    assert "replayed: $0," in line and "tokens recorded" in line and "no price" not in line
    import csv

    [row] = list(csv.DictReader(open(out / COST)))
    assert float(row["usd"]) == 0 and row["price_source"] == "answered from a recorded run"
    check = CliRunner().invoke(cli, ["run", str(DATA / "config.yaml"), "--model", f"replay:{DATA / 'run'}",
                                     "--out", str(tmp_path / "checked"), "--check"])
    assert check.exit_code == 0 and "$0.00" in check.output, check.output
    assert "no price" not in check.output and "limits learned" not in check.output  # free, and no pace to say


def test_a_divergence_names_the_environment_differences_of_the_recording(tmp_path):
    from avalon_agents.records.run_dir import write_json_atomic
    from avalon_agents.records.run_record import RUN, read_run_record, write_run_record

    run = tmp_path / "recorded"
    shutil.copytree(DATA / "run", run)
    record = write_run_record(run, "run", "replay")
    elsewhere = {**record.environment, "blas_kernel": "Elsewhere9000", "cpu": "Another CPU"}
    write_json_atomic(run / RUN, record.model_copy(update={"environment": elsewhere}).model_dump(mode="json"))
    assert read_run_record(run).environment["cpu"] == "Another CPU"
    _edit_a_recorded_request(run)
    result = replay(tmp_path / "again", run)
    assert result.exit_code == 3, result.output
    message = result.output.strip().splitlines()[-1]
    assert "recorded 'Seat'" in message  # the first differing decision
    assert "recorded elsewhere: " in message and f"blas_kernel: Elsewhere9000 -> {record.environment['blas_kernel']}" \
        in message and f"cpu: Another CPU -> {record.environment['cpu']}" in message
