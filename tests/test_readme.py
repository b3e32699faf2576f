"""The README as a user meets it: its scripted commands run, it stays short, and its links lead somewhere.

Every line of a ```bash block that runs `avalon` with the scripted model is run as a user would run it (the
`.venv/bin/avalon` of the line replaced by this interpreter's `-m avalon_agents.cli`), in one scratch folder
shared by the lines in README order (so `avalon analyze runs/smoke` reads what the line before wrote), with
the files the README asks the user to write (its own-module example, its YAML files) written there first.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from avalon_agents.records import analysis_dir as folder
from avalon_agents.records.run_dir import RESULT, TRACE
from tests.helpers import avalon

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_CHARS = 15_000
TIMEOUT = 600


def readme() -> str:
    return README.read_text()


def blocks(language: str, text: str | None = None) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", readme() if text is None else text, re.DOTALL)


def scripted_lines() -> list[str]:
    """Lines of bash blocks that run `avalon` with the scripted model, in README order."""
    return [line.strip() for block in blocks("bash") for line in block.splitlines()
            if "avalon " in line and "scripted" in line and not line.lstrip().startswith("#")]


def user_files() -> dict[str, str]:
    """The files the README asks a user to write: YAML blocks named by their first-line comment, the
    own-module example as my_modules.py, and its `use: failed_teams` selection as my_agent.yaml."""
    files: dict[str, str] = {}
    for block in blocks("yaml"):
        named = re.match(r"#\s*([\w.-]+\.ya?ml)\b", block)
        if named:
            files[named.group(1)] = block
    files["my_modules.py"] = next(b for b in blocks("python") if "register_module" in b)
    files["my_agent.yaml"] = next(b for b in blocks("yaml") if "use: failed_teams" in b)
    return files


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    body = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", body, re.MULTILINE)}


# --------------------------------------------------------------------------- running the commands

LINES = scripted_lines()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("readme")
    for name, content in user_files().items():
        (folder / name).write_text(content)
    return folder


def command(line: str, workdir: Path) -> tuple[list[str], dict[str, str]]:
    """The argv a user's shell would run (interpreter instead of .venv/bin/avalon), and its out paths."""
    args = shlex.split(line, comments=True)
    while args and re.match(r"^[A-Z_][A-Z0-9_]*=", args[0]):  # VAR=value prefixes
        args.pop(0)
    assert args and args[0].endswith("avalon"), f"not an avalon command: {line}"
    args = args[1:]
    outs = {}
    for i, arg in enumerate(args):
        if i and args[i - 1] == "--out" and Path(arg).is_absolute():
            args[i] = str(workdir / Path(arg).name)  # the user's /tmp/... lands in the scratch folder
        elif not Path(arg).is_absolute() and not (workdir / arg).exists() and (ROOT / arg).exists():
            args[i] = str(ROOT / arg)  # shipped files (experiments/...) as seen from a checkout
        if i and args[i - 1] == "--out":
            outs["out"] = args[i]
    return [sys.executable, "-m", "avalon_agents.cli", *args], outs


def written(folder: Path, name: str) -> list[Path]:
    return list(folder.rglob(name)) if folder.is_dir() else []


def costly(line: str) -> bool:
    """Whole experiments, analyses, studies of paired games and baseline seats (MiniLM embeddings) take seconds
    each: `-m slow`."""
    line = f" {line} "
    return ("baseline" in line or " run " in line and "--check" not in line
            or any(f" {sub} " in line for sub in ("analyze", "redteam", "bias")))


@pytest.mark.parametrize("line", [pytest.param(line, marks=pytest.mark.slow) if costly(line) else line
                                  for line in LINES],
                         ids=[re.sub(r"\s+", " ", line)[:90] for line in LINES])
