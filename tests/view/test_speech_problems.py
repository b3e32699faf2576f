"""avalon view marks a run whose speeches are not data (issue 41): its row's health problems say so, as the health
line does, and a run whose speeches are the seats' own has none."""

from __future__ import annotations

import pytest

from avalon_agents.records.health import Health
from avalon_agents.records.run_dir import HEALTH, write_json_atomic
from avalon_agents.view.catalog import Catalog
from tests.view.runs import experiment


@pytest.mark.slow  # two runs of the command: 5 s
def test_a_run_whose_speeches_are_copies_is_marked_on_its_row(tmp_path):
    run = experiment(tmp_path, "copies", games=2)
    rows = {row["id"]: row for row in Catalog([tmp_path]).index()}
    assert rows["copies"]["health"]["problems"] == []
    for path in run.rglob(HEALTH):  # each game: 12 speeches, 7 of them copies of their prompt spoken as they came
        health = Health.model_validate_json(path.read_bytes()).model_dump()
        write_json_atomic(path, {**health, "speeches": 12, "echoes": 7, "echo_rate": 0.5833})
    problems = {row["id"]: row for row in Catalog([tmp_path]).index()}["copies"]["health"]["problems"]
    assert problems == ["speeches are not data: 14 of 24 are not their own (placeholders, empty or copies), over "
                        "50%; what is judged from them measures the speech guard, not the model"]
