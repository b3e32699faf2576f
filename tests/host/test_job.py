"""The game job: a game played through `play_job` is written whole by the recorder; a finished one is kept; an
unfinished one is played again with the answers its attempts paid for, even if a kill interrupted the replay."""

from __future__ import annotations

import asyncio
import json
import shutil

from avalon_agents.core import make_rules
from avalon_agents.host.job import GameJob, play_job
from avalon_agents.records import LAYOUT, GameRecorder, is_done, read_events, read_trace
from avalon_agents.records.run_dir import EVENTS, HEALTH, META, RESULT, SEATING, TRACE, Seating, read_meta, read_seating
from avalon_agents.records.trace import LLMCall
from tests.helpers import scripted_setup

KINDS = ("llm", "rulebot", "llm", "rulebot", "llm")


def job(seating: Seating | None = None) -> GameJob:
    return GameJob(rules=make_rules("official", 5), seed=3, kinds=KINDS, setups=scripted_setup(), seating=seating)


def calls(path) -> list[LLMCall]:
    return [r for r in read_trace(path) if isinstance(r, LLMCall)]


def test_a_game_played_through_play_job_has_every_file(tmp_path):
    seating = Seating(agents=dict(zip(range(1, 6), ("ours", "bots", "ours", "bots", "ours"))), game=1, seed=3)
    path = tmp_path / "game-00001"
    host = asyncio.run(play_job(job(seating), path))
    assert sorted(p.name for p in path.iterdir()) == [EVENTS, HEALTH, META, RESULT, SEATING, TRACE]
    meta = read_meta(path)
    assert meta.layout == LAYOUT and meta.seed == 3 and meta.seats == dict(zip(range(1, 6), KINDS))
    assert read_seating(path) == seating
    assert read_events(path) == list(host.engine.events)
    assert json.loads((path / HEALTH).read_text())["llm_calls"] == len(calls(path)) > 0
    stamp = (path / RESULT).stat().st_mtime_ns
    assert asyncio.run(play_job(job(seating), path)) is None  # finished: kept as it is
    assert (path / RESULT).stat().st_mtime_ns == stamp


def test_a_kill_while_a_resumed_game_replays_loses_no_answer(tmp_path, monkeypatch):
    """Attempt 1 is killed halfway; attempt 2 is killed while it replays attempt 1's answers (the directory as
    a kill -9 would leave it at that moment); attempt 3 still replays every answer attempt 1 paid for."""
    path = tmp_path / "game"
    asyncio.run(play_job(job(), path))
    whole = calls(path)
    events = read_events(path)
    lines = (path / TRACE).read_text().splitlines()
    at = [k for k, line in enumerate(lines) if '"type":"llm_call"' in line]
    half = len(at) // 2
    (path / TRACE).write_text("\n".join(lines[:at[half]]) + "\n")  # attempt 1 killed halfway
    (path / RESULT).unlink()

    killed = tmp_path / "killed"
    trace = GameRecorder.trace

    def kill_after_two_replayed(self, record):
        trace(self, record)
        if sum(isinstance(r, LLMCall) and r.replayed for r in self.records) == 2 and not killed.exists():
            shutil.copytree(self.path, killed)  # what a kill -9 now would leave (every line is flushed)

    monkeypatch.setattr(GameRecorder, "trace", kill_after_two_replayed)
    asyncio.run(play_job(job(), path))  # attempt 2
    monkeypatch.undo()
    assert killed.exists() and not is_done(killed)

    asyncio.run(play_job(job(), killed))  # attempt 3, from what the kill left
    again = calls(killed)
    assert [c.replayed for c in again] == [True] * half + [False] * (len(whole) - half)  # nothing paid twice
    assert [c.reply for c in again] == [c.reply for c in whole]
    assert read_events(killed) == events  # the same game
    assert not list(killed.glob("attempt-*"))  # finished: the attempts' traces are gone
