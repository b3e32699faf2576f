"""The recorder, the one writer of a game directory: start (meta, seating), events and trace appended, finish
(health, then result) or abort (the reason); atomic JSON; a directory without result.json is unfinished; an
interrupted attempt's answers kept until the game finishes; the layout recorded and a newer one refused."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from avalon_agents.agents import RuleBot
from avalon_agents.core import make_rules
from avalon_agents.host import GameHost
from avalon_agents.records import LAYOUT, GameRecorder, LayoutError, is_done, read_events, read_result, read_trace
from avalon_agents.records.run_dir import (
    ABORTED,
    ATTEMPT,
    EVENTS,
    HEALTH,
    META,
    RESULT,
    SEATING,
    TRACE,
    Seating,
    attempt_files,
    judge_tracer,
    read_judge_trace,
    read_meta,
    read_seating,
    write_json_atomic,
)
from avalon_agents.records.trace import LLMCall, ModuleOutput
from avalon_agents.records.walk import aborted_games, finished_games, games_in

SEATED = Seating(agents={1: "a", 2: "b", 3: "a", 4: "b", 5: "a"}, game=3, variant="v", seed=7)


def played():
    """A finished game of rule bots, in memory: its events and result."""
    rules = make_rules("official", 5)
    host = GameHost(rules=rules, agents={s: RuleBot(seat=s, seed=s) for s in rules.seats}, seed=7)
    result = asyncio.run(host.run())
    return host.engine.events, result


def call(n: int, replayed: bool = False) -> LLMCall:
    return LLMCall(stage="agent", name="vanilla", seat=1, prompt_id="p", prompt_hash="h", request_hash=f"r{n}",
                   reply=f"answer {n}", replayed=replayed)


def test_the_lifecycle_writes_every_file_and_result_json_last(tmp_path):
    events, result = played()
    path = tmp_path / "game"
    recorder = GameRecorder(path, seating=SEATED)
    assert not path.exists() and not recorder.finished  # made, nothing written yet
    recorder.start({"seed": 7, "seats": {1: "rulebot"}})
    assert read_meta(path).layout == LAYOUT and read_meta(path).seed == 7
    assert read_seating(path) == SEATED
    recorder.append_events(events[:5])
    recorder.trace(ModuleOutput(seat=1, module="m", slot="s", text="x"))
    # under way: unfinished, and what happened so far is on disk
    assert not is_done(path) and finished_games(tmp_path) == [] and games_in(tmp_path) == [path]
    assert read_events(path) == list(events[:5]) and len(read_trace(path)) == 1
    recorder.append_events(events[5:])
    recorder.finish(result)
    assert recorder.finished and is_done(path) and finished_games(tmp_path) == [path]
    assert read_result(path) == result and read_events(path) == list(events)
    health = json.loads((path / HEALTH).read_text())
    assert health["llm_calls"] == 0 and health["decisions"] == 0  # counted from what was traced
    assert sorted(p.name for p in path.iterdir()) == [EVENTS, HEALTH, META, RESULT, SEATING, TRACE]


def test_result_json_is_written_after_health_json(tmp_path, monkeypatch):
    """A kill between the two leaves an unfinished game, never a finished one without its health."""
    events, result = played()
    written = []

    def spy(path, data):
        written.append(path.name)
        write_json_atomic(path, data)

    monkeypatch.setattr("avalon_agents.records.recorder.write_json_atomic", spy)
    recorder = GameRecorder(tmp_path / "g")
    recorder.start({})
    recorder.append_events(events)
    recorder.finish(result, {"llm_calls": 0})
    assert written == [META, HEALTH, RESULT]
    assert json.loads((tmp_path / "g" / HEALTH).read_text()) == {"llm_calls": 0}  # the health given


def test_an_aborted_game_says_why_and_is_unfinished(tmp_path):
    events, _ = played()
    path = tmp_path / "g"
    recorder = GameRecorder(path)
    recorder.start({})
    recorder.append_events(events[:3])
    recorder.trace(call(1))
    recorder.abort("no progress for 5 s during the votes", step=4, health={"llm_calls": 1})
    recorder.close()
    assert json.loads((path / ABORTED).read_text()) == {"reason": "no progress for 5 s during the votes",
                                                        "step": 4}
    assert not is_done(path) and json.loads((path / HEALTH).read_text()) == {"llm_calls": 1}
    assert finished_games(tmp_path) == [] and aborted_games(tmp_path) == [path]
    # a new attempt: the abort and the old files are gone, the old trace kept as the first attempt's
    again = GameRecorder(path)
    assert again.earlier_calls() == [call(1)]
    again.start({})
    assert sorted(p.name for p in path.iterdir()) == [ATTEMPT.format(1), EVENTS, META, TRACE]
    assert read_events(path) == [] and read_trace(path) == [] and aborted_games(tmp_path) == []


def test_answers_paid_for_survive_any_number_of_interrupted_attempts(tmp_path):
    """Each answer once: all of the first attempt's, and only what later attempts asked live (what they
    replayed is a copy); kept until the game finishes; a line a kill cut short is left out."""
    path = tmp_path / "g"
    first = GameRecorder(path)
    first.start({})
    for n in (1, 2, 3):
        first.trace(call(n))
    first.close()
    with open(path / TRACE, "a") as f:
        f.write('{"type": "llm_call", "stage": "ag')  # killed while writing a line

    second = GameRecorder(path)
    assert second.earlier_calls() == [call(1), call(2), call(3)]
    second.start({})
    second.trace(call(1, replayed=True))  # killed while replaying: the rest of the answers are still on disk
    second.close()

    third = GameRecorder(path)
    assert third.earlier_calls() == [call(1), call(2), call(3)]
    third.start({})
    for n in (1, 2, 3):
        third.trace(call(n, replayed=True))
    third.trace(call(4))  # asked live
    third.close()

    fourth = GameRecorder(path)
    assert fourth.earlier_calls() == [call(1), call(2), call(3), call(4)]
    fourth.start({})
    assert [p.name for p in attempt_files(path)] == [ATTEMPT.format(n) for n in (1, 2, 3)]
    events, result = played()
    fourth.append_events(events)
    fourth.finish(result)
    assert attempt_files(path) == [] and is_done(path)  # finished: its own trace holds every answer it took


def test_json_files_are_written_whole_or_not_at_all(tmp_path, monkeypatch):
    path = tmp_path / META
    write_json_atomic(path, {"seed": 1})

    def fail(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="No space"):
        write_json_atomic(path, {"seed": 2})
    assert json.loads(path.read_text()) == {"seed": 1}
    assert [p.name for p in tmp_path.iterdir()] == [META]  # no temporary file left


def _layout(game, layout):
    meta = json.loads((game / META).read_text())
    meta.pop("layout", None)
    if layout is not None:
        meta["layout"] = layout
    (game / META).write_text(json.dumps(meta))


def test_a_game_of_a_newer_layout_is_refused_naming_both_layouts(tmp_path):
    events, result = played()
    game = tmp_path / "run" / "game-00001"
    recorder = GameRecorder(game)
    recorder.start({})
    recorder.append_events(events)
    recorder.finish(result)
    _layout(game, None)  # layout 1: written before the number was kept
    assert finished_games(tmp_path / "run") == [game] and read_meta(game).layout == 1
    _layout(game, LAYOUT + 1)
    message = f"run-dir: {tmp_path / 'run'} holds a game of layout {LAYOUT + 1} (game-00001); this version of " \
              f"avalon_agents reads layouts 1 to {LAYOUT}"
    with pytest.raises(LayoutError, match=message.replace("(", r"\(").replace(")", r"\)")):
        finished_games(tmp_path / "run")
    with pytest.raises(LayoutError, match=f"holds a game of layout {LAYOUT + 1}; "):
        GameRecorder(game)  # nothing of it is touched to play it again
    assert is_done(game)


def test_the_judges_calls_about_a_game_go_beside_its_trace(tmp_path):
    judge_tracer(tmp_path / "g").trace(call(1))
    assert read_judge_trace(tmp_path / "g") == [call(1)] and read_trace(tmp_path / "g") == []  # the game's own
