"""A run's progress as it plays (cli.progress): the bar moves per round with the calls, their pace and the time left
at the measured pace; a run of one game (or -v) streams its transcript as `avalon play` does."""

from __future__ import annotations

import asyncio
import io

import pytest
import yaml
from rich.console import Console

from avalon_agents.cli.progress import RunBoard, new_calls, run_board
from avalon_agents.records.run_dir import TRACE, Tail
from avalon_agents.core.actions import ActionRequest, RequestKind
from avalon_agents.experiments.config import Experiment
from avalon_agents.experiments.runner import ExperimentStudy
from avalon_agents.experiments.scheduler import play
from avalon_agents.records.trace import LLMCall, to_line
from tests.helpers import avalon

BOTS = """\
name: progress
agents:
  bots: {kind: rulebot}
sides: {good: bots, evil: bots}
games_per_series: 1
"""


def _config(tmp_path, text: str = BOTS):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_a_one_game_run_with_v_streams_its_transcript_before_the_results(tmp_path):
    config = _config(tmp_path)
    streamed = avalon("run", str(config), "--out", str(tmp_path / "a"), "-v")
    assert streamed.returncode == 0, streamed.stderr
    lines = streamed.stdout.splitlines()
    quest = next(i for i, line in enumerate(lines) if line.startswith("Quest 1.1: Player"))
    table = next(i for i, line in enumerate(lines) if line.startswith("variant") and "win rate" in line)
    assert quest < table  # the game as it played, then the run's results
    assert any(line.startswith("  Player") and " proposes " in line for line in lines[quest:table])
    quiet = avalon("run", str(config), "--out", str(tmp_path / "b"))  # stdout is no terminal: no transcript
    assert quiet.returncode == 0 and not any(line.startswith("Quest 1.1") for line in quiet.stdout.splitlines())
    as_json = avalon("run", str(config), "--out", str(tmp_path / "c"), "-v", "--json")
    assert "Quest 1.1" not in as_json.stdout  # stdout holds the one JSON object


def test_the_bar_moves_per_round_within_a_game(tmp_path):
    study = ExperimentStudy({"main": Experiment.model_validate(yaml.safe_load(BOTS))})
    board = run_board(1, 0, 1, None, False, console=Console(file=io.StringIO()))
    seen: list[tuple[str, float]] = []

    class Recording:  # a watcher beside the board's: what the overall bar says after each batch of events
        def __init__(self, inner):
            self.inner = inner

        def waiting(self, request):
            self.inner.waiting(request)

        def answered(self, request):
            self.inner.answered(request)

        def tracing(self, records):
            self.inner.tracing(records)

        def delivered(self, events):
            self.inner.delivered(events)
            seen.append((board.status(board.overall), board.progress.tasks[0].completed))

    asyncio.run(play(study, tmp_path / "run", on_game=board.on_game,
                     on_start=lambda lane, n, path: Recording(board.on_start(lane, n, path))))
    rounds = list(dict.fromkeys(status.split(",")[0] for status, _ in seen))
    assert rounds[:3] == ["quest 1.1", "quest 1.2", "quest 2.1"] or len(set(rounds)) >= 3, rounds
    shares = [done for _, done in seen]
    assert 0 < max(shares) < 1 and shares == sorted(shares)  # it moved within the game, never back
    assert board.progress.tasks[0].completed == 1 and board.status(board.overall) == ""


def _call(latency: float, replayed: bool = False) -> str:
    return to_line(LLMCall(stage="agent", name="llm", prompt_id="p", prompt_hash="h", latency_s=latency,
                           input_tokens=100, output_tokens=20, replayed=replayed)) + "\n"


class _Lane:
    label, paths = "main/series-1", ("g",)

    @staticmethod
    def game_label(n):
        return "main/series-1"


def _following(tmp_path, now: list[float], games: int = 1, per_game: float | None = None):
    """A board on a clock the test moves (`now`), following one game in tmp_path: (board, follower, its trace)."""
    from rich.progress import Progress

    board = RunBoard(Progress(console=Console(file=io.StringIO())), total=games, done=0, to_play=games,
                     per_game=per_game, clock=lambda: now[0])
    game = tmp_path / "g"
    game.mkdir()
    return board, board.on_start(_Lane, 1, game), game / TRACE


def test_calls_their_pace_and_the_time_left_come_from_the_trace_as_it_grows(tmp_path):
    now = [0.0]
    board, follower, trace = _following(tmp_path, now, games=2, per_game=20)
    late = _call(1.0)
    trace.write_text(_call(2.0) + _call(4.0) + _call(0.0, replayed=True) + late[:30])  # a line half written
    follower.delivered([_event(quest=1, attempt=1)])
    assert board.status(board.overall) == "quest 1.1, 3 calls (1 replayed), 3.0 s/call, 360 tokens"
    now[0] = 10.0  # 2 calls asked: no stable pace yet (STABLE_CALLS after the first answer)
    assert board.left() is None and board.left_text() == "time left unknown yet"
    assert board.status(board.overall).endswith("360 tokens; the seats think: llm, 10 s")  # the last call's step
    vote = ActionRequest(seat=2, kind=RequestKind.VOTE, quest=1, attempt=1)
    follower.waiting(vote)
    now[0] = 13.0
    assert board.status(board.overall).endswith("; waiting for Player 2 to vote, 3 s")
    follower.answered(vote)
    with open(trace, "a") as f:
        f.write(late[30:])  # the line is read once whole
    follower.delivered([_event(quest=2, attempt=1)])
    assert board.status(board.overall).startswith("quest 2.1, 4 calls (1 replayed), 2.3 s/call")
    assert board.progress.tasks[0].completed == pytest.approx(4 / 20)


