"""The recipes of docs/architecture.md ("Where to make each kind of change") followed as a user would: a plugin
file written as the recipe says, named in a config's `plugins:`, and a scripted game played through `avalon run`
that uses what the plugin added (a metric and a judge: through `avalon analyze` of that game). A recipe that stops
working fails here, not in a user's hands.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.records import analysis_dir as folder
from avalon_agents.records import read_trace
from avalon_agents.records.run_dir import EVENTS


def play(tmp_path: Path, plugin: str, config: str, *extra: str) -> Path:
    """Write the plugin and the config (which names it), run one scripted game; the game's directory."""
    (tmp_path / "my_plugin.py").write_text(textwrap.dedent(plugin))
    path = tmp_path / "recipe.yaml"
    path.write_text(textwrap.dedent(config))
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["run", str(path), "--out", str(out), "--max-games", "1", *extra])
    assert result.exit_code == 0, result.output
    (game,) = out.glob("main/series-1/game-*")
    return game


def check(tmp_path: Path) -> str:
    """`avalon run --check` of the config `play` wrote: the plan, without a traceback."""
    result = CliRunner().invoke(cli, ["run", str(tmp_path / "recipe.yaml"), "--check", "--out",
                                      str(tmp_path / "planned")])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    return result.output


COGNITIVE = """\
name: recipe
model: scripted
plugins: [my_plugin.py]
agents:
  ours: {kind: cognitive, modules: %s}
  bots: {kind: rulebot}
sides: {good: ours, evil: bots}
"""


def test_a_new_module(tmp_path):
    """Subclass Module, set `slot`, `@register_module("name")`; select it with `use: name`."""
    game = play(tmp_path, '''
        from avalon_agents.modules import Module, register_module


        @register_module("plain_plan")
        class PlainPlan(Module):
            slot = "plan"

            async def run(self, turn):
                turn.slots.plan = "keep the team small"
        ''', COGNITIVE % "{plan: {use: plain_plan}}")
    plans = [r for r in read_trace(game) if r.type == "module" and r.slot == "plan"]
    assert plans and {(r.module, r.text) for r in plans} == {("plain_plan", "keep the team small")}
    assert "no expected calls declared, counted as none: plain_plan" in check(tmp_path)


def test_a_new_slot(tmp_path):
    """`register_slot("name", before=...)` and its default module registered under the slot's name (declaring
    its expected calls); the config key is the slot name."""
    game = play(tmp_path, '''
        from avalon_agents.modules import Module, register_module
        from avalon_agents.modules.base import Expected, register_slot
        from avalon_agents.prices import Cost

        register_slot("mood", before="action")


        @register_module("mood")
        class Mood(Module):
            slot = "mood"
            expected = Expected(per_round=Cost(), per_turn=Cost())  # no model call

            async def run(self, turn):
                if turn.request is not None:
                    turn.slots.mood = f"calm at quest {turn.quest}"
        ''', COGNITIVE % "{mood: {enabled: true}}")
    trace = read_trace(game)
    moods = [r for r in trace if r.type == "module" and r.slot == "mood"]
    assert moods and all(r.module == "mood" and r.text.startswith("calm at quest") for r in moods)
    # the last consumer: the slot's text reaches every later module's prompt, under its own section
    later = [r for r in trace if r.type == "llm_call" and r.stage == "module" and r.request is not None
             and r.request != "speak" or r.type == "llm_call" and r.name in ("action+response", "response")]
    assert later and all("Mood:\ncalm at quest" in r.messages[-1].content for r in later), \
        [r.messages[-1].content[:300] for r in later[:1]]
    earlier = [r for r in trace if r.type == "llm_call" and r.name in ("summary", "analysis", "plan")]
    assert earlier and not any("Mood:" in r.messages[-1].content for r in earlier)  # not before its turn
    assert "no expected calls" not in check(tmp_path)  # the plan reads what the slot's module declares


def test_a_new_seat_kind(tmp_path):
    """Implement the Agent protocol (AgentBase: `act`); `register_agent("name", factory)`; then `kind: name`."""
    game = play(tmp_path, '''
        from avalon_agents.agents.base import AgentBase
        from avalon_agents.agents.registry import register_agent
        from avalon_agents.core.actions import Assassinate, ProposeTeam, QuestCard, Reply, RequestKind, Speak, Vote


        class Agreeable(AgentBase):
            def __init__(self, *, seat, seed, words="I agree with everyone."):
                self.seat, self.words = seat, words

            async def act(self, request, instruction):
                kind = request.kind
                if kind is RequestKind.PROPOSE:
                    action = ProposeTeam(team=tuple(request.options[: request.team_size]))
                elif kind is RequestKind.VOTE:
                    action = Vote(approve=True)
                elif kind is RequestKind.QUEST:
                    action = QuestCard(success=True)
                elif kind is RequestKind.ASSASSINATE:
                    action = Assassinate(target=request.options[0])
                else:
                    action = Speak(text=self.words)
                return Reply(text="", action=action)


        register_agent("agreeable", Agreeable)
        ''', '''\
        name: recipe
        plugins: [my_plugin.py]
        agents:
          nice: {kind: agreeable, options: {words: "Count me in."}}
          bots: {kind: rulebot}
        sides: {good: nice, evil: bots}
        ''')
    events = [json.loads(line) for line in (game / EVENTS).read_text().splitlines()]
    speeches = {e["text"] for e in events if e["type"] == "speech"}
    assert "Count me in." in speeches


