"""The recipe "a new benchmark": a script in benchmarks/ that says in its docstring what it measures and how to
run it, and whose figures a doc records (docs/benchmarks.md, or the doc of what it measures) by naming it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_every_benchmark_says_how_to_run_it_and_a_doc_names_it():
    docs = "\n".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        doc = ast.get_docstring(ast.parse(script.read_text())) or ""
        assert "benchmarks/" + script.name in doc or "python" in doc, f"{script.name}: no command in its docstring"
        assert f"benchmarks/{script.name}" in docs, f"{script.name}: no doc records its figures"
