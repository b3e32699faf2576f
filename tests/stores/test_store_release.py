"""A long run's memory stays flat: an experience store its owner drops releases its chromadb system (chromadb keeps
every open client's system, index and database caches in a class-level registry), so a run's series do not pile
up in the playing process (benchmarks/memory.py measures the whole run)."""

from __future__ import annotations

import asyncio

import pytest
import yaml
from chromadb.api.shared_system_client import SharedSystemClient

from avalon_agents.experiments import load_experiments, run_experiment
from avalon_agents.stores.experience import ExperienceStore


def open_systems(under) -> list[str]:
    return [key for key in SharedSystemClient._identifier_to_system if key.startswith(str(under))]


def test_a_dropped_store_releases_its_system(tmp_path):
    store = ExperienceStore(tmp_path / "store", run=1)
    pool = ExperienceStore(tmp_path / "store", collection="baseline_pool", run=1)  # the same folder: one system
    assert open_systems(tmp_path) == [str(tmp_path / "store")]
    del store
    assert open_systems(tmp_path) == [str(tmp_path / "store")]  # the pool still uses it
    assert pool.collection.count() == 0
    del pool  # no gc.collect(): the last owner's reference going is enough
    assert open_systems(tmp_path) == []
    kept = ExperienceStore(tmp_path / "store").collection  # a caller keeping the collection keeps it usable
    assert kept.count() == 0 and open_systems(tmp_path) == [str(tmp_path / "store")]
    del kept
    assert open_systems(tmp_path) == []
    again = ExperienceStore(tmp_path / "store")
    again.close()
    again.close()  # twice: nothing more happens
    assert open_systems(tmp_path) == []


@pytest.mark.slow  # seconds of end-to-end play
def test_a_run_keeps_no_series_store_open_after_it(tmp_path):
    config = {"name": "release", "rules": "official", "players": 5, "model": "scripted",
              "agents": {"ours": {"kind": "cognitive"}, "theirs": {"kind": "baseline"}},
              "sides": {"good": "ours", "evil": "theirs"}, "series": 3, "games_per_series": 1, "seed": 0}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    seen: list[int] = []
    asyncio.run(run_experiment(load_experiments(tmp_path / "c.yaml"), tmp_path / "run",
                               on_game=lambda lane, n, path: seen.append(len(open_systems(tmp_path / "run")))))
    assert seen == [2, 2, 2]  # the series playing: its two agents' stores; none of an earlier series
    assert open_systems(tmp_path / "run") == []
