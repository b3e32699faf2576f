"""The analysis folder `avalon analyze` writes (RUN/analysis unless `--out` says otherwise): every file named here,
its manifest, and the readers `avalon view` and `avalon analyze` use. Nothing else spells these names.

    analysis.json                 the manifest (`Manifest`): its layout, what wrote it, when, the games it counted
    metrics/<table>.csv           one file per table (outcome metrics, judged behaviour, probe scores, ...)
    metrics/judged_<judge>.csv    each judge's answers, one row per speech judged
    metrics.json                  the tables, {table: [rows]}
    judgments/judgments.jsonl     the judges' disk cache (analysis.judges.cache), reused by a rerun
    judgments/calls.jsonl         every judge call made, as trace records
    figures/<name>.png
    report.md

**Layouts.** The manifest's `layout` says which layout wrote the folder: `LAYOUT` is this code's. A folder without a
manifest was written before it was kept (layout 0: the same files). A folder of a newer layout is refused in one
line (`AnalysisLayoutError`).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from avalon_agents.records.run_dir import write_json_atomic

FOLDER = "analysis"
"""A run's analysis folder, under the run (`avalon analyze RUN` without `--out`)."""
MANIFEST = "analysis.json"
METRICS = "metrics"
METRICS_JSON = "metrics.json"
JUDGED = "judged_"
"""The prefix of a judge's answers' file under metrics/ (judged_<judge>.csv)."""
JUDGMENTS = "judgments"
JUDGE_CALLS = "calls.jsonl"
FIGURES = "figures"
REPORT = "report.md"

LAYOUT = 1
"""The analysis-folder layout this code writes (the manifest's `layout`); it reads 0 (no manifest) up to it."""


class AnalysisLayoutError(ValueError):
    """An analysis folder of a layout this code does not read (one line)."""


class Manifest(BaseModel):
    """analysis.json: what wrote an analysis folder, when, and what it counted."""

    model_config = ConfigDict(extra="allow")

    layout: int = LAYOUT
    command: str = "avalon analyze"
    version: str | None = None
    """The framework's version that wrote it."""
    written: str
    """When it was written (UTC, ISO 8601, seconds)."""
    run: str
    """The run folder analysed, as given."""
    games: list[str] = []
    """The games counted: each game's folder relative to the run (analysis.load's `game` column), in path order."""
    judge: str | None = None
    """The judge model's spec (None: not judged)."""
    tables: list[str] = []
    """The tables written (metrics/<table>.csv and metrics.json's keys)."""

    @property
    def written_at(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.written)


def analysis_dir(run: Path) -> Path:
    """A run's analysis folder (RUN/analysis)."""
    return Path(run) / FOLDER


def metrics_dir(out: Path) -> Path:
    return Path(out) / METRICS


def metrics_file(out: Path, table: str) -> Path:
    return metrics_dir(out) / f"{table}.csv"


def judged_file(out: Path, judge: str) -> Path:
    return metrics_dir(out) / f"{JUDGED}{judge}.csv"


def metrics_json(out: Path) -> Path:
    return Path(out) / METRICS_JSON


def judgments_dir(out: Path) -> Path:
    """The judges' disk cache and calls (judgments/)."""
    return Path(out) / JUDGMENTS


def judge_calls(out: Path) -> Path:
    """Every judge call `avalon analyze` made (judgments/calls.jsonl)."""
    return judgments_dir(out) / JUDGE_CALLS


def figure_file(out: Path, name: str) -> Path:
    return Path(out) / FIGURES / f"{name}.png"


def report_file(out: Path) -> Path:
    return Path(out) / REPORT


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def write_manifest(out: Path, manifest: Manifest) -> Path:
    """Write the manifest (atomically: a reader sees the old one or the new one), last of the folder's files."""
    path = Path(out) / MANIFEST
    write_json_atomic(path, manifest)
    return path


def write_metrics(out: Path, tables: dict[str, list[dict[str, Any]]]) -> Path:
    """Write metrics.json (atomically: `avalon view` may read it while analyze writes)."""
    path = metrics_json(out)
    write_json_atomic(path, tables)
    return path


def read_manifest(out: Path) -> Manifest | None:
    """The folder's manifest (None: none, as in a folder written before manifests were kept, or none at all).

    Raises:
        AnalysisLayoutError: it is of a layout this code does not read (one line).
        ValueError: it cannot be read (pydantic's error).
    """
    path = Path(out) / MANIFEST
    try:
        text = path.read_text()
    except OSError:
        return None
    manifest = Manifest.model_validate_json(text)
    if manifest.layout > LAYOUT:
        raise AnalysisLayoutError(f"analysis: {out} was written in layout {manifest.layout} (by {manifest.command} "
                                  f"{manifest.version}); this version of avalon_agents reads layouts 0 to {LAYOUT}: "
                                  "run avalon analyze again, or open it with the version that wrote it")
    return manifest


def read_metrics(out: Path) -> dict[str, list[dict[str, Any]]] | None:
    """metrics.json's tables by name (None: not written, or not whole)."""
    try:
        tables = json.loads(metrics_json(out).read_text())
    except (OSError, ValueError):
        return None
    return tables if isinstance(tables, dict) else None


def written_at(out: Path) -> dt.datetime | None:
    """When the folder's analysis was written: its manifest's time, else (a folder without one) metrics.json's
    modification time; None: no analysis there."""
    manifest = read_manifest(out)
    if manifest is not None:
        return manifest.written_at
    try:
        return dt.datetime.fromtimestamp(metrics_json(out).stat().st_mtime, dt.timezone.utc)
    except OSError:
        return None


def judged_files(out: Path) -> dict[str, Path]:
    """Each judge's answers' file (metrics/judged_<judge>.csv) by judge, in name order."""
    folder = metrics_dir(out)
    files = sorted(folder.glob(f"{JUDGED}*.csv")) if folder.is_dir() else []
    return {f.stem.removeprefix(JUDGED): f for f in files}


def read_judged(out: Path) -> dict[str, list[dict[str, str]]]:
    """Each judge's answers as written (metrics/judged_<judge>.csv), by judge: rows of strings, as CSV holds them."""
    found = {}
    for judge, file in judged_files(out).items():
        with file.open(newline="") as f:
            found[judge] = list(csv.DictReader(f))
    return found
