"""load_run's columnar copy (records/columns.py, FOLDER/.tables): written by the first read, then read instead of the
games' files, giving the recorded tables cell by cell (tests/data/tables_run, as test_load_tables holds them);
a game finished since read alone and added as a part; a part of another version or schema, a damaged one, or one
holding a game rewritten since, refused and replaced; readers in threads at once agree; a game's own folder keeps
no copy."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from avalon_agents.analysis import load
from avalon_agents.analysis.load import load_run
from avalon_agents.records import columns
from avalon_agents.records.run_dir import LAYOUT, META, RESULT, LayoutError
from tests.analysis.test_load_tables import RUN, differences, encoded, expected


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return shutil.copytree(RUN, tmp_path / "run")


@pytest.fixture
def read(monkeypatch) -> list[str]:
    """The games read from their files (not from the copy), by name."""
    names: list[str] = []
    real = load._load_game
    monkeypatch.setattr(load, "_load_game", lambda game, rows: (names.append(game.name), real(game, rows)))
    return names


def parts(run: Path) -> list[columns.Part]:
    return columns.parts(run, load.schema())


def test_the_copy_is_written_by_the_first_read_and_read_instead_of_the_games(run, read):
    first = load_run(run)
    games = sorted(first.games["game"])
    assert sorted(read) == games and [sorted(p.games) for p in parts(run)] == [games]
    read.clear()
    again = load_run(run)
    assert read == []  # every game from the copy
    assert not differences(encoded(again, run), expected())


def test_the_copy_follows_the_run_when_moved(run, read, tmp_path):
    load_run(run)
    moved = run.rename(tmp_path / "moved")
    read.clear()
    data = load_run(moved)
    assert read == [] and all(p.startswith(str(moved)) for p in data.games["path"])
    assert not differences(encoded(data, moved), expected())


def test_a_game_finished_since_is_read_alone_and_added_as_a_part(run, read):
    games = sorted(p.parent for p in run.rglob(RESULT))
    held = {g: (g / RESULT).read_bytes() for g in (games[0], games[3])}
    for game in held:
        (game / RESULT).unlink()
    load_run(run)
    for game, result in held.items():  # one at the start of the path order, one in the middle
        (game / RESULT).write_bytes(result)
    read.clear()
    grown = load_run(run)
    assert sorted(read) == sorted(g.relative_to(run).as_posix() for g in held)
    assert not differences(encoded(grown, run), expected())
    assert sum(len(p.games) for p in parts(run)) == len(games)
    read.clear()
    assert not differences(encoded(load_run(run), run), expected()) and read == []


def test_a_cached_reader_adds_the_games_it_reads_to_the_copy(run, read):
    games = sorted(p.parent for p in run.rglob(RESULT))
    last = (games[-1] / RESULT).read_bytes()
    (games[-1] / RESULT).unlink()
    cache: dict = {}
    load_run(run, cache=cache)
    (games[-1] / RESULT).write_bytes(last)
    load_run(run, cache=cache)  # as `avalon view` does when a game finishes
    read.clear()
    assert not differences(encoded(load_run(run), run), expected()) and read == []


@pytest.mark.parametrize("change", ["version", "schema", "damaged", "rewritten"])
def test_a_part_that_cannot_be_trusted_is_refused_and_replaced(run, read, monkeypatch, change):
    load_run(run)
    [old] = parts(run)
    games = sorted(old.games)
    if change == "version":
        monkeypatch.setattr(columns, "VERSION", columns.VERSION + 1)  # the copy is of an older version
    elif change == "schema":
        monkeypatch.setattr(load, "schema", lambda: "rows built otherwise")
    elif change == "damaged":
        old.path.write_bytes(old.path.read_bytes()[:1000])
    else:
        result = run / games[0] / RESULT
        result.write_text(result.read_text() + " ")
    read.clear()
    data = load_run(run)
    assert sorted(read) == games  # every game of the part refused read again
    assert not differences(encoded(data, run), expected())
    assert not old.path.exists() and [sorted(p.games) for p in parts(run)] == [games]
    read.clear()
    load_run(run)
    assert read == []


def test_readers_at_once_agree_and_leave_one_whole_copy(run):
    found: list = []

    def reader() -> None:
        found.append(encoded(load_run(run), run))

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 4 and not any(differences(f, expected()) for f in found)
    assert not differences(encoded(load_run(run), run), expected())
    assert not [p for p in (run / columns.FOLDER).iterdir() if p.name.endswith(".tmp")]


def test_a_game_folder_keeps_no_copy(run):
    game = next(p.parent for p in sorted(run.rglob(RESULT)))
    load_run(game)
    assert not (game / columns.FOLDER).exists()


def test_a_cell_the_copy_cannot_hold_leaves_no_part(run, monkeypatch):
    real = load._frames

    def odd(rows):
        data = real(rows)
        data.events["visible_to"] = [{1, 2}] * len(data.events)  # a set: not a type a part holds
        return data

    monkeypatch.setattr(load, "_frames", odd)
    data = load_run(run)
    assert data.events["visible_to"].iloc[0] == {1, 2} and parts(run) == []


def test_a_killed_writers_temporary_part_is_ignored_then_removed(run, read):
    folder = run / columns.FOLDER
    folder.mkdir()
    old, new = folder / ".part-0123456789abcdef.tmp", folder / ".part-fedcba9876543210.tmp"
    old.write_bytes(b"half a part")
    new.write_bytes(b"half a part")
    os.utime(old, (1, 1))
    data = load_run(run)  # writes the first part, and sweeps
    assert not differences(encoded(data, run), expected())
    assert not old.exists() and new.exists()  # a writer may still be writing the newer one


def test_games_read_in_chunks_and_bulks_give_the_same_tables(run, read, monkeypatch):
    """A big first read: CHUNK games at a time from their files, each BULK written as a part and read back from it
    (the parts' shared values keep 100,000 games in memory); then read from those parts alone."""
    monkeypatch.setattr(load, "CHUNK", 1)
    monkeypatch.setattr(load, "BULK", 2)
    first = load_run(run)
    assert not differences(encoded(first, run), expected())
    assert sorted(len(p.games) for p in parts(run)) == [2, 2, 2]  # 6 games, no merge after a bulk
    read.clear()
    assert not differences(encoded(load_run(run), run), expected()) and read == []


def test_a_held_game_whose_layout_changed_is_read_again_and_refused(run):
    load_run(run)
    meta = sorted(run.rglob(META))[0]
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "layout": LAYOUT + 1}))
    with pytest.raises(LayoutError, match=f"layout {LAYOUT + 1}"):
        load_run(run)


@pytest.mark.slow  # the session's scripted experiment, analyzed twice
def test_avalon_analyze_reads_the_copy_the_run_left_and_writes_the_same_metrics(analysis_run, read, tmp_path):
    """`avalon run`'s own summary read the run once: its copy is there, `avalon analyze` reads no game's files, and
    its metrics are those of an analysis with the copy removed (every game read from its files)."""
    from click.testing import CliRunner

    from avalon_agents.cli import cli
    from avalon_agents.records import analysis_dir

    run = shutil.copytree(analysis_run, tmp_path / "run")  # its files' times kept: the copy still holds them
    assert parts(run)
    read.clear()
    done = CliRunner().invoke(cli, ["analyze", str(run), "--out", str(tmp_path / "a")])
    assert done.exit_code == 0, done.output
    assert read == []
    shutil.rmtree(run / columns.FOLDER)
    again = CliRunner().invoke(cli, ["analyze", str(run), "--out", str(tmp_path / "b")])
    assert again.exit_code == 0, again.output
    assert sorted(read) == sorted(load_run(run).games["game"])
    assert analysis_dir.read_metrics(tmp_path / "a") == analysis_dir.read_metrics(tmp_path / "b") is not None
