"""No call paid twice, whatever kill interrupts a game: a real `avalon run` is killed (SIGKILL) mid-game, then
again and again while its resumed game replays the answers it paid for, and resumed to the end. The loopback
server counts every request: over all attempts it was asked each of the game's requests exactly as often as an
uninterrupted run of the same game asks it, and the game ends the same."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from avalon_agents.llm.loopback import openai_server
from avalon_agents.records.run_dir import EVENTS, TRACE, attempt_files, is_done

CONFIG = {"name": "kill", "rules": "official", "players": 6, "agents": {"a": {"kind": "llm"}},
          "sides": {"good": "a", "evil": "a"}, "series": 1, "games_per_series": 1, "seed": 11}
GAME = "main/series-1/game-00001"


def request_key(body: dict) -> str:
    return json.dumps([body.get("messages"), body.get("response_format")], sort_keys=True)


class Trace:
    """Reads a game's growing trace.jsonl as it is written: the answers replayed and asked so far."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.rest, self.replayed, self.live = path, 0, b"", 0, 0

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return
        self.offset += len(data)
        *lines, self.rest = (self.rest + data).split(b"\n")
        for line in lines:
            if b'"type":"llm_call"' in line:
                if b'"replayed":true' in line:
                    self.replayed += 1
                else:
                    self.live += 1


def inode(path: Path) -> int | None:
    """The file's inode (a new attempt's trace.jsonl is a new file: the earlier one became attempt-<n>.jsonl)."""
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None


def kill(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.slow  # several processes, each playing part of a game
def test_kills_inside_the_replay_of_a_resumed_game_never_pay_a_call_twice(tmp_path):
    config = tmp_path / "kill.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    with openai_server() as server:
        asked = server.state.requests

        def command(out: Path) -> list[str]:
            return [sys.executable, "-m", "avalon_agents.cli", "run", str(config), "--out", str(out), "-q",
                    "--model", f"openai-compatible:m@{server.base_url}"]

        reference = subprocess.run(command(tmp_path / "reference"), capture_output=True, text=True, timeout=300)
        assert reference.returncode == 0, reference.stderr[-2000:]
        once = Counter(request_key(body) for body in asked)
        total = sum(once.values())
        assert total >= 60
        del asked[:]

        out = tmp_path / "run"
        game = out / GAME
        start = dict(start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc = subprocess.Popen(command(out), **start)  # the first attempt, killed halfway through its calls
        deadline = time.monotonic() + 300
        while len(asked) < total // 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        kill(proc)
        assert not is_done(game)
        trace = Trace(game / TRACE)
        trace.poll()
        lost = len(asked) - trace.live  # asked, and killed before the answer came: paid, and asked again

        # kills inside the replay: as it begins, after a few answers, about half of them, near their end
        landed = []
        for share in (0.0, 0.1, 0.5, 0.9):
            earlier = inode(game / TRACE)  # the last attempt's trace, if it opened one
            before = len(asked)
            proc = subprocess.Popen(command(out), **start)
            deadline = time.monotonic() + 300
            while inode(game / TRACE) in (None, earlier) and time.monotonic() < deadline:  # it began
                time.sleep(0.001)
            assert inode(game / TRACE) not in (None, earlier), "the resumed attempt never began"
            replayable = int(share * len(asked))  # what earlier attempts asked (at least this many replay)
            trace = Trace(game / TRACE)
            while trace.replayed < replayable and len(asked) == before and time.monotonic() < deadline:
                time.sleep(0.001)
                trace.poll()
            kill(proc)
            trace.poll()
            landed.append((trace.replayed, trace.live, len(asked) - before))
            lost += len(asked) - before - trace.live
            assert not is_done(game)

        final = subprocess.run(command(out), capture_output=True, text=True, timeout=300)
        assert final.returncode == 0, final.stderr[-2000:]
        paid = Counter(request_key(body) for body in asked)

    assert is_done(game) and not attempt_files(game)
    # each request the game makes was asked as often as the uninterrupted game asked it, and once more only if a
    # kill came while it was in flight (its answer never arrived): no answer that arrived was paid twice
    assert not once - paid and sum((paid - once).values()) == lost <= 12, (paid - once, lost)
    reference_game = tmp_path / "reference" / GAME
    assert (game / EVENTS).read_bytes() == (reference_game / EVENTS).read_bytes()
    calls = [json.loads(line) for line in open(game / TRACE) if '"type":"llm_call"' in line]
    assert len(calls) == total and sum(c["replayed"] for c in calls) >= total // 2 - lost
    # the kills fell inside the replay: the killed attempts asked the server nothing (the first two surely; on a
    # loaded machine the later ones may land as the replay ends: 3 of 4 did, the fourth with one request sent)
    assert sum(1 for replayed, live, new in landed if new == 0) >= 2, landed
    assert sum(replayed for replayed, live, new in landed) > 0
