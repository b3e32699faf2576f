"""Game ids unique across runs (records.run_record.game_id, what program seats are told as `game`): a run's id is
made when its run.json is first written and kept when the run is resumed; each game's id is the run's id and its
path in the run, whatever path the command names it by."""

from __future__ import annotations

import os

from avalon_agents.records import GameRecorder
from avalon_agents.records.run_record import RUN, game_id, read_run_record, write_run_record


def test_a_resumed_run_keeps_its_id_and_a_new_run_gets_another(tmp_path):
    first = write_run_record(tmp_path / "a", "run", "study")
    again = write_run_record(tmp_path / "a", "run", "study")  # the run resumed
    other = write_run_record(tmp_path / "b", "run", "study")  # another run of the same config
    assert first.id == again.id == read_run_record(tmp_path / "a").id
    assert other.id != first.id and len(first.id) == 12
    assert game_id(tmp_path / "a" / "main" / "series-1" / "game-00001") == f"{first.id}/main/series-1/game-00001"
    assert game_id(tmp_path / "b" / "main" / "series-1" / "game-00001") == f"{other.id}/main/series-1/game-00001"


def test_a_game_keeps_its_id_whatever_path_names_it(tmp_path, monkeypatch):
    run = write_run_record(tmp_path / "runs" / "x", "play", "x")
    game = tmp_path / "runs" / "x" / "game-00002"
    monkeypatch.chdir(tmp_path)
    assert GameRecorder(game).game == GameRecorder(os.path.relpath(game)).game == f"{run.id}/game-00002"
    monkeypatch.chdir(tmp_path / "runs" / "x")
    assert GameRecorder("game-00002").game == f"{run.id}/game-00002"


def test_a_game_in_no_run_is_named_by_its_directory(tmp_path):
    assert game_id(tmp_path / "old" / "game-00001") == (tmp_path / "old" / "game-00001").as_posix()
    (tmp_path / "old" / RUN).parent.mkdir()
    (tmp_path / "old" / RUN).write_text("not json")  # a run.json that cannot be read is none
    assert game_id(tmp_path / "old" / "game-00001") == (tmp_path / "old" / "game-00001").as_posix()
