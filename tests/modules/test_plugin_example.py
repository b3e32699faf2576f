"""The README's own-module example used from the command line: written to files exactly as the README shows
them, loaded with --plugin, selected with --agent-config, and seen at work in the game's trace."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from avalon_agents.records.run_dir import TRACE

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.DOTALL)


@pytest.mark.slow  # seconds: the fast suite stays under its 2 minutes
def test_readme_module_runs_as_a_plugin(tmp_path):
    module = next(b for b in blocks("python") if "register_module" in b and "failed_teams" in b)
    selection = next(b for b in blocks("yaml") if "use: failed_teams" in b)
    (tmp_path / "my_modules.py").write_text(module)
    (tmp_path / "my_agent.yaml").write_text(selection)

    env = {k: v for k, v in os.environ.items() if not k.endswith("API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "avalon_agents.cli", "play", "--seats", "cognitive", "--model", "scripted",
         "--plugin", str(tmp_path / "my_modules.py"), "--agent-config", str(tmp_path / "my_agent.yaml"),
         "--out", str(tmp_path / "run")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"

    traces = sorted((tmp_path / "run").rglob(TRACE))
    assert traces, "the game wrote no trace.jsonl"
    records = [json.loads(line) for line in traces[0].read_text().splitlines() if line.strip()]
    modules = [r for r in records if r.get("type") == "module"]
    ours = [r for r in modules if r.get("module") == "failed_teams"]
    assert ours, f"no module record of failed_teams (module records: {sorted({r.get('module') for r in modules})})"
    assert all(r["text"].startswith("Most often on failed quests: ") for r in ours)
    assert all(r.get("slot") == "analysis" for r in ours)
