"""The files of `avalon calibrate`: <out>/summary.csv, per_class.csv, confusion.csv, judgments.csv and
report.md (provenance, the summary, each judge's confusion matrix and per-class precision and recall); and the
table the command prints."""

from __future__ import annotations

import datetime
import math
from pathlib import Path

import pandas as pd

from avalon_agents import __version__
from avalon_agents.analysis.humans.calibrate import Calibration, confusion_table, per_class_table, summary
from avalon_agents.analysis.plots import canned


def _num(value: float, digits: int = 2) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _ci(low: float, high: float) -> str:
    return f"[{_num(low)}, {_num(high)}]"


def sample_text(found: Calibration) -> str:
    """The sample in words: all the messages, or N of them with the seed."""
    if found.sample is None:
        return f"all {found.messages} labelled messages"
    return (f"{found.sample} of {found.messages} labelled messages, stratified by (persuasion, deception) label, "
            f"seed {found.seed}")


def provenance(found: Calibration) -> str:
    """What produced these figures: judge model, run, sample."""
    judge = found.judge_spec + (" (canned labels, not a real judgment: the chance floor)"
                                if canned(found.judge_spec) else "")
    games = found.rows["game"].nunique()
    return f"judge model {judge}; run {found.run}; {sample_text(found)}; {games} game(s)"


def text_table(found: Calibration) -> str:
    """The summary as a plain table: one line per judge."""
    lines = [f"{'judge':<12}{'n':>6}{'invalid':>9}{'kappa':>8}  {'95% CI':<16}{'accuracy':>9}  {'95% CI':<16}"]
    for r in summary(found).itertuples(index=False):
        lines.append(f"{r.judge:<12}{r.n:>6}{r.invalid:>9}{_num(r.kappa):>8}  {_ci(r.kappa_low, r.kappa_high):<16}"
                     f"{_num(r.accuracy):>9}  {_ci(r.accuracy_low, r.accuracy_high):<16}")
    return "\n".join(lines)


def _markdown(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(_num(v) if isinstance(v, float) else str(v) for v in row) + " |"
            for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def report(found: Calibration) -> str:
    """report.md: provenance, the summary, then per judge its confusion matrix and per-class table."""
    table = summary(found)
    shown = pd.DataFrame({
        "judge": table["judge"], "compared with": table["against"], "n": table["n"], "invalid": table["invalid"],
        "games": table["games"], "kappa": [_num(v) for v in table["kappa"]],
        "kappa 95% CI": [_ci(a, b) for a, b in zip(table["kappa_low"], table["kappa_high"])],
        "accuracy": [_num(v) for v in table["accuracy"]],
        "accuracy 95% CI": [_ci(a, b) for a, b in zip(table["accuracy_low"], table["accuracy_high"])]})
    parts = ["# Judges against human labels", "",
             f"_{provenance(found)}; avalon_agents {__version__}; "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC._", "",
             "Cohen's kappa: 0 is chance agreement, 1 perfect; the 95% intervals resample whole games. Invalid "
             "answers (unreadable) are left out of the figures. See docs/humans.md, \"Judges against human "
             "labels\".", "", _markdown(shown)]
    classes = per_class_table(found)
    for judge, a in found.agreements.items():
        matrix = a.confusion.reset_index().rename(columns={"human": "human \\ judge"})
        mine = classes[classes["judge"] == judge].drop(columns="judge")
        parts += ["", f"## {judge}", "", f"Compared with: {table.set_index('judge').loc[judge, 'against']}.", "",
                  "Confusion matrix (rows: the humans' label, columns: the judge's):", "", _markdown(matrix), "",
                  _markdown(mine)]
    return "\n".join(parts) + "\n"


def write_calibration(found: Calibration, out: Path) -> list[Path]:
    """Write the CSV files and report.md under `out`; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"summary.csv": summary(found), "per_class.csv": per_class_table(found),
             "confusion.csv": confusion_table(found), "judgments.csv": found.rows}
    written = []
    for name, frame in files.items():
        frame.to_csv(out / name, index=False)
        written.append(out / name)
    (out / "report.md").write_text(report(found), encoding="utf-8")
    return [*written, out / "report.md"]
