"""Plugins travel with the run (issue 39): a run records the plugins it loaded (run.json: each file's path and
sha256), and what reads or replays the run (`avalon analyze`, `avalon view`, `avalon calibrate`, `avalon replay`, a
`--model replay:RUN_DIR` run) loads them again with no flag, says so in one line, and refuses in one line a plugin
missing or changed since the run (`--no-run-plugins` goes on without). Two plugins never share a name silently.
Each is asserted at the last consumer: the command's output, its exit code, the files and pages it writes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.records.run_record import read_run_record
from tests.helpers import avalon, registries_restored
from tests.recipes.test_recipes import BLUNTNESS, BLUNTNESS_PROMPT, TALKATIVE


def played(tmp_path: Path, plugin: Path, name: str = "run") -> Path:
    """A one-game rule-bot run played with `plugin` loaded, as another process would (the registries put back
    afterwards: the plugin is not loaded here); its run record names the plugin."""
    out = tmp_path / "runs" / name
    with registries_restored():
        done = avalon("play", "--plugin", str(plugin), "--seats", "rulebot", "--games", "1", "--out", str(out))
        assert done.returncode == 0, done.stderr
    assert [p.key for p in read_run_record(out).plugins] == [str(plugin.resolve())]
    return out


@pytest.fixture
def plugin(tmp_path) -> Path:
    path = tmp_path / "talk.py"
    path.write_text(TALKATIVE)
    return path


def test_every_reader_refuses_a_plugin_changed_or_missing_since_the_run(tmp_path, plugin):
    run = played(tmp_path, plugin)
    plugin.write_text(TALKATIVE + "# edited since the run\n")
    for command in (["analyze", str(run)], ["view", str(tmp_path / "runs"), "--export", str(tmp_path / "site")],
                    ["replay", str(run)], ["calibrate", str(run), "--judge-model", "scripted"],
                    ["play", "--seats", "rulebot", "--games", "1", "--model", f"replay:{run}"]):
        with registries_restored():
            refused = avalon(*command)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, (command, refused.stderr)
        assert refused.stderr.strip() == (f"error: run {run}: plugin {plugin.resolve()} changed since the run loaded "
                                          "it (--no-run-plugins goes on without the run's plugins)"), command
    assert not (tmp_path / "site").exists()
    plugin.unlink()
    with registries_restored():
        missing = avalon("analyze", str(run))
    assert missing.returncode == 2 and f"plugin {plugin.resolve()} is missing" in missing.stderr


@pytest.mark.slow  # seconds: two analyses of a run
def test_analyze_loads_the_runs_plugins_and_goes_on_without_them_when_told(tmp_path, plugin):
    run = played(tmp_path, plugin)
    from avalon_agents.analysis.paper.metrics import OUTCOMES

    assert "talkative" not in OUTCOMES  # as in a new process: only the run's record names the plugin
    with registries_restored():
        done = avalon("analyze", str(run), "--out", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    assert "loaded 1 plugin the run recorded: talk.py" in done.stderr.splitlines()
    assert set(pd.read_csv(tmp_path / "a" / "metrics" / "talkative.csv")["agent"]) == {"rulebot"}
    with registries_restored():
        without = avalon("analyze", str(run), "--out", str(tmp_path / "b"), "--no-run-plugins")
    assert without.returncode == 0 and "loaded" not in without.stderr, without.stderr
    assert not (tmp_path / "b" / "metrics" / "talkative.csv").exists()


def test_replays_load_the_runs_plugins(tmp_path, plugin):
    """`avalon replay RUN` and a `--model replay:RUN` game load what the run loaded, saying so in one line."""
    run = played(tmp_path, plugin)
    for command in (["replay", str(run)],
                    ["play", "--seats", "rulebot", "--games", "1", "--model", f"replay:{run}", "--json"]):
        with registries_restored():
            done = avalon(*command)
        assert done.returncode == 0, (command, done.stderr)
        assert "loaded 1 plugin the run recorded: talk.py" in done.stderr.splitlines(), command
    with registries_restored():
        quiet = avalon("replay", str(run), "-q")
    assert quiet.returncode == 0 and "loaded" not in quiet.stderr


def test_a_config_that_replays_a_run_loads_its_plugins(tmp_path, plugin):
    """A config whose `model:` is replay:RUN (not --model) loads RUN's plugins too, before the config is read; a
    plugin changed since is refused in one line; --no-run-plugins goes on without; a --model over it replays
    nothing, so loads nothing."""
    run = played(tmp_path, plugin)
    config = tmp_path / "again.yaml"
    config.write_text(f"name: again\nmodel: replay:{run}\nagents:\n  bots: {{kind: rulebot}}\n"
                      "sides: {good: bots, evil: bots}\nseries: 1\ngames_per_series: 1\n")
    with registries_restored():
        done = avalon("run", str(config), "--out", str(tmp_path / "again"))
    assert done.returncode == 0, done.stderr
    assert "loaded 1 plugin the run recorded: talk.py" in done.stderr.splitlines()
    for flags in (["--no-run-plugins"], ["--model", "scripted"]):
        with registries_restored():
            other = avalon("run", str(config), "--check", *flags)
        assert other.returncode == 0 and "loaded" not in other.stderr, (flags, other.stderr)
    plugin.write_text(TALKATIVE + "# edited since the run\n")
    with registries_restored():
        refused = avalon("run", str(config), "--check")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"run {run}: plugin {plugin.resolve()} changed since the run loaded it" in refused.stderr


def test_a_run_from_before_run_json_names_its_plugins_in_experiment_json(tmp_path, plugin):
    """experiment.json's `plugins` (paths, no hash): loaded, and refused in one line once missing."""
    from avalon_agents.records.run_dir import EXPERIMENT
    from avalon_agents.records.run_record import RUN

    run = played(tmp_path, plugin)
    (run / RUN).unlink()
    (run / EXPERIMENT).write_text(json.dumps({"name": "old", "plugins": [str(plugin.resolve())]}))
    with registries_restored():
        done = avalon("replay", str(run))
    assert done.returncode == 0 and "loaded 1 plugin the run recorded: talk.py" in done.stderr, done.stderr
    plugin.unlink()
    with registries_restored():
        missing = avalon("replay", str(run))
    assert missing.returncode == 2 and f"run {run}: plugin {plugin.resolve()} is missing" in missing.stderr