def test_a_new_attempts_trace_is_read_from_its_start(tmp_path):
    trace = tmp_path / TRACE
    trace.write_text(_call(1.0) * 3)
    tail = Tail.of(tmp_path)
    assert len(new_calls(tail)) == 3 and new_calls(tail) == []
    trace.write_text(_call(1.0))  # the recorder put the attempt aside and began again
    assert len(new_calls(tail)) == 1


def _event(quest: int, attempt: int):
    from avalon_agents.core.events import LeaderChosen

    return LeaderChosen(seq=1, quest=quest, attempt=attempt, visible_to="all", leader=1, team_size=2, fails_required=1,
                        final=False)


@pytest.mark.slow  # a scripted LLM game end to end (about a second)
def test_a_one_game_llm_run_streams_and_counts_its_calls(tmp_path):
    config = _config(tmp_path, BOTS.replace("bots: {kind: rulebot}", "ours: {kind: llm}\n  bots: {kind: rulebot}")
                     .replace("good: bots", "good: ours") + "model: scripted\n")
    result = avalon("run", str(config), "--out", str(tmp_path / "o"), "-v")
    assert result.returncode == 0, result.stderr
    assert "Quest 1.1: Player" in result.stdout and "  Player 1: " in result.stdout  # speeches as they came


def test_before_its_first_answer_the_time_left_is_the_plans(tmp_path):
    from rich.progress import Progress

    from avalon_agents.cli.progress import LeftColumn

    now = [0.0]
    board = RunBoard(Progress(console=Console(file=io.StringIO())), total=1, done=0, to_play=1, per_game=195,
                     clock=lambda: now[0], planned_seconds=780.0)
    now[0] = 60.0
    assert board.left() is None and board.planned_left() == 720.0
    column = LeftColumn(board)
    assert column.render(board.progress.tasks[0]).plain == "~12 min left (planned)"
    now[0] = 900.0  # past the plan: nothing is guessed
    assert board.planned_left() is None
    assert column.render(board.progress.tasks[0]).plain == "time left unknown yet"


def test_the_time_left_waits_for_a_stable_pace_and_leaves_out_the_wait_for_the_first_answer(tmp_path):
    """README command 1's time left swung from 7 h 53 min to 4 min (issue 41): the first answer waits for the model
    to load. The time left is 'unknown yet' until STABLE_CALLS calls were answered after the first, then the pace
    of those alone."""
    from avalon_agents.cli.progress import STABLE_CALLS

    now = [0.0]
    board, follower, trace = _following(tmp_path, now, per_game=100)
    now[0] = 600.0  # the model loads: the first answer after 10 minutes
    trace.write_text(_call(600.0))
    follower.delivered([_event(quest=1, attempt=1)])
    seen = []
    for n in range(1, STABLE_CALLS + 1):  # then a call every 2 s
        now[0] = 600.0 + 2 * n
        with open(trace, "a") as f:
            f.write(_call(2.0))
        board.moved()
        seen.append(board.left_text())
    assert set(seen[:-1]) == {"time left unknown yet"}
    assert board.left() == pytest.approx((100 - 1 - STABLE_CALLS) * 2.0)  # not (600 + 40) s / 21 calls a call
    assert seen[-1] == "3 min left"  # 158 s


def test_the_seats_thinking_names_the_step_and_the_seat(tmp_path):
    now = [0.0]
    _, follower, trace = _following(tmp_path, now)
    trace.write_text(to_line(LLMCall(seat=3, stage="agent", name="planning", prompt_id="p",
                                              prompt_hash="h", latency_s=1.0)) + "\n")
    follower.delivered([_event(quest=2, attempt=1)])
    now[0] = 622.0
    assert follower.waited_for() == "the seats think: Player 3's planning, 622 s"


@pytest.mark.slow  # a run of the command with its output piped: 3 s
def test_progress_lines_are_printed_when_the_output_is_piped(tmp_path):
    """`avalon run ... 2>&1 | tee log`: stderr is no terminal, so the bar is not drawn; a progress line is printed at
    each game's start and end (and every PLAIN_EVERY seconds) instead of nothing after the plan."""
    import subprocess
    import sys

    config = _config(tmp_path, BOTS.replace("games_per_series: 1", "games_per_series: 2"))
    done = subprocess.run([sys.executable, "-m", "avalon_agents.cli", "run", str(config), "--out",
                           str(tmp_path / "o")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    progress = [line for line in lines if " games" in line and (" of 2 games" in line)]
    assert [p.split(",")[0].split(";")[0] for p in progress] == ["0 of 2 games", "1 of 2 games", "1 of 2 games",
                                                                  "2 of 2 games"], lines
    assert all("left" in p for p in progress)  # "time left unknown yet": rule bots make no call


def test_a_progress_line_comes_every_so_often_while_the_run_plays_and_stops_with_it(tmp_path):
    import time

    from rich.progress import Progress

    plain = io.StringIO()
    board = RunBoard(Progress(console=Console(file=io.StringIO())), total=1, done=0, to_play=1, plain=plain,
                     every=0.01)
    (tmp_path / "g").mkdir()
    with board.progress:
        board.on_start(_Lane, 1, tmp_path / "g")
        for _ in range(500):  # awaited, not timed: a busy machine only takes longer
            if plain.getvalue().count("\n") >= 3:
                break
            time.sleep(0.01)
    lines = plain.getvalue().splitlines()
    assert len(lines) >= 3 and all(line.startswith("0 of 1 games, starting; ") for line in lines)
    board._liner.join(timeout=30)
    assert not board._liner.is_alive()  # the run stopped: so did its lines
