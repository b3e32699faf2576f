"""Every bad input is one line on stderr naming the problem, exit code 2, never a traceback: the cases that
once ended in a Python traceback or a hang, each as the user would type it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from avalon_agents.records.run_dir import EVENTS, META, RESULT, TRACE
from tests.helpers import avalon

ROOT = Path(__file__).parents[2]
BASE = """\
name: bad
model: scripted
agents:
  ours: {kind: cognitive}
  bots: {kind: rulebot}
sides: {good: ours, evil: bots}
"""


def one_line_error(result, *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize(("change", "field"), [
    ("model: nonsense", "model.spec"),
    ("extractor: {model: 'openai-compatible:m'}", "extractor.model.spec"),
    ("agents:\n  ours: {kind: cognitive, modules: {summary: {model: bogus}}}\n  bots: {kind: rulebot}",
     "agents.ours.modules.summary.model.spec"),
    ("games_per_series: 100000000000000000000", "games_per_series"),
])
def test_a_bad_config_is_named_by_check(tmp_path, change, field):
    key = change.split(":")[0]
    kept, skipping = [], False
    for line in BASE.splitlines():  # drop the key being replaced, with its indented lines
        skipping = line.startswith(key + ":") or (skipping and line.startswith("  "))
        if not skipping:
            kept.append(line)
    text = "\n".join(kept) + "\n" + change + "\n"
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    one_line_error(avalon("run", "--check", str(path)), field)


def test_the_paper_configs_without_a_key_are_one_line(tmp_path):
    result = avalon("run", str(ROOT / "experiments/paper/table2.yaml"), "--out", str(tmp_path / "run"),
                    env={"OPENAI_API_KEY": ""})
    one_line_error(result, "OPENAI_API_KEY")


def test_an_agent_config_naming_a_bad_model(tmp_path):
    path = tmp_path / "agent.yaml"
    path.write_text("summary: {model: {spec: 'openai-compatible:x@ftp://nowhere'}}\n")
    one_line_error(avalon("play", "--seats", "cognitive", "--model", "scripted", "--agent-config", str(path)),
                   "openai-compatible")


@pytest.mark.parametrize("command", [["play"], ["run", str(ROOT / "experiments/quickstart.yaml"), "--model",
                                                         "scripted"]])
def test_an_out_that_cannot_be_written(tmp_path, command):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    one_line_error(avalon(*command, "--out", str(blocker / "run")), "cannot write")


def test_a_malformed_openai_compatible_url_and_a_model_seat_in_bench_engine():
    one_line_error(avalon("play", "--seats", "llm", "--model", "openai-compatible:m@http://[::1/v1"), "URL")
    one_line_error(avalon("bench", "engine", "--seats", "llm", "--games", "1"), "seats")


@pytest.fixture(scope="module")
def a_game(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("one")
    assert avalon("play", "--seats", "llm", "--model", "scripted", "--out", str(folder), "--json").returncode == 0
    return folder / "game-00001"


@pytest.mark.parametrize(("name", "content"), [
    (RESULT, "{not json"),
    (TRACE, '{"type": "llm_call", "seat": "x"}\n'),
    (META, json.dumps([1, 2, 3])),
    (EVENTS, '{"seq": 0}\n'),
])
@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_analyze_names_the_game_it_cannot_read(tmp_path, a_game, name, content):
    game = tmp_path / "run" / "game-00001"
    shutil.copytree(a_game, game)
    (game / name).write_text(content)
    one_line_error(avalon("analyze", str(tmp_path / "run")), "cannot be read", "game-00001")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    shutil.copy(a_game / name, game / name)
    one_line_error(avalon("analyze", str(tmp_path / "run"), "--out", str(blocker / "out")), "cannot write")


# --------------------------------------------------------------------------- issue 25.6: every input checked where
# it enters. Each case below once passed silently, wrote outside --out, hung or ended in a traceback.

DEEP = "paper: " + "[" * 5000 + "]" * 5000
BOMB = "paper:\n  x: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9))


def config_with(tmp_path: Path, text: str, base: str = BASE) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(base + text + "\n")
    return path


@pytest.mark.parametrize(("text", "needles"), [
    ("seed: -5", ["bad.yaml:7", "seed", "greater than or equal to 0"]),
    (f"seed: {2**32}", ["seed", "less than or equal to"]),
    ("seed: 3\nseed: 4", ["bad.yaml:8", "duplicate key 'seed'", "first on line 7"]),
    ("grid: {seed: []}", ["grid.seed", "at least 1 item"]),
    ("variants: {'../../x': {}}", ["variants", "'../../x' is not a name"]),
    ("variants: {control: {}, 'a/b': {}}", ["variants", "'a/b' is not a name"]),
    (DEEP, ["bad.yaml:7", "nested deeper than"]),
    (BOMB, ["values once its aliases are expanded"]),
    ("x: &r [*r]", ["alias that contains itself"]),
], ids=["negative-seed", "huge-seed", "duplicate-key", "empty-grid", "variant-path", "variant-slash", "deep-list",
        "alias-bomb", "recursive-alias"])
def test_a_bad_experiment_config_is_one_line(tmp_path, text, needles):
    one_line_error(avalon("run", "--check", str(config_with(tmp_path, text))), *needles)


def test_a_variant_name_never_reaches_outside_out(tmp_path):
    out = tmp_path / "deep" / "er" / "run"
    one_line_error(avalon("run", str(config_with(tmp_path, "variants: {'../../x': {}}")), "--out", str(out)),
                   "not a name")
    assert not (tmp_path / "deep" / "x").exists() and not out.exists()


@pytest.mark.parametrize(("change", "needles"), [
    ("agents:\n  '../ours': {kind: rulebot}\n  bots: {kind: rulebot}\nsides: {good: ../ours, evil: bots}",
     ["agents", "'../ours' is not a name"]),
    ("agents:\n  ours: {kind: rulebot}\n  bots: {kind: rulebot}\nlineup: {ours: 8, bots: -2}",
     ["lineup.bots", "greater than or equal to 0"]),
], ids=["agent-path", "negative-count"])
def test_agent_names_and_lineup_counts(tmp_path, change, needles):
    base = "name: bad\nmodel: scripted\n"
    one_line_error(avalon("run", "--check", str(config_with(tmp_path, change, base))), *needles)


def test_a_tournament_entrant_is_a_name(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("name: t\nplayers: 5\nentrants:\n  a: {kind: rulebot}\n  '..': {kind: random}\nblocks: 1\n")
    one_line_error(avalon("tournament", "--check", str(path)), "entrants", "'..' is not a name")


def test_a_grid_value_becomes_a_safe_variant_name():
    from avalon_agents.checks import NAME
    from avalon_agents.experiments.config import ExperimentFile

    variants = ExperimentFile(base={}, grid={"model": ["openai-compatible:m@http://h:1/v1", "../../etc"],
                                             "seed": [1]}).expand()
    assert len(variants) == 2 and all(NAME.match(n) and ".." not in n and "/" not in n for n in variants), variants


@pytest.mark.parametrize("args", [
    ["play", "--games", "100000000000000000000"],
    ["play", "--seed", "-1"],
    ["play", "--players", "11"],
    ["bench", "engine", "--games", "100000000000000000000"],
    ["bench", "cost", "--seed", "-3"],
    ["extract", "--kind", "vote", "--text", "approve", "--seat", "99"],
    ["redteam", str(ROOT / "experiments/redteam.yaml"), "--games", "1000000000"],
    ["bias", str(ROOT / "experiments/bias.yaml"), "--games", "1000000000"],
    ["calibrate", ".", "--judge-model", "scripted", "--seed", "-1"],
    ["calibrate", ".", "--judge-model", "scripted", "--judge-concurrency", "0"],
    ["probe-humans", ".", "--model", "scripted", "--concurrency", "100000"],
    ["run", str(ROOT / "experiments/quickstart.yaml"), "--max-games", "0"],
])
def test_numbers_on_the_command_line_have_ranges(args):
    flag = next(a for a in args if a.startswith("--") and a not in ("--kind", "--text", "--judge-model", "--model"))
    one_line_error(avalon(*args), flag, "is not in the range")


def test_a_budget_that_is_not_a_number(tmp_path):
    one_line_error(avalon("run", "--check", str(ROOT / "experiments/quickstart.yaml"), "--model", "scripted",
                          "--budget-usd", "nan"), "budget-usd")


@pytest.mark.parametrize(("value", "needle"), [("[1", "model-kwarg x:1: not valid YAML"),
                                               ("{a: 1, a: 2}", "duplicate key 'a'")])
def test_a_model_kwarg_that_is_not_yaml(value, needle):
    one_line_error(avalon("play", "--seats", "llm", "--model", "scripted", "--model-kwarg", f"x={value}"), needle)


def test_every_yaml_file_refuses_duplicate_keys(tmp_path):
    agent = tmp_path / "agent.yaml"
    agent.write_text("summary: {enabled: true}\nsummary: {enabled: false}\n")
    one_line_error(avalon("play", "--seats", "cognitive", "--model", "scripted", "--agent-config", str(agent)),
                   "agent-config", "agent.yaml:2", "duplicate key 'summary'")
    prices = tmp_path / "prices.yaml"
    prices.write_text("m: {input: 1, output: 2}\nm: {input: 3, output: 4}\n")
    one_line_error(avalon("run", "--check", str(ROOT / "experiments/quickstart.yaml"), "--model", "scripted",
                          "--prices", str(prices)), "prices.yaml:2", "duplicate key 'm'")


REDTEAM = """\
name: rt
players: 6
model: scripted
defended: {kind: rulebot}
attacks: [mine]
attack_files: [attacks.yaml]
games: 1
"""


@pytest.mark.parametrize(("attack", "needles"), [
    ("control: {template: '{speech} x', goal: {listeners_vote: approve}}",
     ["attacks: control", "'control' is reserved", "OUT/control"]),
    ("'../x': {template: '{speech} x', goal: {listeners_vote: approve}}", ["'../x' is not a name"]),
    ("mine: {template: '{speech} x', goal: {team_includes: 99}}", ["mine: goal.team_includes: 99 is not a seat"]),
    ("mine: {template: '{speech} x', goal: {assassinate: 9}}",
     ["attacks: mine", "goal.assassinate: 9 is not a seat of a 6-player game"]),
    ("mine: {template: '{speech} x', goal: {judge_says: {judge: oracle, label: x}}}",
     ["attacks: mine", "goal.judge_says.judge: no judge named 'oracle'", "camouflage"]),
    ("mine: {template: '{speech} x', goal: {judge_says: {judge: camouflage, verdict: x}}}",
     ["attacks: mine", "goal.judge_says.verdict", "no column 'verdict'"]),
])
def test_a_bad_attack_is_one_line(tmp_path, attack, needles):
    (tmp_path / "attacks.yaml").write_text("attacks:\n  " + attack + "\n")
    config = tmp_path / "rt.yaml"
    config.write_text(REDTEAM.replace("[mine]", "all" if "mine:" not in attack else "[mine]"))
    one_line_error(avalon("redteam", str(config), "--out", str(tmp_path / "out")), *needles)
    assert not (tmp_path / "out" / "control").exists()


@pytest.mark.parametrize(("text", "needles"), [
    ("seed: -1", ["seed", "greater than or equal to 0"]),
    ("agents: {table: {kind: rulebot}}", ["'table' is reserved"]),
])
def test_a_bad_bias_study_is_one_line(tmp_path, text, needles):
    path = tmp_path / "bias.yaml"
    path.write_text("name: b\nmodel: scripted\ngames: 1\n" + text + "\n"
                    + ("" if "agents" in text else "agents: {bots: {kind: rulebot}}\n"))
    one_line_error(avalon("bias", str(path), "--out", str(tmp_path / "out")), *needles)


@pytest.mark.parametrize(("code", "name"), [
    ("from avalon_agents.agents import register_agent\nregister_agent('rulebot', lambda **kw: None)\n",
     "agent kind 'rulebot'"),
    ("from avalon_agents.modules import Module, register_module\n"
     "@register_module('my_summary', 'summary')\nclass Mine(Module):\n    slot = 'summary'\n", "module 'summary'"),
    ("from avalon_agents.llm import register_provider\nregister_provider('scripted', lambda model, settings: None)\n",
     "provider 'scripted'"),
], ids=["agent-kind", "module-alias", "provider"])
def test_a_plugin_never_replaces_a_built_in_name(tmp_path, code, name):
    from avalon_agents.agents.registry import AGENT_KINDS
    from avalon_agents.llm.providers import PROVIDERS
    from avalon_agents.modules import MODULES

    before = (AGENT_KINDS.items(), MODULES.items(), PROVIDERS.items())
    plugin = tmp_path / "sneaky.py"
    plugin.write_text(code)
    one_line_error(avalon("play", "--plugin", str(plugin)), "sneaky.py", name, "built in")
    assert (AGENT_KINDS.items(), MODULES.items(), PROVIDERS.items()) == before  # nothing replaced or half-added


DYING_PLUGIN = """\
import os
import signal

