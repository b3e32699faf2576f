"""avalon view marks a run whose speeches are not data (issue 41): its row and its run page, over real HTTP, carry
the health problem the health line says, and a run whose speeches are the seats' own has none."""

from __future__ import annotations

import asyncio
import json

import pytest

from avalon_agents.records.health import Health
from avalon_agents.records.run_dir import HEALTH, write_json_atomic
from avalon_agents.view.pages import View
from tests.view.runs import experiment
from tests.view.test_server import get, served

NOT_DATA = ("speeches are not data: 14 of 24 are not their own (placeholders, empty or copies), over 50%; what is "
            "judged from them measures the speech guard, not the model")


async def _problems(view: View) -> tuple[list[str], list[str]]:
    """(the run's row's health problems, its run page's), as the browser reads them."""
    async with served(view) as client:
        status, _, body = await get(client, "/api/runs")
        assert status == 200
        row = json.loads(body)["runs"][0]
        status, _, body = await get(client, "/api/runs/copies")
        assert status == 200
        return row["health"]["problems"], json.loads(body)["run"]["health"]["problems"]


@pytest.mark.slow  # a run of the command and the viewer twice: 6 s
def test_a_run_whose_speeches_are_copies_is_marked_on_its_row_and_page(tmp_path):
    run = experiment(tmp_path, "copies", games=2)
    assert asyncio.run(_problems(View([tmp_path]))) == ([], [])
    for path in run.rglob(HEALTH):  # each game: 12 speeches, 7 of them copies of their prompt spoken as they came
        health = Health.model_validate_json(path.read_bytes()).model_dump()
        write_json_atomic(path, {**health, "speeches": 12, "echoes": 7, "echo_rate": 0.5833})
    assert asyncio.run(_problems(View([tmp_path]))) == ([NOT_DATA], [NOT_DATA])