def test_view_loads_each_runs_plugins_and_names_the_run_whose_plugin_clashes(tmp_path, plugin):
    """Over several runs each run's plugins are loaded; two runs whose plugins register one name are refused in
    one line naming the second run."""
    played(tmp_path, plugin, "first")
    other = tmp_path / "chatty.py"
    other.write_text(TALKATIVE.replace("> 200", "> 100"))  # another plugin under the same metric name
    second = played(tmp_path, other, "second")
    with registries_restored():
        refused = avalon("view", str(tmp_path / "runs"), "--export", str(tmp_path / "site"))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith(f"error: run {second}: plugin ") and \
        "metric 'talkative' is taken: plugin talk.py registered it, plugin chatty.py registers another" \
        in refused.stderr, refused.stderr


def test_two_plugins_registering_one_name_are_refused_in_one_line(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text(TALKATIVE)
    done = avalon("play", "--plugin", str(tmp_path / "a.py"), "--plugin", str(tmp_path / "b.py"), "--seats", "random")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.strip() == (f"error: plugin {tmp_path / 'b.py'}: metric 'talkative' is taken: plugin a.py "
                                   "registered it, plugin b.py registers another (register yours under another name)")


# --------------------------------------------------------------------------- avalon view's pages, no flag


CONFIG = """\
name: {name}
model: scripted
plugins: [my_plugin.py]
agents:
  ours: {{kind: llm}}
  bots: {{kind: rulebot}}
sides: {{good: ours, evil: bots}}
"""


def page_data(page: Path) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page.read_text(),
                                re.S)[1])


