"""The experiment runner with the scripted model: layout, results, experience flow, resume after a capped run
and (slow: two processes) after kill -9."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.core import Role
from avalon_agents.experiments import load_experiments, results_table, run_experiment
from avalon_agents.narrate import role_card
from avalon_agents.records import is_done, read_result, read_trace
from avalon_agents.records.run_dir import EVENTS, EXPERIMENT, META, RESULT, SEATING, TRACE
from avalon_agents.stores.experience import ExperienceStore

CONFIG = """\
name: tiny
model: scripted
agents:
  ours: {kind: cognitive}
  bots: {kind: rulebot}
sides: {good: ours, evil: bots}
series: 2
games_per_series: 2
concurrency: {games: 2}
variants:
  full: {}
  no_plan: {agents: {ours: {modules: {planning: {enabled: false}}}}}
"""
FILES = (EVENTS, TRACE, META, RESULT, SEATING)


def write(tmp_path, text=CONFIG) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    return path


def test_scripted_experiment_end_to_end(tmp_path):
    out = tmp_path / "run"
    config = CONFIG.replace("\nseries: 2", "\nseries: 1")  # one series of two games per variant: the fast suite's run
    result = CliRunner().invoke(cli, ["run", str(write(tmp_path, config)), "--out", str(out)])
    assert result.exit_code == 0, result.output
    meta = json.loads((out / EXPERIMENT).read_text())
    assert meta["name"] == "tiny" and set(meta["variants"]) == {"full", "no_plan"}
    games = sorted(out.glob("*/series-*/game-*"))
    assert len(games) == 4
    for game in games:
        assert all((game / f).is_file() for f in FILES), game
        seating = json.loads((game / SEATING).read_text())
        roles = read_result(game).roles
        for seat, name in seating["agents"].items():  # sides: ours plays good, the bots evil
            assert name == ("ours" if roles[int(seat)].side.value == "good" else "bots")
    no_plan = [r for g in out.glob("no_plan/*/game-*") for r in read_trace(g) if r.type == "llm_call"]
    assert no_plan and not any(r.name == "plan" for r in no_plan)
    table = results_table(out)
    assert set(table["variant"]) == {"full", "no_plan"} and (table["games"] == 2).all()
    for _, pair in table.groupby("variant"):
        assert abs(pair["win_rate"].sum() - 1) < 1e-9  # one side wins each game
        assert (pair["ci_low"] <= pair["win_rate"]).all() and (pair["win_rate"] <= pair["ci_high"]).all()
    assert "full" in result.output and "95% CI" in result.output and "QER Mor/Ass" in result.output
    assert "diff vs reference, 95% CI, p" in result.output and "Newcombe" in result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("no_plan") and " good " in x]
    assert " p=" in line and "%]" in line.split("games")[-1]  # no_plan's difference from full, printed
    # the paper's Figure 3a beside ours, for the reference variant only (ours plays good: no Figure 2 row)
    (fig3,) = [x for x in result.output.splitlines() if x.startswith("Fig. ")]
    assert "Leader Approval Rate of good leaders" in fig3 and "> 80.0%" in fig3 and " full " in fig3
    assert {"qer_Morgana", "fvr_Assassin"} <= set(table.columns)


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_experience_flows_forward_within_a_series_and_never_across(tmp_path):
    variants = load_experiments(write(tmp_path, CONFIG.split("variants:")[0]))
    out = tmp_path / "run"
    asyncio.run(run_experiment(variants, out))
    initial = {role.value: role_card(role)["strategy"] for role in Role}  # the default cards: the paper's
    for series in (1, 2):
        root = out / "main" / f"series-{series}"
        store = ExperienceStore(root / "experience" / "ours")
        learned = store.collection.get(where={"kind": "strategy"})
        assert learned["ids"] and {m["game"] for m in learned["metadatas"]} <= {1, 2}
        first = read_trace(root / "game-00001")
        second = read_trace(root / "game-00002")
        roles2 = read_result(root / "game-00002").roles
        # game 1 of every series starts from the role cards' initial strategies
        for call in (r for r in first if r.type == "llm_call" and r.stage == "module"):
            role = read_result(root / "game-00001").roles[call.seat].value
            assert f"Strategy: {initial[role]}" in call.messages[0].content
        # game 2 plays with what game 1 taught that role, in this series' store
        # two seats of one role (the Loyal Servants) both learn; the store hands on the higher seat's lesson
        taught = sorted((m["seat"], m["role"], doc) for doc, m in zip(learned["documents"], learned["metadatas"])
                        if m["game"] == 1)
        from_game1 = {role: doc for _, role, doc in taught}
        checked = 0
        for call in (r for r in second if r.type == "llm_call" and r.stage == "module"):
            role = roles2[call.seat].value
            if role in from_game1:
                assert f"Strategy: {from_game1[role]}" in call.messages[0].content
                checked += 1
        assert checked


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_the_last_game_of_a_series_learns_only_when_asked(tmp_path):
    base = CONFIG.split("variants:")[0].replace("\nseries: 2", "\nseries: 1")
    for flag, learned_from in ((False, {1}), (True, {1, 2})):
        variants = load_experiments(write(tmp_path, base + f"learn_after_last: {str(flag).lower()}\n"))
        out = tmp_path / f"run-{flag}"
        asyncio.run(run_experiment(variants, out))
        root = out / "main" / "series-1"
        store = ExperienceStore(root / "experience" / "ours")
        assert {m["game"] for m in store.collection.get(where={"kind": "strategy"})["metadatas"]} == learned_from
        last = [r.purpose.label for r in read_trace(root / "game-00002") if r.type == "llm_call"]
        first = [r.purpose.label for r in read_trace(root / "game-00001") if r.type == "llm_call"]
        assert "experience" in first
        assert ("experience" in last) == flag


def digest(game: Path) -> dict[str, str]:
    return {f: hashlib.sha256((game / f).read_bytes()).hexdigest() for f in FILES}


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_stopped_run_resumes_where_it_stopped(tmp_path):
    """In this process: a run capped at 3 games, then the same run again, finishes the other 5 and leaves the
    first 3 byte for byte as they were (kill -9 between two processes: the slow test below)."""
    variants = load_experiments(write(tmp_path))
    out = tmp_path / "run"
    asyncio.run(run_experiment(variants, out, max_games=3))
    finished = {g: digest(g) for g in out.glob("*/series-*/game-*") if is_done(g)}
    assert len(finished) == 3
    asyncio.run(run_experiment(variants, out))
    games = sorted(out.glob("*/series-*/game-*"))
    assert len(games) == 8 and all(is_done(g) for g in games)
    assert all(digest(g) == before for g, before in finished.items()), "finished games untouched"
    assert (results_table(out)["games"] == 4).all()


@pytest.mark.slow
def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path):
    config = write(tmp_path, CONFIG.replace("games_per_series: 2", "games_per_series: 3"))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "avalon_agents.cli", "run", str(config), "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and sum(is_done(g) for g in out.glob("*/series-*/game-*")) < 3:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = {g: digest(g) for g in out.glob("*/series-*/game-*") if is_done(g)}
    assert 3 <= len(finished) < 12, "killed mid-way"
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    games = sorted(out.glob("*/series-*/game-*"))
    assert len(games) == 12 and all(is_done(g) for g in games)
    assert all(digest(g) == before for g, before in finished.items()), "finished games untouched"
    table = results_table(out)
    assert table.groupby("variant")["games"].first().to_dict() == {"full": 6, "no_plan": 6}
    for store_dir in out.glob("*/series-*/experience/ours"):  # finished games' experience only, once each
        metas = ExperienceStore(store_dir).collection.get(where={"kind": "strategy"})["metadatas"]
        stored: dict[tuple[int, str], int] = {}
        for m in metas:
            stored[(m["game"], m["role"])] = stored.get((m["game"], m["role"]), 0) + 1
        seats: dict[tuple[int, str], int] = {}  # seats ours played per (game, role)
        for n in (1, 2, 3):
            game = store_dir.parent.parent / f"game-{n:05d}"
            roles = read_result(game).roles
            for seat, name in json.loads((game / SEATING).read_text())["agents"].items():
                if name == "ours":
                    key = (n, roles[int(seat)].value)
                    seats[key] = seats.get(key, 0) + 1
        assert stored and all(count <= seats.get(key, 0) for key, count in stored.items()), (stored, seats)


def test_one_limit_covers_every_client_of_a_model(tmp_path):
    from avalon_agents.experiments.runner import series_setups
    from avalon_agents.llm import ClientPool, ModelSettings

    clients = ClientPool(limit=3)
    agents = clients.get(ModelSettings(spec="scripted"))
    extractor = clients.get(ModelSettings(spec="scripted", temperature=0.0, max_tokens=64))
    assert agents is not extractor and agents._slots is extractor._slots
    assert clients.get(ModelSettings(spec="scripted", temperature=0.3)) is agents  # the same complete settings
    exp = load_experiments(write(tmp_path))["full"]
    setups = series_setups(exp, tmp_path / "series-1", clients)
    module = ModelSettings(temperature=0.9).over(setups["ours"].settings)  # a module with its own temperature
    module_client = clients.get(module)
    assert module_client is clients.get(ModelSettings(spec="scripted", temperature=0.9))
    assert module_client._slots is agents._slots


PLUGIN_MODULE = '''
from avalon_agents.modules import Module, register_module


@register_module("quiet_analysis")
class QuietAnalysis(Module):  # an analysis without a model call
    slot = "analysis"

    async def run(self, turn):
        turn.slots.analysis = "nothing to add"
'''

PLUGIN_CONFIG = """\
name: plugged
model: scripted
plugins: [my_modules.py]
agents:
  ours: {kind: cognitive, modules: {analysis: {use: quiet_analysis}}, model: {temperature: 0.6}}
  bots: {kind: rulebot}
