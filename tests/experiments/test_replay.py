"""Exact replay with experience learning: the same command and seeds give byte-identical events.jsonl with the
scripted model, at any concurrency; experience is kept per seat and role, ordered by (run, game, seat), and
names roles, never the seats of the game it came from."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from avalon_agents.core import Role
from avalon_agents.experiments import load_experiments, run_experiment
from avalon_agents.stores.book import Experience, name_roles
from avalon_agents.stores.experience import ExperienceStore

CONFIG = """\
name: replay
model: scripted
agents:
  ours: {{kind: cognitive}}
  theirs: {{kind: {theirs}}}
lineup: {{ours: 3, theirs: 3}}
series: 2
games_per_series: 3
learn_after_last: true
concurrency: {{games: {games}, llm_calls: {calls}}}
"""


def digests(tmp_path: Path, games: int, calls: int, theirs: str) -> dict[str, str]:
    path = tmp_path / f"c{games}-{calls}.yaml"
    path.write_text(CONFIG.format(games=games, calls=calls, theirs=theirs))
    out = tmp_path / f"run-{games}-{calls}"
    asyncio.run(run_experiment(load_experiments(path), out))
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.glob("*/series-*/game-*/events.jsonl"))}


@pytest.mark.slow
@pytest.mark.parametrize("theirs", ["rulebot", "baseline"])
def test_the_same_seeds_give_the_same_games_at_any_concurrency(tmp_path, theirs):
    """Three cognitive seats learn (two Loyal Servants of one agent in some games) against rule bots, or (slow)
    against the baseline, whose experience pool learns too."""
    one = digests(tmp_path, 1, 4, theirs)
    assert len(one) == 6
    assert digests(tmp_path, 2, 64, theirs) == one


def test_two_seats_of_one_role_keep_both_and_the_latest_is_well_defined(tmp_path):
    store = ExperienceStore(tmp_path / "store")
    store.game = 1
    store.put(Role.LOYAL_SERVANT, Experience(strategy="from seat 5"), seat=5)
    store.put(Role.LOYAL_SERVANT, Experience(strategy="from seat 2"), seat=2)
    docs = store.collection.get(where={"kind": "strategy"})["documents"]
    assert sorted(docs) == ["from seat 2", "from seat 5"]  # nobody overwrote anybody
    assert store.get(Role.LOYAL_SERVANT).strategy == "from seat 5"  # by (run, game, seat), not by arrival
    later = ExperienceStore(tmp_path / "store")  # a later run reusing the folder
    later.game = 1  # its own game numbers start again
    later.put(Role.LOYAL_SERVANT, Experience(strategy="the later run's"), seat=1)
    assert later.run == store.run + 1
    assert ExperienceStore(tmp_path / "store").get(Role.LOYAL_SERVANT).strategy == "the later run's"


def test_experience_names_roles_not_the_seats_of_its_game():
    roles = {1: Role.MERLIN, 2: Role.LOYAL_SERVANT, 3: Role.ASSASSIN}
    text = "Player 1 gave himself away; Player 3 guessed well. Trust Player 2, not player 1."
    assert name_roles(text, roles) == ("Merlin gave himself away; the Assassin guessed well. Trust a Loyal "
                                       "Servant, not Merlin.")