@pytest.mark.slow  # seconds of end-to-end play, analysis and export
def test_a_runs_plugin_metric_and_judge_reach_avalon_views_pages_with_no_flag(tmp_path):
    """The recipes' metric and judge, recorded by the runs that loaded them (experiment configs' `plugins:`): after
    `avalon analyze --judge-model scripted` (no --plugin), `avalon view --export` (no --plugin) shows the metric on
    each run page and the comparison page, and the judge's table in the run page's judged section."""
    (tmp_path / "bluntness.txt").write_text(BLUNTNESS_PROMPT)
    (tmp_path / "my_plugin.py").write_text(TALKATIVE + BLUNTNESS)
    runs = tmp_path / "runs"
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(CONFIG.format(name=name))
        with registries_restored():  # each run in a process of its own
            result = CliRunner().invoke(cli, ["run", str(tmp_path / f"{name}.yaml"), "--out", str(runs / name),
                                              "--max-games", "1"])
            assert result.exit_code == 0, result.output
        assert [Path(p.key).name for p in read_run_record(runs / name).plugins] == ["my_plugin.py"]
    with registries_restored():
        judged = avalon("analyze", str(runs / "a"), "--judge-model", "scripted")
    assert judged.returncode == 0, judged.stderr
    assert "loaded 1 plugin the run recorded: my_plugin.py" in judged.stderr.splitlines()
    with registries_restored():
        shown = avalon("view", str(runs), "--export", str(tmp_path / "site"), "--compare", "a,b")
    assert shown.returncode == 0, shown.stderr
    assert "loaded 1 plugin the runs recorded: my_plugin.py" in shown.stderr.splitlines()
    page = page_data(tmp_path / "site" / "runs" / "a" / "index.html")
    assert {row["agent"] for row in page["metrics"]["talkative"]} == {"ours", "bots"}
    table = pd.read_csv(runs / "a" / "analysis" / "metrics" / "bluntness_shares.csv")
    assert sum(row["n"] for row in page["behaviour"]["tables"]["bluntness_shares"]) == table["n"].sum() > 0
    (compared,) = (tmp_path / "site" / "compare").glob("*.html")
    assert "talkative" in page_data(compared)["metrics"]

    with registries_restored():  # the same view without the runs' plugins: neither is there
        bare = avalon("view", str(runs), "--export", str(tmp_path / "bare"), "--no-run-plugins")
    assert bare.returncode == 0, bare.stderr
    page = page_data(tmp_path / "bare" / "runs" / "a" / "index.html")
    assert "talkative" not in page["metrics"] and "bluntness_shares" not in page["behaviour"].get("tables", {})


def test_a_run_started_while_the_view_is_open_shows_its_plugins_metric(tmp_path, plugin):
    """`avalon view` loads the plugins of the runs there at its start; one started later has its plugins loaded
    when the view finds it, so its run page holds the plugin's metric, and one whose plugin changed since it ran
    is its row's problem, its pages refused (the view goes on), never a page without the metric."""
    import subprocess

    from avalon_agents.view.confine import Unreadable
    from avalon_agents.view.pages import View
    from tests.helpers import AVALON

    def play_with(plugin: Path, name: str) -> Path:  # in a process of its own, as a run started elsewhere
        out = tmp_path / "runs" / name
        subprocess.run([AVALON, "play", "--plugin", str(plugin), "--seats", "rulebot", "--games", "1", "--out",
                        str(out)], check=True, capture_output=True)
        return out

    (tmp_path / "runs").mkdir()
    with registries_restored():
        view = View([tmp_path / "runs"], run_plugins=True)
        assert view.index()["runs"] == []  # open before the run
        run = play_with(plugin, "run")
        [row] = view.index()["runs"]
        assert row["unreadable"] == [], row
        assert {r["agent"] for r in view.run(row["id"])["metrics"]["talkative"]} == {"rulebot"}
        other = tmp_path / "chatty.py"
        other.write_text(TALKATIVE.replace('"talkative"', '"chatty"'))
        later = play_with(other, "later")
        other.write_text(other.read_text() + "# edited since the run\n")
        rows = {r["id"]: r for r in view.index()["runs"]}
        assert rows["later"]["unreadable"] == [f"run {later}: plugin {other.resolve()} changed since the run "
                                               "loaded it (--no-run-plugins goes on without the run's plugins)"]
        with pytest.raises(Unreadable):
            view.run("later")
    assert run.is_dir()
