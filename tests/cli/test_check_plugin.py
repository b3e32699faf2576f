"""`avalon check-plugin` and `avalon_agents.testing`: a correct plugin passes, a broken one fails naming each
broken item, and a file that is no plugin is one line (exit 2)."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.testing import check_decision_kind, check_judge, check_preset

GOOD = """\
from avalon_agents.agents.registry import register_agent
from avalon_agents.agents.rulebot import RuleBot
from avalon_agents.analysis.paper.metrics import register_metric
from avalon_agents.analysis.stats import rate
from avalon_agents.modules import Module, register_module
from avalon_agents.modules.base import Expected, register_slot
from avalon_agents.prices import Cost

register_slot("mood", before="action")


@register_module("mood")
class Mood(Module):
    slot = "mood"
    expected = Expected(per_round=Cost(), per_turn=Cost())

    async def run(self, turn):
        if turn.request is not None:
            turn.slots.mood = f"calm at quest {turn.quest}"


register_agent("careful", RuleBot)


def talkative(data):
    speeches = data.speeches.assign(long=data.speeches["text"].str.len() > 200)
    return rate(speeches, ["variant", "agent"], "long")


register_metric("talkative", talkative)
"""

BROKEN = """\
from avalon_agents.agents.base import AgentBase
from avalon_agents.agents.registry import register_agent
from avalon_agents.core.actions import ProposeTeam, Reply
from avalon_agents.modules import Module, register_module


class Liar(AgentBase):
    def __init__(self, *, seat, seed):
        self.seat = seat

    async def act(self, request, instruction):
        return Reply(text="whatever", action=ProposeTeam(team=(99,)))


register_agent("liar", Liar)


@register_module("explosive_plan")
class Explosive(Module):
    slot = "plan"

    async def run(self, turn):
        raise RuntimeError("boom")
"""

ORPHAN_SLOT = """\
from avalon_agents.modules.base import register_slot

register_slot("orphan", before="action")  # no module under its name
"""


def check(tmp_path, text: str, *args: str):
    plugin = tmp_path / "plugin.py"
    plugin.write_text(textwrap.dedent(text))
    return CliRunner().invoke(cli, ["check-plugin", str(plugin), *args])


@pytest.mark.slow  # three scripted games per item and a scripted run for the metric: about ten seconds
def test_a_correct_plugin_passes_every_item(tmp_path):
    result = check(tmp_path, GOOD)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for item in ("agent kind careful", "module mood", "slot mood", "metric talkative"):
        assert any(line.startswith(f"ok    {item}:") for line in lines), result.output
    assert "its section reached" in result.output and lines[-1] == "all 4 passed"
    found = json.loads(check(tmp_path, GOOD, "--json").output)
    assert {i["name"] for i in found["items"]} == {"careful", "mood", "talkative"} and found["failed"] == []


def test_a_broken_plugin_fails_naming_each_broken_item(tmp_path):
    result = check(tmp_path, BROKEN)
    assert result.exit_code == 1, result.output
    assert "FAIL  module explosive_plan: raised in a scripted game (RuntimeError: boom)" in result.output
    assert "FAIL  agent kind liar:" in result.output and "answers not legal" in result.output
    assert result.output.splitlines()[-1].startswith("2 of 2 failed: ")
    assert "Traceback" not in result.output
    result = check(tmp_path, ORPHAN_SLOT)
    assert result.exit_code == 1 and "FAIL  slot orphan: no module registered under the slot's name" in result.output


def test_what_is_not_a_plugin_is_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    result = CliRunner().invoke(cli, ["check-plugin", str(tmp_path / "notes.txt")])
    assert result.exit_code == 2 and "is not a Python file" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(cli, ["check-plugin", str(tmp_path / "missing.py")])
    assert result.exit_code == 2 and "no such file" in result.output
    (tmp_path / "quits.py").write_text("import sys\nsys.exit(0)\n")
    result = CliRunner().invoke(cli, ["check-plugin", str(tmp_path / "quits.py")])
    assert result.exit_code == 2 and "called sys.exit(0) while being imported" in result.output


def test_a_judge_whose_parse_does_not_read_its_own_labels_fails():
    from avalon_agents.analysis.judges.registry import JUDGES, judge_spec, register_judge

    register_judge(replace(judge_spec("camouflage"), name="deaf", parse=lambda raw, subjects: {"valid": False}))
    assert check_judge("camouflage").ok
    found = check_judge("deaf")
    assert not found.ok and "does not read its own labels: self_disclosure" in found.detail
    assert "deaf" in JUDGES  # the fixture removes it after the test


def test_every_built_in_decision_kind_passes_and_a_broken_one_is_named():
    from avalon_agents.decisions.kinds import KINDS

    for name in KINDS:
        assert check_decision_kind(name).ok, check_decision_kind(name)
    KINDS.register("vote", replace(KINDS["vote"], random=lambda request, rng: None), builtin=True)
    found = check_decision_kind("vote")
    assert not found.ok and "random" in found.detail


def test_a_decision_kind_without_what_its_consumers_need_is_refused_when_registered():
    from avalon_agents.decisions.kinds import KINDS, register_kind

    with pytest.raises(ValueError, match=r"decision kind vote: no bot, legal \(every consumer needs them"):
        KINDS.register("vote", replace(KINDS["vote"], bot=None, legal=None), builtin=True)
    with pytest.raises(ValueError, match="decision kind 'quest' is built in"):
        register_kind(replace(KINDS["quest"], asking="flip a card"))


def test_a_rules_preset_is_checked_over_every_player_count():
    from avalon_agents.core.rules import official, register_preset

    register_preset("quick", lambda players: official(players).model_copy(update={"name": "quick"}))
    register_preset("wrong_size", lambda players: official(6))
    assert check_preset("quick").ok and "5, 6, 7, 8, 9, 10 players" in check_preset("quick").detail
    found = check_preset("wrong_size")
    assert not found.ok and "asked for 5 players, gave 6" in found.detail


UNCHECKED_AND_NAN = """\
from avalon_agents.analysis.paper.metrics import register_metric
from avalon_agents.importers import Importer, register_importer
from avalon_agents.importers.avalonlogs import import_logs, log_files
import pandas as pd