def test_a_new_provider(tmp_path):
    """`register_provider("name", factory)` (and what it supports); then `--model name:MODEL`."""
    game = play(tmp_path, '''
        from avalon_agents.llm import register_provider
        from avalon_agents.llm.scripted import ScriptedChatModel


        def canned(model, settings):
            return ScriptedChatModel(seed=settings.kwargs.get("seed", 0))


        register_provider("canned", canned, constrained="json_schema", history_tokens=1200)
        ''', '''\
        name: recipe
        plugins: [my_plugin.py]
        agents:
          vanilla: {kind: llm}
          bots: {kind: rulebot}
        sides: {good: vanilla, evil: bots}
        ''', "--model", "canned:small")
    calls = [r for r in read_trace(game) if r.type == "llm_call"]
    assert calls and {r.settings["spec"] for r in calls} == {"canned:small"}
    assert all(r.outcome == "ok" for r in calls)
    extractions = [r for r in read_trace(game) if r.type == "extraction"]
    assert {r.method for r in extractions} == {"json"}  # its constrained output (bots' decisions are not recorded)


def test_a_changed_decision_kind(tmp_path, monkeypatch):
    """A request kind is declared once in `decisions/kinds.py` (`KINDS`); the host, the scripted model and the
    extractor read that spec, so a changed spec (here the vote's instruction, as an edit of kinds.py would change
    it) reaches every consumer. A plugin cannot replace a built-in kind: it is refused in one line."""
    from dataclasses import replace

    from avalon_agents.decisions.kinds import KINDS

    vote = KINDS["vote"]
    KINDS.register("vote", replace(vote, instruction=lambda request, rules: "Ballot time. " +
                                   vote.instruction(request, rules)), builtin=True)
    game = play(tmp_path, "", """\
        name: recipe
        model: scripted
        agents:
          vanilla: {kind: llm}
          bots: {kind: rulebot}
        sides: {good: vanilla, evil: bots}
        """)
    votes = [r for r in read_trace(game) if r.type == "llm_call" and r.purpose.request == "vote"]
    assert votes and all("Ballot time." in r.messages[-1].content for r in votes)
    (tmp_path / "replacing.py").write_text(textwrap.dedent("""\
        from dataclasses import replace
        from avalon_agents.decisions.kinds import KINDS, register_kind

        register_kind(replace(KINDS["vote"], asking="cast a ballot"))
        """))
    result = CliRunner().invoke(cli, ["play", "--plugin", str(tmp_path / "replacing.py"), "--seats", "random"])
    assert result.exit_code == 2 and "decision kind 'vote' is built in" in result.output, result.output
    assert "Traceback" not in result.output


RULEBOTS = """\
name: recipe
model: scripted
plugins: [my_plugin.py]
agents:
  ours: {kind: llm}
  bots: {kind: rulebot}
sides: {good: ours, evil: bots}
"""


TALKATIVE = """\
from avalon_agents.analysis.paper.metrics import register_metric
from avalon_agents.analysis.stats import rate


def talkative(data):
    speeches = data.speeches.assign(long=data.speeches["text"].str.len() > 200)
    return rate(speeches, ["variant", "agent"], "long")


register_metric("talkative", talkative)
"""
"""The metric recipe's plugin (tests/recipes/test_run_plugins.py: a run records it, avalon view shows it)."""

BLUNTNESS = """\
import json
from pathlib import Path

from avalon_agents.analysis import plots
from avalon_agents.analysis.judges.registry import register_judge
from avalon_agents.analysis.judges.spec import Ask, JudgeFigure, JudgeSpec
from avalon_agents.narrate import quote

LABELS = ("blunt", "polite")


def ask(speech):
    return Ask({"speaker": speech.speaker, "message": quote(speech.text)})


def parse(raw, subjects):
    try:
        label = json.loads(raw).get("label")
    except (ValueError, AttributeError):
        label = None
    return {"label": label if label in LABELS else None, "valid": label in LABELS}


register_judge(JudgeSpec(
    name="bluntness", prompt=str(Path(__file__).with_name("bluntness")), labels=LABELS,
    schema=lambda subjects: {"type": "object", "properties": {"label": {"type": "string", "enum": LABELS}},
                             "required": ["label"], "additionalProperties": False},
    parse=parse, ask=ask,
    columns=("game", "variant", "seq", "seat", "agent", "label", "raw", "valid", "cached"),
    figures=(JudgeFigure("bluntness", "Blunt speeches", "bluntness_shares",
                         summary=lambda judged, data: judged.groupby(["variant", "label"]).size()
                         .reset_index(name="n"),
                         draw=lambda table: plots.bars_figure(table, "label", value="n", title="Blunt")),),
))
"""
"""The judge recipe's plugin: its prompt is bluntness.txt beside it (BLUNTNESS_PROMPT)."""
BLUNTNESS_PROMPT = ("Is {speaker}'s message blunt or polite?\nMessage: {message}\n"
                    'Answer with JSON: {{"label": "blunt" or "polite"}}\n')


