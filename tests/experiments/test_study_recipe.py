"""The recipe for a new study type (docs/architecture.md, "a new study type"), followed: one class declaring its jobs,
measure and report, registered in STUDIES, and a command handing it to `carry_out`. Each seed is played twice with
the sides mirrored (the scripted model's seats good, then evil, on the same deal); the measure is the good side's
win rate. The scheduler gives it resume (only a missing game is played again), the refusal of a changed study, the
health line, the report and the exit code of an unhealthy run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import click
import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli

from avalon_agents.analysis.stats import wilson
from avalon_agents.cli.studies import carry_out
from avalon_agents.core import make_rules
from avalon_agents.core.types import Team
from avalon_agents.engine import deal
from avalon_agents.experiments.config import check_command, read_config
from avalon_agents.experiments.studies import STUDIES, register_study
from avalon_agents.experiments.study import (
    Health,
    Lane,
    Outcome,
    Study,
    health_lines,
    markdown_head,
    markdown_row,
    one_health,
    percent,
    write_report,
)
from avalon_agents.host.job import GameJob
from avalon_agents.host.play import AgentSetup
from avalon_agents.llm import ModelSettings
from avalon_agents.llm.loopback import openai_server
from avalon_agents.records import read_result
from avalon_agents.records.health import HealthLimits
from avalon_agents.records.run_dir import EVENTS, RESULT, STUDY, is_done
from avalon_agents.registry import NameTaken

RULES = make_rules("official", 5)
SIDES = {1: ("llm", "rulebot"), 2: ("rulebot", "llm")}  # game n of a seed: (the good side's kind, the evil side's)


@dataclass
class Mirrored(Study):
    """Per seed a lane of two games on one deal: the model's seats good, then evil."""

    command: ClassVar[str] = "mirrored"
    config_keys: ClassVar[tuple[str, ...]] = ("mirrored",)

    name: str = "mirror"
    seeds: tuple[int, ...] = (3,)
    model: ModelSettings = field(default_factory=lambda: ModelSettings(spec="scripted"))
    health_limits: HealthLimits = field(default_factory=HealthLimits)

    @classmethod
    def load(cls, config: Path, override: ModelSettings | None = None) -> Mirrored:
        """A config file: `name`, `mirrored: {seeds: [...]}` (and `plugins:`, the file that registers it)."""
        raw, _ = read_config(config)
        check_command(raw, config, cls.command)
        model = ModelSettings(spec="scripted")
        return cls(name=raw.get("name", "mirror"), seeds=tuple((raw.get("mirrored") or {}).get("seeds", [3])),
                   model=override.over(model) if override is not None else model)

    @property
    def limits(self) -> HealthLimits:
        return self.health_limits

    def lanes(self, out: Path) -> list[Lane]:
        return [Lane(f"seed-{seed}", "mirrored", (out / f"seed-{seed}" / "llm-good", out / f"seed-{seed}" / "llm-evil"),
                     key=seed) for seed in self.seeds]

    def jobs(self, lane: Lane, clients, first: int):
        setups = {"llm": AgentSetup(clients=clients, settings=self.model, learn=False), "rulebot": AgentSetup()}
        roles = deal(RULES, lane.key)

        def job(n: int) -> GameJob:
            kinds = tuple(SIDES[n][roles[seat].side is Team.EVIL] for seat in RULES.seats)
            return GameJob(rules=RULES, seed=lane.key, kinds=kinds, setups=tuple(setups[k] for k in kinds))

        return job

    def fingerprint(self) -> dict[str, Any]:
        return {"mirrored": {"model": self.model.public()}}  # more seeds may be added on a resume

    def measure(self, out: Path) -> dict[str, Any]:
        games = [path for lane in self.lanes(out) for path in lane.paths if is_done(path)]
        wins = sum(read_result(path).winner is Team.GOOD for path in games)
        return {"games": len(games), "good_wins": wins, "rate": wins / len(games) if games else float("nan"),
                "ci": wilson(wins, len(games))}

    def report(self, out: Path, measured: dict[str, Any], health: Health):
        import pandas as pd

        md = markdown_head(f"Mirrored sides: {self.name}", "The good side's wins, each seed played with the model's "
                           "seats good and evil.", one_health(health), ("games", "good wins", "rate"))
        md.append(markdown_row((measured["games"], measured["good_wins"], percent(measured["rate"]))))
        return write_report(out, "mirror", {"mirror": pd.DataFrame([measured])}, measured, md, {"seeds": self.seeds})

    def lines(self, outcome: Outcome) -> list[str]:
        m = outcome.measured
        return [f"good win rate {percent(m['rate'])} [{percent(m['ci'][0])}, {percent(m['ci'][1])}] "
                f"({m['good_wins']}/{m['games']} games)", *health_lines(outcome.health), f"wrote {outcome.files[1]}"]

    def json(self, outcome: Outcome) -> dict[str, Any]:
        return {"out": outcome.out, **outcome.measured, "health": one_health(outcome.health)}


