"""load_run's tables of a recorded run, exactly: tests/data/tables_run holds games that give every table rows (an LLM
game with the Lady of the Lake, belief probes and a program seat's protocol errors; a game of an experiment, with
seating.json; two secret-vote games, one whose last team was assigned; a layout-1 game without seating.json, without
result.json's `assassin` and under `good_may_fail`; an imported human game with its annotations), and
tables_run.json.gz every table they load into: each column's name and dtype, each cell's value and Python type.

Recorded before analysis/load.py's ladder over event and record types became row builders declared beside each
type. Re-record (`python -m tests.analysis.test_load_tables`) only for a change meant to alter the tables, and say so
in its commit."""

from __future__ import annotations

import gzip
import json
import math
import shutil
import sys
from functools import cache
from pathlib import Path
from typing import Any

from avalon_agents.analysis.load import RunData, load_run
from avalon_agents.records.run_dir import RESULT

DATA = Path(__file__).parent.parent / "data"
RUN = DATA / "tables_run"
EXPECTED = DATA / "tables_run.json.gz"


def cell(value: Any) -> Any:
    """A cell as JSON that keeps its Python type: [type name, value], containers cell by cell."""
    kind = type(value).__name__
    if isinstance(value, (tuple, list)):
        return [kind, [cell(v) for v in value]]
    if isinstance(value, dict):
        return [kind, [[cell(k), cell(v)] for k, v in value.items()]]
    if isinstance(value, float) and math.isnan(value):
        return [kind, "nan"]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # a numpy scalar
        value = value.item()
        return [kind, "nan" if isinstance(value, float) and math.isnan(value) else value]
    return [kind, value]


def encoded(data: RunData, root: Path) -> dict[str, Any]:
    """Every table of `data`, its `path` column relative to `root` (the run's folder)."""
    tables = {}
    for name, frame in data.tables().items():
        if "path" in frame:
            frame = frame.assign(path=[Path(p).relative_to(root).as_posix() for p in frame["path"]])
        tables[name] = {"columns": list(frame.columns), "dtypes": [str(t) for t in frame.dtypes],
                        "rows": [[cell(v) for v in row] for row in frame.itertuples(index=False)]}
    return tables


def differences(got: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """Where two encodings differ: per table, its columns, dtypes, row count and its first differing cell."""
    found = []
    for name in sorted(set(got) | set(expected)):
        mine, theirs = got.get(name), expected.get(name)
        if mine is None or theirs is None:
            found.append(f"{name}: {'missing' if mine is None else 'not expected'}")
            continue
        for part in ("columns", "dtypes"):
            if mine[part] != theirs[part]:
                found.append(f"{name} {part}: {mine[part]} != {theirs[part]}")
        if len(mine["rows"]) != len(theirs["rows"]):
            found.append(f"{name}: {len(mine['rows'])} rows != {len(theirs['rows'])}")
        for i, (a, b) in enumerate(zip(mine["rows"], theirs["rows"])):
            if a != b:
                column = next(j for j, (x, y) in enumerate(zip(a, b)) if x != y) if len(a) == len(b) else None
                label = mine["columns"][column] if column is not None else "(row length)"
                found.append(f"{name} row {i} {label}: {a[column] if column is not None else a} != "
                             f"{b[column] if column is not None else b}")
                break
    return found


@cache  # read once a process (tests compare against it, never change it)
def expected() -> dict[str, Any]:
    return json.loads(gzip.decompress(EXPECTED.read_bytes()))


def test_the_recorded_run_loads_into_the_recorded_tables(tmp_path):
    run = shutil.copytree(RUN, tmp_path / "run")
    assert not differences(encoded(load_run(run), run), expected())


def test_the_cached_load_and_a_load_grown_game_by_game_give_the_same_tables(tmp_path):
    run = shutil.copytree(RUN, tmp_path / "run")
    games = sorted(p.parent for p in run.rglob(RESULT))
    held = {g: (g / RESULT).read_bytes() for g in games[1:]}
    for game in held:
        (game / RESULT).unlink()
    cache: dict = {}
    load_run(run, cache=cache)
    for game, result in held.items():  # each game finishes in turn: its rows added to the cached tables
        (game / RESULT).write_bytes(result)
        grown = load_run(run, cache=cache)
    assert not differences(encoded(grown, run), expected())


def test_every_table_has_rows_in_the_recorded_run():
    empty = [name for name, table in expected().items() if not table["rows"]]
    assert not empty, f"the recorded run gives {empty} no rows: add a game that does to tests/data/tables_run"


def record() -> None:
    """Write tables_run.json.gz from the current code's tables of tests/data/tables_run."""
    text = json.dumps(encoded(load_run(RUN.resolve()), RUN.resolve()), sort_keys=True)
    EXPECTED.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"{EXPECTED}: {len(text):,} characters of tables")


if __name__ == "__main__":
    record() if sys.argv[1:] in ([], ["--record"]) else sys.exit("usage: python -m tests.analysis.test_load_tables")