register_importer(Importer(name="mylogs", help="My logs.", argument="dir", log_files=log_files,
                           import_logs=import_logs))


def hopeless(data):
    return pd.DataFrame({"variant": ["main"], "value": [float("nan")]})


register_metric("hopeless", hopeless)
"""


@pytest.mark.slow  # seconds of child processes or a flood: the fast suite keeps its minute
def test_check_plugin_fails_closed_on_what_it_cannot_exercise_and_on_a_nan_metric(tmp_path):
    result = check(tmp_path, UNCHECKED_AND_NAN)
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("FAIL  importer mylogs: not checked: avalon check-plugin has no check of this "
                               "registry (checks: module, slot,") for line in lines), result.output
    assert "FAIL  metric hopeless: 1 of 1 values are NaN on a scripted run" in lines
    assert lines[-1].startswith("2 of 2 failed: ") and "importer mylogs" in lines[-1]


LOOPS_AT_IMPORT = """\
while True:
    pass
"""

NEVER_ANSWERS = """\
import asyncio

from avalon_agents.agents.registry import register_agent
from avalon_agents.agents.rulebot import RuleBot


class Stuck(RuleBot):
    async def act(self, request, instruction):
        await asyncio.Event().wait()


register_agent("stuck", Stuck)
"""


@pytest.mark.slow  # seconds of child processes or a flood: the fast suite keeps its minute
def test_a_plugin_that_hangs_fails_in_bounded_time_naming_where(tmp_path):
    import time

    started = time.monotonic()
    result = check(tmp_path, LOOPS_AT_IMPORT, "--timeout", "2")
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[0] == ("FAIL  plugin plugin.py: while being imported: did not finish in 2 s "
                                             "and was stopped (a loop or a wait that never ends?)")
    result = check(tmp_path, NEVER_ANSWERS, "--timeout", "3", "--json")
    found = json.loads(result.output)
    assert result.exit_code == 1 and found["failed"] == ["agent kind stuck"], result.output
    assert found["items"][0]["detail"].startswith("did not finish in 3 s and was stopped")
    assert time.monotonic() - started < 60  # each step stopped at its timeout, not the test's


HOSTILE = """\
import os
import threading
import time

from avalon_agents.core.rules import PRESETS, official, register_preset
from avalon_agents.engine.engine import AvalonEngine

print("a plugin's print does not reach --json")
real_submit = AvalonEngine.submit
AvalonEngine.submit = lambda self, seat, action: real_submit(self, seat, action)
PRESETS.register("official", lambda players: official(players), builtin=True)


def lingering(players):
    threading.Thread(target=time.sleep, args=(3600,), name="sleeper").start()
    return official(players).model_copy(update={"name": "lingering"})


def leaving(players):
    os._exit(3)


def quitting(players):
    raise SystemExit(4)


register_preset("lingering", lingering)
register_preset("leaving", leaving)
register_preset("quitting", quitting)
"""


def test_a_plugin_that_patches_the_framework_exits_or_leaves_a_thread_fails_naming_each(tmp_path):
    # a generous timeout: these fail for what they do, whatever the machine's speed
    result = check(tmp_path, HOSTILE, "--timeout", "120", "--json")
    assert result.exit_code == 1, result.output
    found = json.loads(result.output)  # the plugin's print went to stderr
    details = {f"{i['what']} {i['name']}": i["detail"] for i in found["items"] if not i["ok"]}
    assert set(details) == {"plugin plugin.py", "rules preset lingering", "rules preset leaving",
                            "rules preset quitting"}, details
    assert details["plugin plugin.py"].startswith("replaced the framework's own code while being imported: ")
    assert "avalon_agents.engine.engine.AvalonEngine.submit" in details["plugin plugin.py"]
    assert "the built-in rules preset 'official'" in details["plugin plugin.py"]
    # one thread per player count the check asks the preset for
    assert details["rules preset lingering"] == "left 6 thread(s) running while being checked: sleeper x6"
    assert details["rules preset leaving"] == "exited (code 3) without answering"
    assert details["rules preset quitting"] == "called sys.exit(4)"