def command(study: Study) -> click.Command:
    """Its command: load (here: given), then `carry_out`."""

    @click.command()
    @click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
    def mirrored(out: Path) -> None:
        carry_out(study, out)

    return mirrored


def _measure(result) -> str:
    return next(line for line in result.output.splitlines() if line.startswith("good win rate"))


def test_a_new_study_is_one_class_and_its_command(tmp_path):
    register_study(Mirrored)  # the fixture restores the registry
    assert STUDIES["mirrored"] is Mirrored and STUDIES.names()[-1] == "mirrored"
    out = tmp_path / "out"
    first = CliRunner().invoke(command(Mirrored()), ["--out", str(out)])
    assert first.exit_code == 0, first.output
    good, evil = out / "seed-3" / "llm-good", out / "seed-3" / "llm-evil"
    assert is_done(good) and is_done(evil) and read_result(good).roles == read_result(evil).roles  # one deal
    wins = sum(read_result(g).winner is Team.GOOD for g in (good, evil))
    assert f"good win rate {percent(wins / 2)} " in first.output and f"({wins}/2 games)" in first.output
    (health,) = [line for line in first.output.splitlines() if line.startswith("health:")]
    assert health.startswith("health: calls 0/") and "UNHEALTHY" not in health
    report = (out / "mirror.md").read_text()
    assert report.startswith("# Mirrored sides: mirror") and f"Run {health}" in report and "## Provenance" in report
    assert (out / "mirror.csv").is_file() and (out / STUDY).is_file() and (out / "run.log").is_file()
    from avalon_agents.view.catalog import Catalog  # avalon view names it and counts its games, named as it names them

    row = Catalog([tmp_path]).row(out)
    assert (row["kind"], row["games_finished"], row["games_planned"], row["state"]) == ("mirrored", 2, 2, "done")
    # a game killed before its end: its result is missing; the rerun plays it, and only it, again
    kept = (good / EVENTS).stat().st_mtime_ns
    (evil / RESULT).unlink()
    again = CliRunner().invoke(command(Mirrored()), ["--out", str(out)])
    assert again.exit_code == 0, again.output
    assert is_done(evil) and (good / EVENTS).stat().st_mtime_ns == kept
    assert _measure(again) == _measure(first)  # the same games, the same measure
    # a changed study is refused in one line naming what changed
    changed = CliRunner().invoke(command(Mirrored(model=ModelSettings(spec="scripted", temperature=0.3))),
                                 ["--out", str(out)])
    assert changed.exit_code == 2 and "mirrored.model.temperature changed" in changed.output
    # its config keys reach the check every command makes of its config: given to `avalon run`, it names its own
    config = tmp_path / "mirror.yaml"
    config.write_text("name: mirror\nmirrored: true\n")
    wrong = CliRunner().invoke(cli, ["run", str(config)])
    assert wrong.exit_code == 2 and "an `avalon mirrored` config (it has `mirrored`)" in wrong.output


