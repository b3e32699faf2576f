"""A study's result, as its run folder declares it: OUT/study_result.json names the tables the study's report wrote
(`Study.result`: a tournament's leaderboard, a red team's attack table, a bias study's paired table), each a CSV
under OUT, and `avalon view` reads them here (`study_tables`) to show them on the run's page and in its JSON.

    study_result.json  {"layout": 1, "tables": [{"title": "Leaderboard", "file": "tournament/leaderboard.csv"}, ...]}

A run written before study_result.json was kept shows no result table (its CLI report and files are unchanged).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from avalon_agents.records.run_dir import write_json_atomic

RESULT_TABLES = "study_result.json"
"""The declaration of a study's result tables, in its run folder."""
MAX_ROWS = 500
"""The most rows of one result table a page holds (the CSV holds them all)."""


def write_result_tables(out: Path, tables: dict[str, str]) -> Path | None:
    """OUT/study_result.json declaring `tables` ({title: CSV path relative to OUT}); None (nothing written) if the
    study declares none."""
    if not tables:
        return None
    path = Path(out) / RESULT_TABLES
    write_json_atomic(path, {"layout": 1, "tables": [{"title": t, "file": f} for t, f in tables.items()]})
    return path


def declared_tables(run: Path) -> list[tuple[str, Path]]:
    """The result tables the run declares, as (title, path), in their order; [] when it declares none or its
    study_result.json cannot be read. A file named outside the run folder (an absolute path, `..`) is left out."""
    try:
        found = json.loads((Path(run) / RESULT_TABLES).read_text())
        tables = found["tables"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    out = []
    for table in tables if isinstance(tables, list) else []:
        if not isinstance(table, dict) or not isinstance(table.get("file"), str):
            continue
        rel = Path(table["file"])
        if rel.is_absolute() or ".." in rel.parts:
            continue
        out.append((str(table.get("title") or rel.stem), Path(run) / rel))
    return out


def result_files(run: Path) -> Iterator[Path]:
    """Every file `study_tables` would read: the declaration, then (read only when asked for, so a caller may
    refuse the declaration first) each table it declares."""
    yield Path(run) / RESULT_TABLES
    yield from (path for _, path in declared_tables(run))


def _cell(text: str) -> Any:
    """A CSV cell as its value: a whole number, a number, None (empty) or the text."""
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else None


def study_tables(run: Path, max_rows: int = MAX_ROWS) -> list[dict[str, Any]]:
    """The run's result tables (see the module's docstring) that exist: each {title, file (relative to the run),
    columns, rows (at most `max_rows`, numbers as numbers), total (its rows)}."""
    found = []
    for title, path in declared_tables(run):
        try:
            with path.open(newline="") as f:
                reader = csv.DictReader(f)
                rows = [{k: _cell(v or "") for k, v in row.items()} for row in reader]
                columns = list(reader.fieldnames or [])
        except OSError:
            continue
        found.append({"title": title, "file": path.relative_to(run).as_posix(), "columns": columns,
                      "rows": rows[:max_rows], "total": len(rows)})
    return found