from avalon_agents.agents import register_agent
from avalon_agents.agents.rulebot import RuleBot


def doomed(*, seat, seed):
    os.kill(os.getpid(), signal.SIGKILL)  # the Ray worker building this seat dies, as one killed by the OOM killer
    return RuleBot(seat=seat, seed=seed)


register_agent("doomed", doomed)
"""


@pytest.mark.slow
@pytest.mark.serial  # a local Ray cluster takes both cores
def test_a_dead_ray_worker_is_one_line_and_exit_3(tmp_path):
    import os
    import subprocess
    import sys

    (tmp_path / "doomed.py").write_text(DYING_PLUGIN)
    config = tmp_path / "dies.yaml"
    config.write_text("name: dies\nplugins: [doomed.py]\nagents:\n  d: {kind: doomed}\n  r: {kind: rulebot}\n"
                      "sides: {good: d, evil: r}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    result = subprocess.run([sys.executable, "-m", "avalon_agents.cli", "run", str(config), "--backend", "ray",
                             "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=300,
                            env=env, cwd=tmp_path)
    assert result.returncode == 3, (result.returncode, result.stderr[-3000:])
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Ray worker died" in errors[0], result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]


class FakeRay:
    """Just enough of `ray` for the Ray backend's driver loop, with ray's own exceptions: `get` raises `error`
    (None: returns no counts), `init` raises `start` (None: starts)."""

    def __init__(self, exceptions, error=None, start=None) -> None:
        self.exceptions, self.error, self.start, self.started = exceptions, error, start, False

    def is_initialized(self) -> bool:
        return self.started

    def init(self, **kwargs) -> None:
        if self.start is not None:
            raise self.start
        self.started = True

    def remote(self, **kwargs):
        handle = type("Handle", (), {"remote": lambda *a, **k: object(), "counts": None})
        handle.counts = handle
        return lambda fn: handle

    def cluster_resources(self) -> dict:
        return {"CPU": 2}

    def wait(self, pending, **kwargs):
        return pending, []

    def get(self, refs):
        if self.error is not None:
            raise self.error
        return {}


def ray_errors():
    exceptions = pytest.importorskip("ray.exceptions")
    from avalon_agents.llm.health import ModelUnusable

    return exceptions, [
        (exceptions.WorkerCrashedError(), "a Ray worker died while playing (WorkerCrashedError)"),
        (exceptions.ActorDiedError(), "a Ray worker died while playing (ActorDiedError)"),
        (exceptions.RayTaskError("_series_task", "tb", SystemExit(1)), "a Ray worker exited while playing"),
        (exceptions.RayTaskError("_series_task", "tb", ModelUnusable("model scripted: unusable (401)")),
         "model scripted: unusable (401)"),
    ]


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_dead_ray_worker_ends_the_driver_in_one_line_and_exit_3(tmp_path, monkeypatch):
    import sys

    exceptions, cases = ray_errors()
    config = config_with(tmp_path, "")
    for error, needle in [*cases, (None, "Ray did not start (Exception: The current node timed out during startup")]:
        start = Exception("The current node timed out during startup.\nmore") if error is None else None
        monkeypatch.setitem(sys.modules, "ray", FakeRay(exceptions, error, start))
        result = avalon("run", str(config), "--backend", "ray", "--out", str(tmp_path / "run"))
        assert result.returncode == 3, (needle, result.stderr[-2000:])
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]  # beside the bar
        assert len(errors) == 1 and needle in errors[0] and "Traceback" not in result.stderr, (needle, result.stderr)
