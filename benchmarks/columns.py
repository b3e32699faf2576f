"""Big runs read in seconds: a run's tables from its columnar copy (records/columns.py), two big runs compared in
`avalon view`, and a run of 100,000 rule-bot games analyzed, timed on generated runs.

Generates, once, into OUT (resumable: what exists is skipped), with view_scale.py's code: OUT/template, `--template`
rule-bot games (rule bots on good, random agents on evil, 6 players, official rules) played by `avalon run`'s code,
copied whole into OUT/big/run-a and OUT/big/run-b (`--big` games each, default 10,000; run-b starts at another
template game) and, with `--huge N`, into OUT/huge/run-huge (N games; 100,000 take 3.8 GB).

Then times, each in a new process (nothing cached in memory; the files in the system's cache as after a run):

- `load_run` of run-a without its columnar copy (the games' files read, the copy written): once, only when the copy
  is not there (`--rebuild` removes it first), as the run's own summary does when it ends;
- `load_run` of run-a with the copy there (every later read): `--repeats` times;
- `avalon view`'s comparison of run-a and run-b from a new View (view.pages.View(OUT/big).compare): both runs
  loaded and their metrics counted (in two threads at once, as the Compare page does; their run pages' figures are
  not drawn), then the comparison (the per-game sums of every rate metric and their intervals): `--repeats` times;
- with `--huge`: `load_run` of the huge run (from the games' files when it has no copy, then from the copy) and
  `avalon analyze`'s computation over its tables (analysis.paper.report.compute), with the process's peak memory.

Each figure is wall and CPU seconds of the timed call (the interpreter's start and imports apart), and the machine's
load average when it started (the machine is shared: CPU seconds are the steadier figure).

Run: PYTHONPATH=$PWD .venv/bin/python benchmarks/columns.py [--out /tmp/avalon-columns] [--big 10000]
     [--template 1000] [--repeats 3] [--huge 100000] [--rebuild]
Figures: docs/benchmarks.md, "Big runs".
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import view_scale  # noqa: E402 (benchmarks/ is not a package)

CHILD = """
import json, os, resource, sys, time
started = time.perf_counter()
{imports}
imported = time.perf_counter() - started
load = os.getloadavg()[0]
wall, cpu = time.perf_counter(), time.process_time()
{work}
out = {{"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "imports": imported, "load": load,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **extra}}
print("RESULT " + json.dumps(out))
"""

LOAD = ("from avalon_agents.analysis.load import load_run",
        "data = load_run({run!r})\nextra = {{'rows': sum(len(t) for t in data.tables().values())}}")
COMPARE = ("from avalon_agents.view.pages import View",
           "view = View([{root!r}])\n"
           "view.comparer.sides(['run-a', 'run-b'])  # both runs' metrics, counted in two threads at once\n"
           "analyzed, analyzed_cpu = time.perf_counter() - wall, time.process_time() - cpu\n"
           "page = view.compare(['run-a', 'run-b'])\n"
           "extra = {{'analyses': analyzed, 'analyses_cpu': analyzed_cpu,\n"
           "         'rows': sum(len(m['rows']) for m in page['metrics'].values())}}")
ANALYZE = ("from pathlib import Path\nfrom avalon_agents.analysis.load import load_run\n"
           "from avalon_agents.analysis.paper.report import compute",
           "data = load_run({run!r})\nloaded = time.perf_counter() - wall\n"
           "result = compute(data, Path({run!r}), None)\n"
           "extra = {{'loaded': loaded, 'games': len(data.games), 'tables': len(result.tables)}}")


def child(imports: str, work: str, **names: str) -> dict:
    """Run `work` in a new process; its figures (see CHILD)."""
    code = CHILD.format(imports=imports, work=work.format(**names))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if done.returncode:
        sys.exit(f"the timed process failed:\n{done.stderr[-3000:]}")
    return json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])


def generate(args: argparse.Namespace) -> tuple[Path, Path, Path | None]:
    games = view_scale.template(args.out, args.template)
    start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    big = args.out / "big"
    view_scale.make_run(games, big / "run-a", "big-a", args.big, 0, start)
    view_scale.make_run(games, big / "run-b", "big-b", args.big, len(games) // 2, start)
    huge = None
    if args.huge:
        huge = args.out / "huge" / "run-huge"
        view_scale.make_run(games, huge, "huge", args.huge, 0, start)
    return big / "run-a", big, huge


def has_copy(run: Path) -> bool:
    from avalon_agents.analysis.load import schema
    from avalon_agents.records.columns import parts

    return any(not p.stale for p in parts(run, schema()))


def first_read(run: Path, rebuild: bool, rows: list) -> None:
    """The read from the games' files that writes the copy, when there is none (or `rebuild`)."""
    from avalon_agents.records.columns import folder

    if rebuild:
        shutil.rmtree(folder(run), ignore_errors=True)
    if not has_copy(run):
        rows.append((f"{run.name}: load_run, no copy (files read, copy written)", [child(*LOAD, run=str(run))]))


def measure(args: argparse.Namespace, run: Path, big: Path, huge: Path | None) -> list[tuple[str, list[dict]]]:
    rows: list[tuple[str, list[dict]]] = []
    first_read(run, args.rebuild, rows)
    first_read(big / "run-b", args.rebuild, rows)
    rows.append((f"{run.name}: load_run, the copy there", [child(*LOAD, run=str(run)) for _ in range(args.repeats)]))
    compared = [child(*COMPARE, root=str(big)) for _ in range(args.repeats)]
    rows.append(("compare run-a and run-b, a new View", compared))
    rows.append(("  ... of which both runs loaded and analyzed", [{**c, "wall": c["analyses"],
                                                                   "cpu": c["analyses_cpu"]} for c in compared]))
    if huge is not None:
        first_read(huge, args.rebuild, rows)
        rows.append((f"{huge.name}: load_run, the copy there", [child(*LOAD, run=str(huge))]))
        rows.append((f"{huge.name}: load_run and report.compute", [child(*ANALYZE, run=str(huge))]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/avalon-columns"), help="where the runs are made")
    parser.add_argument("--big", type=int, default=10_000, help="games of each of the two big runs")
    parser.add_argument("--template", type=int, default=1000, help="rule-bot games played, copied into the runs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--huge", type=int, default=0, help="games of the huge run (0: none)")
    parser.add_argument("--rebuild", action="store_true", help="remove the runs' columnar copies first")
    args = parser.parse_args()
    if args.out.resolve().is_relative_to(Path(__file__).resolve().parents[1]):
        sys.exit("--out: generated runs are not kept inside the repository (give a folder under /tmp)")
    run, big, huge = generate(args)
    rows = measure(args, run, big, huge)
    width = max(len(name) for name, _ in rows)
    print(f"\n{'measurement':<{width}}  wall s (median, min-max)   CPU s   peak MB  load  rows")
    for name, found in rows:
        walls = [f["wall"] for f in found]
        cpus = [f["cpu"] for f in found if f["cpu"] is not None]
        cpu = f"{statistics.median(cpus):7.2f}" if cpus else "       "
        print(f"{name:<{width}}  {statistics.median(walls):7.2f} ({min(walls):6.2f}-{max(walls):6.2f})      {cpu}"
              f"  {max(f['peak_mb'] for f in found):8.0f}  {found[0]['load']:4.1f}  {found[0].get('rows', '')}")


if __name__ == "__main__":
    main()