def test_a_study_type_is_refused_when_incomplete_or_under_a_built_in_name():
    class Half(Study):  # no jobs, measure, report, ...
        command = "half"

    with pytest.raises(ValueError) as caught:
        register_study(Half)
    assert "study half: Half does not declare" in str(caught.value) and "jobs" in str(caught.value)
    assert "load" in str(caught.value)  # its command could not make it from a config
    with pytest.raises(NameTaken):
        register_study(type("Bias", (Mirrored,), {"command": "bias"}))
    assert "half" not in STUDIES and STUDIES["bias"].__name__ == "OrderBias"


def test_an_unhealthy_study_exits_3_with_its_health_line(tmp_path):
    with openai_server(fault_rate=0.25, faults=("500",), seed=5) as server:
        model = ModelSettings(spec=f"openai-compatible:m@{server.base_url}", retries=0)
        result = CliRunner().invoke(command(Mirrored(model=model)), ["--out", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("health:")]
    assert "UNHEALTHY" in line and "calls failed (" in line
    assert "unhealthy study, not a result" in result.output
    assert line.split("  UNHEALTHY")[0] in (tmp_path / "out" / "mirror.md").read_text()


PLUGIN = """\
from avalon_agents.experiments.studies import register_study
from tests.experiments.test_study_recipe import Mirrored

register_study(Mirrored)
"""


def test_a_plugin_study_is_an_avalon_command_with_a_plan_and_a_budget(tmp_path):
    from avalon_agents.records.run_record import read_run_record

    (tmp_path / "my_study.py").write_text(PLUGIN)
    config = tmp_path / "mirror.yaml"
    config.write_text("name: mirror\nplugins: [my_study.py]\nmirrored: {seeds: [3, 4]}\n")
    # given to another command, the refusal names the command that plays it, and that command works
    wrong = CliRunner().invoke(cli, ["run", str(config)])
    assert wrong.exit_code == 2 and f"run `avalon study mirrored {config}`" in wrong.output, wrong.output
    out = tmp_path / "out"
    planned = CliRunner().invoke(cli, ["study", "mirrored", str(config), "--check", "--json", "--out", str(out)])
    assert planned.exit_code == 0, planned.output
    plan = json.loads(planned.output.splitlines()[-1])  # the plan is the one JSON object on stdout
    assert plan["command"] == "mirrored" and plan["games"] == 4 and plan["calls"] > 0 and plan["usd"] == 0.0
    assert [m["model"] for m in plan["models"]] == ["scripted"] and not out.exists()  # nothing played or made
    zero = CliRunner().invoke(cli, ["study", "mirrored", str(config), "--budget-usd", "0", "--out", str(out)])
    assert zero.exit_code == 2 and "budget-usd: must be more than 0, got 0" in zero.output
    done = CliRunner().invoke(cli, ["study", "mirrored", str(config), "--budget-usd", "1", "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert "plan: 4 games," in done.output and "budget: $1.00, $0.00 spent by the finished games" in done.output
    assert _measure(done).endswith("/4 games)")
    assert all(is_done(out / f"seed-{seed}" / side) for seed in (3, 4) for side in ("llm-good", "llm-evil"))
    record = read_run_record(out)
    assert (record.command, record.name) == ("mirrored", "mirror")
    assert any(p.key.endswith("my_study.py") and p.sha256 for p in record.plugins)
    # the plugin given on the command line instead of in the config: the same study, resumed (nothing played)
    config.write_text("name: mirror\nmirrored: {seeds: [3, 4]}\n")
    again = CliRunner().invoke(cli, ["study", "mirrored", str(config), "--out", str(out), "--plugin",
                                     str(tmp_path / "my_study.py")])
    assert again.exit_code == 0, again.output
    assert _measure(again) == _measure(done)
    unknown = CliRunner().invoke(cli, ["study", "mirored", str(config)])
    assert unknown.exit_code == 2 and "mirored" in unknown.output and "mirrored" in unknown.output