sides: {good: ours, evil: bots}
"""


def plugged(tmp_path) -> Path:
    (tmp_path / "my_modules.py").write_text(PLUGIN_MODULE)
    return write(tmp_path, PLUGIN_CONFIG)


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_config_names_its_plugins_and_the_run_uses_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path.parent)  # plugins are found relative to the config file, not the working folder
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["run", str(plugged(tmp_path)), "--out", str(out)])
    assert result.exit_code == 0, result.output
    (game,) = out.glob("main/series-1/game-*")
    records = read_trace(game)
    analyses = [r for r in records if r.type == "module" and r.slot == "analysis"]
    assert analyses and all(r.module == "quiet_analysis" and r.text == "nothing to add" for r in analyses)
    assert not any(r.type == "llm_call" and r.name == "analysis" for r in records)
    assert {r.settings["temperature"] for r in records if r.type == "llm_call" and r.stage == "module"} == {0.6}
    assert json.loads((out / EXPERIMENT).read_text())["plugins"][0].endswith("my_modules.py")


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_run_json_gives_the_results_per_variant_and_side(tmp_path):
    result = CliRunner().invoke(cli, ["run", str(write(tmp_path)), "--out", str(tmp_path / "run"), "--max-games", "2",
                                      "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    rows = {(r["variant"], r["side"]) for r in summary["results"]}
    assert rows == {(v, s) for v in ("full", "no_plan") for s in ("good", "evil")}
    assert all(r["ci_high"] > r["ci_low"] and r["healthy"] for r in summary["results"])
    for r in summary["results"]:  # wins and the health counts behind the shares
        assert r["wins"] == round(r["win_rate"] * r["games"]) and 0 <= r["wins"] <= r["games"]
        assert r["decisions"] > 0 and r["valid_response_rate"] == 1.0 and r["failed_calls"] == r["fallbacks"] == 0
    for r in summary["results"]:  # each variant against the first: the difference, its interval, its p-value
        assert r["vs_variant"] == "full"
        if r["variant"] == "no_plan":
            assert r["diff_ci_low"] <= r["diff"] <= r["diff_ci_high"] and r["diff_ci_high"] > r["diff_ci_low"]
            assert 0 <= r["diff_p_value"] <= 1
        else:
            assert r["diff"] is None and r["diff_p_value"] is None
    (fig3,) = summary["paper_figures"]
    assert (fig3["figure"], fig3["paper"], fig3["variant"]) == ("3a", 0.80, "full") and fig3["value"] is not None
    assert set(summary["health"]) == {"full", "no_plan"} and summary["aborted"] == []
    assert summary["provenance"].startswith("produced by: models scripted; rules official; role cards paper; "
                                            "extractor scripted at T=0; experiment tiny (config ")
    assert "decisions: " in summary["provenance"] and "off: plan) in no_plan" in summary["provenance"]
    assert "fingerprint" in summary["provenance"] and "2 of 8 planned games finished" in summary["provenance"]
