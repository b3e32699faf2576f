"""avalon view's catalog: every kind of run found and named, its row right, computed again only when its files
change (a new game read alone), a run still playing seen as such; and nothing ever written into a run folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from avalon_agents.records.run_dir import HEALTH, META, PROGRESS, RESULT, read_progress
from avalon_agents.view.catalog import Catalog, UnknownRun, find_runs
from avalon_agents.view.pages import View
from tests.view.runs import every_kind, experiment, settled


@pytest.fixture(scope="module")
def kinds(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    folder = tmp_path_factory.mktemp("runs")
    return folder, every_kind(folder)


def tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under `folder` with its size and time: what 'nothing written' compares."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow  # runs of every kind, the run page's metrics and figures
def test_every_kind_of_run_is_found_and_named(kinds):
    folder, runs = kinds
    assert find_runs(folder) == sorted(runs.values())
    rows = {row["id"]: row for row in Catalog([folder]).index()}
    assert {k: rows[p.name]["kind"] for k, p in runs.items()} == {
        "run": "run", "tournament": "tournament", "play": "play", "import": "import", "llm": "run",
        "redteam": "redteam", "bias": "bias", "serve": "serve", "replay": "replay"}
    assert rows["served"]["models"] == ["human", "rulebot"] and rows["served"]["games_finished"] == 1
    for kind in ("redteam", "bias"):
        assert rows[kind]["games_finished"] == rows[kind]["games_planned"] > 0 and rows[kind]["models"] == ["scripted"]
    assert rows["exp"]["games_finished"] == rows["exp"]["games_planned"] == 2 and rows["exp"]["state"] == "done"
    assert rows["exp"]["models"] == ["random", "rulebot"] and rows["exp"]["usd"] == 0
    assert rows["exp"]["commit"] and rows["exp"]["started"]
    llm = rows["llm"]
    calls = sum(json.loads(p.read_text())["llm_calls"] for p in runs["llm"].rglob(HEALTH))
    assert llm["health"]["llm_calls"] == calls > 0 and llm["models"] == ["scripted"]
    assert llm["input_tokens"] > 0 and 0 <= llm["health"]["valid_response_rate"] <= 1
    assert rows["humans"]["models"] == ["human"]
    # the replay's run page names the run whose records answered it (its run record's `replays`)
    assert Path(View([folder]).run("again")["config"]["record"]["replays"]) == runs["llm"]


@pytest.mark.slow  # runs of every kind, the run page's metrics and figures
def test_viewing_writes_nothing_into_a_run(kinds):
    folder, runs = kinds
    before = tree(folder)
    view = View([folder])
    view.index()
    for row in view.catalog.index():
        data = view.run(row["id"])
        for game in data["games"][:1]:
            view.game_page(row["id"], game["game"])
    assert tree(folder) == before


def test_a_row_is_computed_again_only_when_its_run_changed(tmp_path):
    run = experiment(tmp_path, games=3, max_games=2)
    catalog = Catalog([tmp_path])
    first = catalog.row(run)
    assert (first["games_finished"], first["games_planned"], first["state"]) == (2, 3, "stopped")
    assert catalog.row(run) is first  # nothing changed: the same row, nothing read
    experiment(tmp_path, games=3)  # the run goes on: its third game
    again = catalog.row(run)
    assert again is not first and (again["games_finished"], again["state"]) == (3, "done")


def test_only_the_games_finished_since_are_read(tmp_path, monkeypatch):
    run = experiment(tmp_path, games=3, max_games=2)
    catalog = Catalog([tmp_path])
    catalog.row(run)
    read = []
    import avalon_agents.view.catalog as catalog_module

    real = catalog_module._health
    monkeypatch.setattr(catalog_module, "_health", lambda game: read.append(game.name) or real(game))
    experiment(tmp_path, games=3)
    catalog.row(run)
    assert read == ["main/series-1/game-00003"]


def test_a_run_still_playing_and_one_whose_process_is_gone(tmp_path):
    run = experiment(tmp_path, games=2)
    progress = read_progress(run)
    shutil.rmtree(sorted(run.rglob("game-00002"))[0])  # as if its second game were playing
    game = sorted(run.rglob("game-00001"))[0]
    playing = game.parent / "game-00002"
    shutil.copytree(game, playing)
    (playing / RESULT).unlink()
    (run / PROGRESS).write_text(json.dumps({**progress, "state": "playing", "finished": 1, "pid": os.getpid()}))
    row = Catalog([tmp_path]).row(run)
    assert (row["state"], row["games_finished"], row["games_planned"]) == ("playing", 1, 2)
    (run / PROGRESS).write_text(json.dumps({**progress, "state": "playing", "finished": 1, "pid": 2**22 + 12345}))
    assert Catalog([tmp_path]).row(run)["state"] == "stopped"  # killed: no process plays it any more
    page = View([tmp_path]).game_data("exp", playing.relative_to(run).as_posix())
    assert page["result"]["winner"] is None and page["result"]["reason"] == "playing"
    assert len(page["result"]["roles"]) == 6


def test_run_ids_with_several_folders(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    experiment(a, name="x"), experiment(b, name="x")
    assert [r["id"] for r in Catalog([a, b]).index()] == ["a/x", "b/x"]
    assert [r["id"] for r in Catalog([a / "x"]).index()] == ["x"]


def test_a_served_table_is_named_so(tmp_path):
    run = experiment(tmp_path, name="src", games=1)
    table = tmp_path / "table"
    game = table / "game-00001"
    shutil.copytree(sorted(run.rglob("game-00001"))[0], game)
    meta = json.loads((game / META).read_text())
    meta["seats"] = {**meta["seats"], "1": "human"}
    (game / META).write_text(json.dumps(meta))
    row = Catalog([tmp_path]).row(table)
    assert (row["kind"], row["games_finished"], row["models"]) == ("served table", 1, ["human", "random", "rulebot"])


@pytest.mark.slow  # analyze with the judges, then the page
def test_a_game_page_holds_the_judges_labels_after_each_speech(tmp_path):
    """`avalon analyze --judge-model` wrote judged tables: the game's replay shows each label after its speech."""
    from tests.helpers import avalon
    from tests.view.runs import ROOT

    shutil.copytree(ROOT / "tests/data/replay/run", tmp_path / "llm")
    assert avalon("analyze", str(tmp_path / "llm"), "--judge-model", "scripted").returncode == 0
    view = View([tmp_path])
    game = view.run("llm")["games"][0]["game"]
    items = view.game_data("llm", game)["items"]
    judged = [i for i, item in enumerate(items) if item["type"] == "judged"]
    assert judged and {items[i]["judge"] for i in judged} >= {"camouflage", "self_recommendation"}
    for i in judged:  # right after its speech (or another label of it)
        j = i - 1
        while items[j]["type"] == "judged":
            j -= 1
        assert items[j]["type"] == "speech" and items[j]["seq"] == items[i]["seq"]
        assert items[i]["visible_to"] == [] and items[i]["answer"].startswith("{")


