"""Every recipe of docs/architecture.md ("Where to make each kind of change") names the test that follows it, and
that test exists: a recipe nobody follows drifts from the code without anyone noticing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]


def recipes() -> dict[str, str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text.split("## Where to make each kind of change", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| change ")]
    return {row.split("|")[1].strip(): row for row in rows if not set(row.split("|")[1].strip()) <= {"-"}}


def test_every_recipe_names_an_existing_test():
    unfollowed, missing = [], []
    for change, row in recipes().items():
        cited = re.findall(r"tests/[\w/]+\.py", row)
        if not cited:
            unfollowed.append(change)
        missing += [f"{change}: {path}" for path in cited if not (ROOT / path).exists()]
    assert not missing, f"recipes cite tests that do not exist: {missing}"
    assert not unfollowed, f"recipes that name no test following them: {unfollowed}"
