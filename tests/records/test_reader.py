"""The one reader of a run (records.reader): a run of any kind opened from its run record, or an older run from what
its files say; one cached walk of its games (finished, aborted, playing) that sees a change however fast it comes;
typed per-game readers; health that adds up and sums as the trace does; a tail that reads only new whole lines."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from avalon_agents.records import GameRecorder, Health, open_run
from avalon_agents.records.reader import UnknownGame, find_runs
from avalon_agents.records.run_dir import (
    EVENTS,
    EXPERIMENT,
    IMPORT_REPORT,
    PROGRESS,
    STUDY,
    TRACE,
    Seating,
    game_dir,
    write_json_atomic,
)
from avalon_agents.records.run_record import RUN, write_run_record
from avalon_agents.records.trace import Extraction, LLMCall, SeatFault, SpeechCheck
from avalon_agents.records.usage import usage
from tests.records.test_recorder import played


def call(n: int, outcome: str = "ok", spec: str = "m1") -> LLMCall:
    return LLMCall(stage="agent", name="vanilla", seat=1 + n % 5, prompt_id="p", prompt_hash="h", request_hash=f"r{n}",
                   reply=f"answer {n}", outcome=outcome, error="timeout: slow" if outcome == "failed" else None,
                   settings={"spec": spec}, input_tokens=10 * n, output_tokens=n, latency_s=0.25)


def records(seed: int) -> list:
    """Trace records of every kind health counts, varied by `seed`."""
    found: list = [call(n, "failed" if n % 4 == seed % 4 else "ok", "m1" if n % 2 else "m2") for n in range(seed + 3)]
    found += [Extraction(seat=1, kind="vote", quest=1, attempt=1, method="fallback" if n == seed else "json",
                         valid=n % 3 != 0, answers=1 + n % 2) for n in range(seed + 2)]
    found += [SpeechCheck(seat=2, quest=1, attempt=1, echo=seed % 2 == 0, words=0 if seed == 1 else 9)]
    found += [SeatFault(seat=3, problem="timeout"), SeatFault(seat=3, problem="fallback")][: seed % 3]
    return found


def record_game(out, n: int, *, finish: bool = True, trace=(), seats=None, events=None) -> GameRecorder:
    events_, result = events or played()
    recorder = GameRecorder(game_dir(out, n), seating=Seating(agents={s: "bot" for s in range(1, 6)}, game=n))
    recorder.start({"seed": n, "seats": seats or {s: "rulebot" for s in range(1, 6)}})
    recorder.append_events(events_)
    for r in trace:
        recorder.trace(r)
    if finish:
        recorder.finish(result)
    recorder.close()
    return recorder


def test_health_adds_up_and_sums_as_the_trace_of_every_game_counts(tmp_path):
    games = [records(seed) for seed in range(4)]
    whole = Health.of([r for g in games for r in g])
    summed = Health.total(Health.of(g) for g in games)
    counts = {k: v for k, v in whole.model_dump().items() if k not in ("llm_seconds", "waited_s", "seconds_per_call")}
    assert {k: v for k, v in summed.model_dump().items() if k in counts} == counts
    assert summed.llm_seconds == pytest.approx(whole.llm_seconds) and summed.llm_calls == 3 + 4 + 5 + 6
    assert summed.valid_response_rate == usage([r for g in games for r in g])["valid_response_rate"]
    assert (Health.of(games[0]) + Health.of(games[1])).failed_calls == whole.outcomes["failed"] - sum(
        Health.of(g).failed_calls for g in games[2:])
    # a health.json whose counts do not add up is refused, naming what does not
    broken = {**usage(games[0]), "failed_calls": 99}
    with pytest.raises(ValueError, match="failed_by_cause != failed_calls"):
        Health.model_validate(broken)
    # an older health.json keeps only the rate: its valid decisions are counted back
    old = usage(games[2])
    assert Health.model_validate(old).valid == sum(r.valid for r in games[2] if isinstance(r, Extraction))


def test_a_run_is_walked_once_and_again_only_where_it_changed(tmp_path):
    out = tmp_path / "run"
    for n in (1, 2):
        record_game(out, n, trace=records(n))
    aborted = record_game(out, 3, finish=False)
    aborted.abort("too many failed calls", step=4)
    run = open_run(out)
    assert open_run(out) is run  # one Run, one walk, per folder
    assert [(g.name, g.state) for g in run.games()] == [("game-00001", "finished"), ("game-00002", "finished"),
                                                        ("game-00003", "aborted")]
    first = run.games()
    assert all(a is b for a, b in zip(first, run.games()))  # nothing changed: the same games, nothing listed again
    playing = record_game(out, 4, finish=False)  # started, not finished: seen at once
    assert [g.state for g in run.games()] == ["finished", "finished", "aborted", "playing"]
    assert run.games()[0] is first[0]
    _, result = played()
    playing.finish(result)  # finished within the same tick as the listing before: seen all the same (RACY)
    assert [g.name for g in run.finished()] == ["game-00001", "game-00002", "game-00004"]
    assert [g.name for g in run.aborted()] == ["game-00003"] and run.aborted()[0].aborted_reason()["step"] == 4
    game = run.game("game-00002")
    assert game.meta().seed == 2 and game.seating().game == 2 and game.result().winner
    assert game.health() == Health.of(records(2)) and game.trace() == records(2)
    assert game.events()[0].type == "game_started" and game.judge_trace() == []
    with pytest.raises(UnknownGame, match="no game '../x'"):
        run.game("../x")


def test_a_folder_changed_long_after_its_listing_is_listed_again(tmp_path):
    out = tmp_path / "run"
    record_game(out, 1)
    run = open_run(out)
    assert len(run.games()) == 1
    old = time.time_ns() - 10 * 10**9
    for folder in (out, *out.iterdir()):  # as if listed long after they last changed: the listing is trusted
        os.utime(folder, ns=(old, old))
    assert len(run.games()) == 1
    record_game(out, 2)
    assert [g.name for g in run.finished()] == ["game-00001", "game-00002"]


def test_a_tail_reads_new_whole_lines_and_a_new_attempt_from_its_start(tmp_path):
    out = tmp_path / "run"
    recorder = record_game(out, 1, finish=False)
    game = open_run(out).game("game-00001")
    tail = game.tail(TRACE)
    assert tail.read() == []
    recorder = GameRecorder(game.path)
    recorder.start({"seed": 1})
    recorder.trace(call(1))
    recorder.trace(call(2).model_copy(update={"reply": "a reply\u2028over two lines"}))
    with open(game.path / TRACE, "a") as f:
        f.write(call(3).model_dump_json()[:20])  # a line still being written
    assert tail.read() == [call(1), call(2).model_copy(update={"reply": "a reply\u2028over two lines"})]
    assert tail.read() == []
    with open(game.path / TRACE, "a") as f:
        f.write(call(3).model_dump_json()[20:] + "\n")
    assert tail.read() == [call(3)]
    recorder.close()
    recorder = GameRecorder(game.path)
    recorder.start({"seed": 1})  # a new attempt: its trace starts again
    recorder.trace(call(4))
    recorder.close()
    assert tail.read() == [call(4)] and tail.restarted
    events = game.tail(EVENTS)
    assert events.read() == [] and tail.offset > 0


def test_an_older_run_is_read_from_what_its_files_say(tmp_path):
    for name, files, command in (
            ("exp", {EXPERIMENT: {"name": "exp", "commit": "abc", "started": "2026-01-01", "variants": {"a": {}}}},
             "run"),
            ("tour", {EXPERIMENT: {"name": "tour", "variants": {}}}, "tournament"),
            ("imp", {IMPORT_REPORT: {"source": "x", "imported": []}}, "import"),
            ("batch", {STUDY: {"name": "batch", "fingerprint": {}}}, "play"),
            ("rt", {STUDY: {"name": "rt"}, PROGRESS: {"command": "redteam", "name": "rt", "state": "done"}},
             "redteam")):
        out = tmp_path / name
        record_game(out, 1)
        for file, data in files.items():
            write_json_atomic(out / file, data)
        if name == "tour":
            (out / "tournament").mkdir()
        run = open_run(out)
        assert not run.recorded and run.command == command, name
        assert run.name == name if name != "imp" else run.name == "imp"
    exp = open_run(tmp_path / "exp")
    assert exp.environment == {"commit": "abc"} and exp.record.started == "2026-01-01"
    assert exp.variant_order() == ["a"] and exp.own_record()[0] == EXPERIMENT
    assert open_run(tmp_path / "rt").progress().state == "done"
    served = tmp_path / "served"
    record_game(served, 1, seats={1: "human", 2: "rulebot", 3: "rulebot", 4: "rulebot", 5: "rulebot"})
    assert open_run(served).command == "served table" and open_run(served).seat_kinds() == ["human", "rulebot"]
    plain = tmp_path / "plain"
    record_game(plain, 1)
    assert open_run(plain).command == "games" and open_run(plain).record.layout == 2
    assert find_runs(tmp_path) == sorted(tmp_path / n for n in ("batch", "exp", "imp", "plain", "rt", "served",
                                                                "tour"))


def test_a_recorded_run_is_read_from_its_run_record_even_after_a_resume(tmp_path):
    out = tmp_path / "run"
    record_game(out, 1)
    write_json_atomic(out / EXPERIMENT, {"name": "old name"})
    write_run_record(out, "serve", "table at 8000", {"players": 5}, plugins=[])
    run = open_run(out)
    assert run.recorded and (run.command, run.name, run.record.config) == ("serve", "table at 8000", {"players": 5})
    assert run.environment["python"] and run.environment["commit"]
    write_run_record(out, "replay", "again", plugins=[])
    assert run.command == "replay"  # rewritten: read again
    json.loads((out / RUN).read_text())
    assert not open_run(tmp_path / "run").unfinished()


@pytest.mark.slow  # every command that writes a run, each in a process of its own
def test_a_run_of_every_kind_is_opened_through_the_reader(tmp_path):
    from tests.view.runs import every_kind

    runs = every_kind(tmp_path)
    kinds = {}
    for kind, path in runs.items():
        run = open_run(path)
        kinds[kind] = run.kind
        if kind != "llm":  # the recorded test data predates run.json: read from experiment.json
            assert run.recorded and run.environment["python"] and run.environment["blas_kernel"], kind
        assert run.games(), kind
        for game in run.finished()[:1]:
            assert game.meta().seats and game.result().winner and game.events(), kind
            assert game.health().llm_calls == len([r for r in game.trace() if isinstance(r, LLMCall)]), kind
    assert kinds == {"run": "run", "tournament": "tournament", "play": "play", "import": "import", "llm": "run",
                     "redteam": "redteam", "bias": "bias", "serve": "serve", "replay": "replay"}
    assert open_run(runs["serve"]).record.config["seats"][0] == "human"
    # a replay says which run's records answered it; a run that asked its models says none
    assert Path(open_run(runs["replay"]).record.replays) == runs["llm"]
    assert all(open_run(path).record.replays == "" for kind, path in runs.items() if kind != "replay")