@pytest.mark.slow  # a thread counts the metrics
def test_a_big_run_s_first_page_answers_at_once_and_fills_in(tmp_path, monkeypatch):
    """Over FIRST_IN_THREAD finished games, the first page holds the run's row and games at once, no metrics yet
    (`computing`), and the metrics once a thread counted them; asking for the analysis itself waits for it."""
    import avalon_agents.view.run_data as run_data

    experiment(tmp_path, name="big", games=2)
    monkeypatch.setattr(run_data, "FIRST_IN_THREAD", 1)
    view = View([tmp_path])
    first = view.run("big")
    assert first["computing"] is True and first["metrics"] == {} and len(first["games"]) == 2
    assert first["run"]["games_finished"] == 2 and "counting the metrics of 2 games" in first["provenance"]
    settled(view.runs)
    done = view.run("big")
    assert done["computing"] is False and done["metrics_of"] == 2 and done["metrics"]["win_rate"]
    assert View([tmp_path]).runs.analysis(View([tmp_path]).run_path("big")) is not None


def test_a_run_removed_while_viewed_is_unknown(tmp_path):
    run = experiment(tmp_path, games=1)
    view = View([tmp_path])
    assert view.run("exp")["run"]["games_finished"] == 1
    shutil.rmtree(run)
    with pytest.raises(UnknownRun, match="no run 'exp'"):
        view.run("exp")