@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_readme_scripted_command_runs(line, workdir, monkeypatch):
    """Run in this process through the console script's own entry point (the process start is what
    tests/cli/test_cli.py checks), in the scratch folder, without API keys."""
    argv, outs = command(line, workdir)
    monkeypatch.chdir(workdir)
    for key in [k for k in os.environ if k.endswith("API_KEY")]:
        monkeypatch.delenv(key)
    done = avalon(*argv[3:])
    assert done.returncode == 0, f"{line}\nexit {done.returncode}\nstdout:\n{done.stdout[-2000:]}\n" \
                                 f"stderr:\n{done.stderr[-2000:]}"
    out = done.stdout.strip()
    assert out, f"{line}: printed nothing"
    args = argv[3:]
    sub = args[0]
    if "--json" in args:
        summary = json.loads(out)
        assert isinstance(summary, dict) and summary, out[:500]
        if sub == "play":
            assert summary["games"] == summary["good_wins"] + summary["evil_wins"] > 0
    if sub in ("play", "run") and "--check" not in args:
        target = workdir / outs["out"] if "out" in outs else workdir / "runs"
        if sub == "play" and "out" not in outs:
            return
        results = written(target, RESULT)
        assert results, f"{line}: no finished game under {target}"
        traces = written(target, TRACE)
        assert traces and all(t.stat().st_size > 0 for t in traces), f"{line}: empty trace"
    if sub == "analyze":
        run_dir = workdir / next(a for a in args[1:] if not a.startswith("-"))
        report = (workdir / outs["out"]) if "out" in outs else folder.analysis_dir(run_dir)
        assert folder.report_file(report).is_file() and written(report, "*.csv"), f"{line}: no report"
        assert "win" in out.lower(), out[:500]


def test_readme_has_scripted_commands_to_run():
    assert len(LINES) >= 5, LINES


# --------------------------------------------------------------------------- shape and links


def test_the_readme_test_command_is_the_one_ci_runs():
    """The README's test command is .ci/run's fast suite, option for option, and runs on both cores."""
    prefix = ".venv/bin/python -m pytest "
    [command] = [line for block in blocks("bash") for line in block.splitlines() if line.startswith(prefix)]
    options = command.removeprefix(prefix)
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(rf"^run_pytest {re.escape(options)} \|\| fast=\$\?$", ci, re.MULTILINE), options
    assert "-n 2" in options


def test_readme_is_short():
    size = len(readme())
    assert size <= MAX_CHARS, f"README.md has {size} characters (at most {MAX_CHARS})"


def test_readme_table_of_contents_points_at_its_headings():
    text = readme()
    toc = re.search(r"^## Contents\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
    assert toc, "README.md has no '## Contents' section"
    links = re.findall(r"\[[^\]]+\]\(#([^)]+)\)", toc.group(1))
    assert links, "the table of contents has no links"
    headings = anchors(text)
    missing = [link for link in links if link not in headings]
    assert not missing, f"table of contents links to no heading: {missing}"
    body = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    sections = [slug(h) for h in re.findall(r"^## (.+)$", body, re.MULTILINE) if h.strip() != "Contents"]
    assert [s for s in sections if s not in links] == [], "sections missing from the table of contents"


def test_readme_docs_links_exist():
    links = re.findall(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)", readme())
    assert links, "README.md links to nothing under docs/"
    for path, anchor in links:
        target = ROOT / path
        assert target.is_file(), f"README.md links to {path}, which does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in anchors(target.read_text()), f"README.md links to {path}#{anchor}: no such heading"


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_the_python_experiment_example_runs_as_written_and_in_a_running_loop(tmp_path, monkeypatch):
    """The README's Python example, run as a script would (a plain process), and its `await` form as a
    notebook cell would (inside a running event loop)."""
    import asyncio
    import shutil

    [example] = [b for b in blocks("python") if "run_experiment_sync" in b]
    shutil.copytree(ROOT / "experiments", tmp_path / "experiments")
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {})
    assert list((tmp_path / "runs" / "py").glob("*/series-*/game-*/result.json"))

    async def cell() -> None:  # Jupyter's form of the same call
        from avalon_agents.experiments import run_experiment

        await run_experiment("experiments/quickstart.yaml", "runs/py-await", model="scripted")

    asyncio.run(cell())
    assert list((tmp_path / "runs" / "py-await").glob("*/series-*/game-*/result.json"))