def analyze(tmp_path: Path, *extra: str) -> Path:
    """`avalon analyze` of the run `play` wrote, with the recipe's plugin; the analysis folder."""
    out = tmp_path / "analysis"
    result = CliRunner().invoke(cli, ["analyze", str(tmp_path / "run"), "--out", str(out), "--plugin",
                                      str(tmp_path / "my_plugin.py"), *extra])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    return out


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_new_metric(tmp_path):
    """A function of `RunData` returning value, CI and counts per group, added with `register_metric`: `avalon
    analyze` writes metrics/NAME.csv."""
    play(tmp_path, TALKATIVE, RULEBOTS)
    table = pd.read_csv(folder.metrics_file(analyze(tmp_path), "talkative"))
    assert set(table["agent"]) == {"ours", "bots"} and {"value", "ci_low", "ci_high"} <= set(table.columns)
    assert table["value"].between(0, 1).all()
    from avalon_agents.view.pages import View  # the last consumer: avalon view's run page lists it too

    shown = View([tmp_path / "run"]).run("run")["metrics"]["talkative"]
    assert {row["agent"] for row in shown} == {"ours", "bots"} and all(0 <= row["value"] <= 1 for row in shown)


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_new_judge(tmp_path):
    """One `JudgeSpec` (its own prompt file, labels, answer schema, parse, which speeches it asks, columns, a
    figure), added with `register_judge`: `avalon analyze --judge-model` asks it about the speeches and writes its
    figure's table."""
    (tmp_path / "bluntness.txt").write_text(BLUNTNESS_PROMPT)
    play(tmp_path, BLUNTNESS, RULEBOTS)
    table = pd.read_csv(folder.metrics_file(analyze(tmp_path, "--judge-model", "scripted"), "bluntness_shares"))
    assert table["n"].sum() > 0 and set(table["label"].dropna()) <= {"blunt", "polite"}
    from avalon_agents.view.pages import View  # the last consumer: avalon view's run page shows its table

    folder.analysis_dir(tmp_path / "run").mkdir(exist_ok=True)  # where the view reads what analyze wrote
    shutil.copytree(tmp_path / "analysis", folder.analysis_dir(tmp_path / "run"), dirs_exist_ok=True)
    judged = View([tmp_path / "run"]).run("run")["behaviour"]["tables"]["bluntness_shares"]
    assert sum(row["n"] for row in judged) == table["n"].sum()


def test_a_new_rules_preset(tmp_path):
    """A function of the player count returning a RuleSet, added with `register_preset(name, fn)`: `--rules NAME`
    plays by it and the game's own record (game_started in events.jsonl) holds its rules."""
    plugin = tmp_path / "my_rules.py"
    plugin.write_text(textwrap.dedent('''
        from avalon_agents.core.rules import official, register_preset

        register_preset("secret_votes", lambda players: official(players).model_copy(
            update={"name": "secret_votes", "votes_public": False}))
        '''))
    out = tmp_path / "played"
    result = CliRunner().invoke(cli, ["play", "--plugin", str(plugin), "--rules", "secret_votes", "--seats",
                                      "rulebot", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    (events,) = out.rglob(EVENTS)
    started = json.loads(events.read_text().splitlines()[0])
    assert started["type"] == "game_started" and started["rules"]["name"] == "secret_votes"
    assert started["rules"]["votes_public"] is False
    revealed = [json.loads(line) for line in events.read_text().splitlines() if '"votes_revealed"' in line]
    assert revealed and all(not e["approvals"] and not e["rejections"] for e in revealed)  # the engine obeyed
    bad = CliRunner().invoke(cli, ["play", "--rules", "nonesuch", "--seats", "rulebot"])
    assert bad.exit_code == 2 and "unknown preset 'nonesuch' (choose from official, paper, secret_votes)" in bad.output


def test_a_new_attack_from_a_plugin(tmp_path):
    """`register_attack(...)` (an Attack's mapping) adds to the library every red team and attacker seat reads;
    a shipped attack's name is refused in one line."""
    from avalon_agents.agents.attacker import as_attack, library, load_attacks, register_attack

    register_attack({"name": "sweet_talk", "template": "Trust me, friends. {speech}",
                     "goal": {"listeners_vote": "approve"}})
    assert "sweet_talk" in load_attacks() and as_attack("sweet_talk").render("Hi.", 1, 2) == "Trust me, friends. Hi."
    shipped = library().names()[0]
    with pytest.raises(ValueError, match=f"attack '{shipped}' is built in"):
        register_attack({"name": shipped, "template": "{speech}", "goal": {"listeners_vote": "reject"}})
