"""The chromadb experience store: latest-per-role, similarity queries, a fresh process reading what another
wrote, and two consecutive games where the second starts from what the first learned."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from avalon_agents.core import make_rules
from avalon_agents.core.types import Role
from avalon_agents.host.batch import batch, play_batch
from avalon_agents.modules import Experience
from avalon_agents.stores.book import name_roles
from avalon_agents.stores.experience import ExperienceStore
from tests.helpers import scripted_setup

WRITE = """
import sys
from avalon_agents.core.types import Role
from avalon_agents.modules import Experience
from avalon_agents.stores.book import name_roles
from avalon_agents.stores.experience import ExperienceStore
store = ExperienceStore(sys.argv[1], game=3)
store.put(Role.MORGANA, Experience(strategy="Claim Merlin early.", other_roles="Percival trusts the loudest."))
"""
READ = """
import sys
from avalon_agents.core.types import Role
from avalon_agents.stores.book import name_roles
from avalon_agents.stores.experience import ExperienceStore
store = ExperienceStore(sys.argv[1])
print(store.get(Role.MORGANA).strategy)
print(store.query("who does Percival trust?", n=1)[0][0])
"""


def test_latest_per_role_and_similarity():
    store = ExperienceStore()
    store.game = 1
    store.put(Role.MERLIN, Experience(strategy="Hint softly.", suggestions="1. Vote quietly."))
    store.game = 2
    store.put(Role.MERLIN, Experience(strategy="Hint through votes only.", suggestions="1. Vote quietly."))
    store.put(Role.ASSASSIN, Experience(strategy="Watch who avoids evil players on teams."))
    assert store.get(Role.MERLIN).strategy == "Hint through votes only."
    assert store.get(Role.PERCIVAL) == Experience()
    assert store.collection.count() == 5  # each game's learning is kept, an unchanged suggestion included
    text, meta, distance = store.query("the assassin looks for Merlin by who avoids evil", n=1)[0]
    assert meta["role"] == "Assassin" and meta["kind"] == "strategy" and distance < 0.7
    only_merlin = store.query("strategy", n=5, role="Merlin", kind="strategy")
    assert {m["role"] for _, m, _ in only_merlin} == {"Merlin"} and len(only_merlin) == 2


@pytest.mark.slow
def test_store_round_trips_through_a_fresh_process(tmp_path):
    subprocess.run([sys.executable, "-c", WRITE, str(tmp_path)], check=True, timeout=120)
    out = subprocess.run([sys.executable, "-c", READ, str(tmp_path)], check=True, timeout=120,
                         capture_output=True, text=True)
    assert out.stdout.splitlines() == ["Claim Merlin early.", "Percival trusts the loudest."]


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_two_consecutive_games_carry_the_improved_strategy(tmp_path):
    store = ExperienceStore(tmp_path / "store")
    setup = scripted_setup(experience=store)
    hosts = []
    asyncio.run(play_batch(batch(make_rules(), ["cognitive"] * 6, seed=7, games=2, setup=setup),
                           on_game=hosts.append))
    first, second = hosts
    metas = store.collection.get(include=["metadatas"])["metadatas"]
    assert {m["game"] for m in metas} == {1, 2} and {m["kind"] for m in metas} >= {"strategy", "reflection"}
    for seat, role in second.result.roles.items():
        if role not in first.result.roles.values():
            continue
        learned = [name_roles(r.text["strategy"], first.result.roles) for r in first.records
                   if r.type == "module" and r.slot == "experience"
                   and first.result.roles[r.seat] is role]  # stored with seats named by role
        system = next(r for r in second.records if r.type == "llm_call" and r.seat == seat)
        assert any(f"Strategy: {text}" in system.messages[0].content for text in learned), role
