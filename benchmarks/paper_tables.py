"""Run the paper's tables end to end as shipped and record each run's health and wall time.

For each of Tables 2, 6, 7 and 8 (`experiments/paper/table*.yaml`): every variant with `--model scripted`, and
the first variant's first game on the embedded model (`--model local:smollm2 --max-games 1`). Each run is
`avalon run` itself (a subprocess, resumable: rerunning this script continues unfinished runs and skips
recorded ones) into runs/paper-tables/<model>/<table>; a finished run appends one JSON line to
benchmarks/results/paper_tables.jsonl: games, wall time, LLM calls, failed calls, re-asks, fallbacks and the
valid response rate (decisions whose first answer was legal).

Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/paper_tables.py [--models scripted,local:smollm2]
     [--tables 2,6,7,8] [--tag NAME]  (scripted: about 20 minutes for all four; the embedded model: 20-40
     minutes a game). `--tag` records a rerun beside the earlier rows (its own run directory and row).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from avalon_agents.analysis.load import load_run

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "paper_tables.jsonl"


def health(run: Path) -> dict:
    data = load_run(run)
    calls, ex = data.calls, data.extractions
    decisions = len(ex)
    return {
        "games": int(data.games["game"].nunique()) if not data.games.empty else 0,
        "llm_calls": len(calls),
        "failed_calls": int((calls["outcome"] == "failed").sum()) if not calls.empty else 0,
        "decisions": decisions,
        "valid_first": int(ex["valid"].sum()) if decisions else 0,
        "reasked": int((ex["answers"] > 1).sum()) if decisions else 0,
        "fallbacks": int((ex["method"] == "fallback").sum()) if decisions else 0,
        "vrr": round(float(ex["valid"].mean()), 4) if decisions else None,
        "llm_seconds": round(float(calls["latency_s"].sum())) if not calls.empty else 0,
        "speeches": len(data.speech_checks),
        "echoes": int(data.speech_checks["echo"].sum()) if not data.speech_checks.empty else 0,
    }


def markdown() -> str:
    """The recorded runs, one row each (docs/paper.md#runs-of-the-paper-tables)."""
    lines = ["| table | model | date | games | wall | LLM calls (failed) | decisions: valid first / re-asked / "
             "fell back | valid response rate |", "|---|---|---|---|---|---|---|---|"]
    for r in map(json.loads, RESULTS.read_text().splitlines()):
        wall = r["wall_s_this_session"]
        tag = f" ({r['tag']})" if r.get("tag") else ""
        lines.append(f"| {r['table']} | `{r['model']}`{tag} | {r['date']} | {r['games']} | "
                     f"{wall // 60:.0f} min {wall % 60:.0f} s | {r['llm_calls']:,} ({r['failed_calls']}) | "
                     f"{r['valid_first']:,} / {r['reasked']:,} / {r['fallbacks']:,} of {r['decisions']:,} | "
                     f"{r['vrr']:.1%} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="scripted,local:smollm2")
    parser.add_argument("--tables", default="2,6,7,8")
    parser.add_argument("--markdown", action="store_true", help="print the recorded runs as a Markdown table")
    parser.add_argument("--tag", default="", help="record a rerun under this name, beside the earlier rows")
    args = parser.parse_args()
    if args.markdown:
        print(markdown())
        return
    done = set()
    if RESULTS.exists():
        done = {(r["model"], r["table"], r.get("tag", "")) for r in map(json.loads, RESULTS.read_text().splitlines())}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    for model in args.models.split(","):
        for table in args.tables.split(","):
            if (model, table, args.tag) in done:
                continue
            name = f"table{table}-{args.tag}" if args.tag else f"table{table}"
            out = ROOT / "runs" / "paper-tables" / model.replace(":", "-") / name
            cmd = [sys.executable, "-m", "avalon_agents.cli", "run", f"experiments/paper/table{table}.yaml",
                   "--model", model, "--out", str(out), "--json", "-q"]
            if model != "scripted":
                cmd += ["--max-games", "1"]
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            wall = time.perf_counter() - start
            if proc.returncode not in (0, 3) or not any(out.glob("*/series-*/game-*/result.json")):
                # a failed run, or one whose game was aborted (replayed on the next run): nothing to record yet
                print(f"table {table}, {model}: exit {proc.returncode}, no finished game yet: "
                      f"{proc.stderr.strip()[-300:]}", flush=True)
                continue
            row = {"table": table, "model": model, "tag": args.tag,
                   "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
                   "exit": proc.returncode, "wall_s_this_session": round(wall), **health(out),
                   "provenance": json.loads(proc.stdout)["provenance"]}
            with RESULTS.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
