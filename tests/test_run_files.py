"""A run's files are read only in avalon_agents/records/ (records.reader, records.run_dir, records.run_record,
records.analysis_dir): no other module opens, reads or parses a file of a run by its name (meta.json, result.json,
health.json, ... or the constants records.run_dir names them by), nor joins a run file's name onto a path itself.
Like tests/test_layers.py, the rule is checked on the package's source."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "avalon_agents"
RUN_FILES = {"meta.json", "result.json", "health.json", "seating.json", "events.jsonl", "trace.jsonl", "aborted.json",
             "judge.jsonl", "run.json", "experiment.json", "study.json", "progress.json", "import.json",
             "analysis.json", "metrics.json"}
CONSTANTS = {"META", "RESULT", "HEALTH", "SEATING", "EVENTS", "TRACE", "ABORTED", "JUDGE_TRACE", "RUN", "EXPERIMENT",
             "STUDY", "PROGRESS", "IMPORT_REPORT", "ATTEMPT", "MANIFEST", "METRICS_JSON"}
"""records.run_dir's (and run_record's, analysis_dir's) names of a run's files."""
READS = {"read_text", "read_bytes", "open", "loads", "load", "validate_json", "model_validate_json", "DictReader",
         "reader", "glob", "rglob"}
OWNER = ("records",)
KNOWN: dict[str, str] = {}
"""Modules that still read a run's file themselves, each with why; the test fails when one is fixed and still
listed, so the list only shrinks (empty since every reader moved into records)."""


def _names(node: ast.AST, tainted: set[str]) -> str | None:
    """The run file `node` names (a file name, a records constant, a name bound to one), or None."""
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in RUN_FILES:
            return n.value
        if isinstance(n, ast.Name) and (n.id in CONSTANTS or n.id in tainted):
            return n.id
        if isinstance(n, ast.Attribute) and n.attr in CONSTANTS:
            return n.attr
    return None


def offences(source: str) -> list[str]:
    """Each place in `source` that reads a run's file by its name, or joins one's name onto a path."""
    tree = ast.parse(source)
    found = []
    for scope in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module))]:
        tainted: set[str] = set()
        if not isinstance(scope, ast.Module):
            args = scope.args
            for arg, default in zip(args.args[len(args.args) - len(args.defaults):], args.defaults):
                if _names(default, tainted):
                    tainted.add(arg.arg)
        for node in ast.walk(scope):
            bound = {ast.Assign: lambda n: (n.value, n.targets), ast.AnnAssign: lambda n: (n.value, [n.target]),
                     ast.For: lambda n: (n.iter, [n.target]),
                     ast.withitem: lambda n: (n.context_expr, [n.optional_vars])}.get(type(node))
            if bound is not None:
                value, targets = bound(node)
                if value is not None and _names(value, tainted):
                    tainted |= {t.id for t in targets if isinstance(t, ast.Name)}
        for node in ast.walk(scope):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) \
                    and node.right.value in RUN_FILES:
                found.append(f"{node.lineno}: joins {node.right.value!r} onto a path")
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name not in READS:
                continue
            for part in [*node.args, *([func.value] if isinstance(func, ast.Attribute) else [])]:
                if (what := _names(part, tainted)) is not None:
                    found.append(f"{node.lineno}: {name} of {what}")
                    break
    return sorted(set(found))


def test_no_module_outside_records_reads_a_run_file():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in OWNER:
            continue
        if mine := offences(path.read_text()):
            found[rel.as_posix()] = mine
    assert sorted(set(found) - set(KNOWN)) == [], {k: v for k, v in found.items() if k not in KNOWN}
    assert sorted(set(KNOWN) - set(found)) == [], "fixed: take these off KNOWN"


def test_the_check_sees_each_way_of_reading_a_run_file():
    cases = {
        'json.loads((run / "meta.json").read_text())': 1,
        "json.loads((game / RESULT).read_text())": 1,
        "with open(game / TRACE) as f:\n    pass": 1,
        "def f(out, file=EXPERIMENT):\n    path = out / file\n    return json.loads(path.read_text())": 1,
        "def f(run):\n    file = run / run_dir.HEALTH\n    return file.read_bytes()": 1,
        'x = (run / game / "meta.json").is_file()': 1,
        'json.loads(Path(path).read_text())': 0,  # a dataset's log, not a run's file
        "open_run(run).game(name).meta()": 0,
    }
    assert {code: min(1, len(offences(code))) for code in cases} == cases
