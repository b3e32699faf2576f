"""analysis.load's cache (what `avalon view` keeps between pages): a folder's tables equal a fresh load's after games
finish (at the end and in the middle of the path order), are rewritten or go; nothing changed, the same tables;
of games finished since, only they are read (a game rewritten or gone: all again)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from avalon_agents.analysis import load
from avalon_agents.analysis.load import load_run
from tests.analysis.records import EVIL, ROLES, game_a, game_b, write_game, write_run


def same(cached: load.RunData, fresh: load.RunData) -> None:
    for name, table in fresh.tables().items():
        pd.testing.assert_frame_equal(getattr(cached, name), table, obj=name)


def test_the_cached_tables_are_a_fresh_loads_as_games_come_change_and_go(tmp_path, monkeypatch):
    run = write_run(tmp_path / "run")
    agents = {s: "ours" if s not in EVIL else "theirs" for s in ROLES}
    cache: dict = {}
    first = load_run(run, cache=cache)
    same(first, load_run(run))
    assert load_run(run, cache=cache) is first  # nothing changed: the same tables

    read = []
    real = load._load_game
    monkeypatch.setattr(load, "_load_game", lambda game, rows: (read.append(game.path.name), real(game, rows)))
    shutil.copy(run / "full/series-1/game-00002/result.json", run / "full/series-1/game-00003/result.json")
    write_game(run / "ablation/series-1/game-00001", *game_a(), agents, variant="ablation")  # before full/: between
    write_game(run / "full-b/series-1/game-00001", *game_b(), agents, variant="full-b")  # after full/ as paths sort
    grown = load_run(run, cache=cache)
    assert sorted(read) == ["game-00001", "game-00001", "game-00003"]  # only the games finished since
    same(grown, load_run(run))
    assert list(grown.games["game"]) == ["ablation/series-1/game-00001", *(f"full/series-1/game-0000{i}"
                                                                          for i in (1, 2, 3)),
                                         "full-b/series-1/game-00001"]
    assert list(cache[str(run)].stamps) == load.game_dirs(run)

    read.clear()
    shutil.rmtree(run / "full/series-1/game-00001")
    (run / "full/series-1/game-00002/result.json").write_text((run / "full/series-1/game-00002/result.json")
                                                              .read_text() + " ")  # rewritten: read again
    changed = load_run(run, cache=cache)
    assert read == ["game-00001", "game-00002", "game-00003", "game-00001"]  # loaded afresh
    same(changed, load_run(run))
    assert "full/series-1/game-00001" not in set(changed.events["game"])


def test_a_cache_holds_each_folder_apart(tmp_path):
    one, two = write_run(tmp_path / "one"), tmp_path / "two"
    write_game(two / "game-00001", *game_b(), {s: "x" for s in ROLES})
    cache: dict = {}
    assert len(load_run(one, cache=cache).games) == 2 and len(load_run(two, cache=cache).games) == 1
    assert len(load_run(one, cache=cache).games) == 2
