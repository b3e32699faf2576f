"""A run's page data is computed again only as far as the run changed: a run playing with no game finished since
keeps its metrics and figures (its row moves), a game finished computes them again (for a run whose metrics take
long, in a thread, the page answered at once meanwhile; a game that cannot be read said by the next page); the
games' winners come from the run's tables, the same as their result.json says; the cost counts every game's
health.json."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from avalon_agents.view import run_data
from avalon_agents.view.catalog import Catalog
from avalon_agents.view.run_data import RunPages, games
from avalon_agents.records.run_dir import EVENTS, HEALTH
from tests.view.runs import settled

ROOT = Path(__file__).parents[2]


@pytest.mark.slow  # the run page's metrics and figures, twice
def test_metrics_and_figures_are_computed_again_only_when_a_game_finished(tmp_path, monkeypatch):
    run = tmp_path / "llm"
    shutil.copytree(ROOT / "tests/data/replay/run", run)
    computed = []
    real = run_data.compute
    monkeypatch.setattr(run_data, "compute", lambda *a, **k: computed.append(1) or real(*a, **k))
    pages = RunPages(Catalog([tmp_path]))
    first = pages.page(run)
    assert len(computed) == 1 and first["figures"] and first["games"][0]["winner"]

    progress = {"command": "run", "name": "llm", "state": "playing", "planned": 2, "finished": 1, "aborted": [],
                "pid": os.getpid(), "updated": "2026-11-27T05:00:00+00:00"}
    (run / "progress.json").write_text(json.dumps(progress))  # playing its second game: the row moves
    playing = pages.page(run)
    assert playing["run"]["state"] == "playing" and len(computed) == 1
    assert playing["figures"] == first["figures"] and playing["metrics"] == first["metrics"]

    monkeypatch.setattr(run_data, "BEHIND", -1.0)  # as if its metrics took long to count: counted in a thread
    game = run / "main/series-1/game-00001"
    shutil.copytree(game, game.parent / "game-00002")  # it finished, the run plays on
    (run / "progress.json").write_text(json.dumps({**progress, "finished": 2, "updated": "2026-11-27T05:01:00+00:00"}))
    meanwhile = pages.page(run)
    assert meanwhile["computing"] and meanwhile["metrics_of"] == 1 and len(meanwhile["games"]) == 2
    assert meanwhile["run"]["games_finished"] == 2 and meanwhile["metrics"] == first["metrics"]
    settled(pages)
    counted = pages.page(run)
    assert not counted["computing"] and counted["metrics_of"] == 2 and len(computed) == 2

    (run / "progress.json").write_text(json.dumps({**progress, "state": "done", "finished": 2}))
    done = pages.page(run)
    assert len(computed) == 2 and [g["game"] for g in done["games"]] == [f"main/series-1/game-0000{i}" for i in (1, 2)]
    assert done["games"] == games(run, "llm")  # the winners from the tables: as result.json says
    calls = json.loads((game / HEALTH).read_text())["llm_calls"]
    assert sum(row["calls"] for row in done["cost"]) == 2 * calls > 0
    settled(pages)

    broken = game.parent / "game-00003"  # a finished game that cannot be read: said by the next page, not hidden
    shutil.copytree(game, broken)
    (broken / EVENTS).write_text("not json\n")
    (run / "progress.json").write_text(json.dumps({**progress, "state": "done", "finished": 3, "planned": 3}))
    assert pages.page(run)["computing"]  # answered at once; counted in a thread, which fails
    settled(pages)
    with pytest.raises(ValueError, match="game-00003 cannot be read"):
        pages.page(run)


@pytest.mark.slow  # the run page's metrics and figures, three times
def test_a_change_asked_while_the_thread_counts_an_older_one_is_counted_before_it_ends(tmp_path, monkeypatch):
    """On a loaded machine a page's thread can still be counting one change when the next is asked (the first count
    took over BEHIND): the page it leaves counts the newest, not `computing` with no thread counting it."""
    run = tmp_path / "llm"
    shutil.copytree(ROOT / "tests/data/replay/run", run)
    pages = RunPages(Catalog([tmp_path]))
    assert pages.page(run)["metrics_of"] == 1
    monkeypatch.setattr(run_data, "BEHIND", -1.0)  # every change counted in a thread
    holding, go, build = threading.Event(), threading.Event(), pages._build

    def held(*args):  # the thread has read its row (the first change's): it counts once the second is asked
        if threading.current_thread() is not threading.main_thread():
            holding.set()
            go.wait()
        return build(*args)

    monkeypatch.setattr(pages, "_build", held)
    progress = {"command": "run", "name": "llm", "state": "playing", "planned": 2, "finished": 1, "aborted": [],
                "pid": os.getpid(), "updated": "2026-11-27T05:00:00+00:00"}
    (run / "progress.json").write_text(json.dumps(progress))
    try:
        assert pages.page(run)["computing"]
        assert holding.wait(timeout=900)  # the thread holds the first change's row
        game = run / "main/series-1/game-00001"
        shutil.copytree(game, game.parent / "game-00002")
        (run / "progress.json").write_text(json.dumps({**progress, "finished": 2,
                                                       "updated": "2026-11-27T05:01:00+00:00"}))
        meanwhile = pages.page(run)
        assert meanwhile["computing"] and meanwhile["metrics_of"] == 1 and meanwhile["run"]["games_finished"] == 2
    finally:
        go.set()
    settled(pages)
    counted = pages.page(run)
    assert not counted["computing"] and counted["metrics_of"] == 2 and counted["run"]["games_finished"] == 2

