"""The order-bias study: a pair's games differ in wording only, the measures are counted from the events, the
difference's interval resamples whole pairs (never zero width; from fewer than 5 pairs widened to Newcombe's and
flagged), and the command resumes, refuses a changed config and prints one line for a bad one."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from click.testing import CliRunner

from avalon_agents.analysis.stats import newcombe
from avalon_agents.cli import cli
from avalon_agents.core.events import EVENT_ADAPTER
from avalon_agents.experiments.bias import (
    BOOTSTRAP_PAIRS,
    TABLE,
    WIDENED,
    compare,
    game_counts,
    load_bias,
    run_study,
    table_lines,
)
from avalon_agents.experiments.guard import ConfigChanged
from avalon_agents.formats import difference_text
from avalon_agents.llm import ModelSettings
from avalon_agents.llm.loopback import openai_server
from avalon_agents.records import LLMCall, read_events
from avalon_agents.records.run_dir import EVENTS, META, SEATING, read_trace

CONFIG = """\
name: b
model: scripted
players: 5
agents: {vanilla: {kind: llm}, bot: {kind: rulebot}}
seats: [vanilla, vanilla, bot, vanilla, bot]
lists: [players, speeches, seats]
games: 2
seed: 11
concurrency: 2
"""


def _prompts(game) -> list[str]:
    return [r.messages[-1].content for r in read_trace(game) if isinstance(r, LLMCall)]


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_pair_differs_in_wording_only_and_the_study_resumes(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(CONFIG)
    cfg = load_bias(path)
    out = tmp_path / "out"
    found = run_study(cfg, out, ModelSettings(spec="scripted"), config_path=path)
    fixed, players, speeches = (out / d / "game-00011" for d in ("fixed", "players", "speeches"))
    # the same deal and leaders; the treated game lists the seats the other way round and records it
    assert read_events(fixed)[:2] == read_events(players)[:2]
    assert json.loads((players / META).read_text())["orders"]["player_order"] == [5, 4, 3, 2, 1]
    assert _prompts(fixed)[0] != _prompts(players)[0]
    # the vanilla agent summarizes no speeches: reversing their listing changes nothing, byte for byte
    assert (fixed / EVENTS).read_bytes() == (speeches / EVENTS).read_bytes()
    summary = found["summary"]
    assert set(summary["list"]) == {"players", "speeches", "seats"}
    assert set(summary["agent"]) == {TABLE, "vanilla", "bot"}
    # seats: the same deal, the agents the other way round (the bots now on seats 1 and 3)
    seated = json.loads((out / "seats" / "game-00011" / META).read_text())["seats"]
    assert [seated[k] for k in sorted(seated, key=int)] == ["rulebot", "llm", "rulebot", "llm", "llm"]
    assert read_events(out / "seats" / "game-00011")[0] == read_events(fixed)[0]
    # an agent moved to other seats leads from them: its picks from the low seats are no order effect there
    assert not ((summary["list"] == "seats") & (summary["measure"] == "team_low_seats")).any()
    seating = json.loads((out / "seats" / "game-00011" / SEATING).read_text())
    assert seating["variant"] == "seats" and seating["agents"]["1"] == "bot" and seating["agents"]["5"] == "vanilla"
    assert ((summary["list"] == "seats") & (summary["measure"] == "wins")).sum() == 2
    for row in summary.to_dict("records"):
        assert row["ci_low"] < row["ci_high"], row  # never zero width
        assert -1 <= row["ci_low"] and row["ci_high"] <= 1
        if row["list"] == "speeches":
            assert row["fixed_k"] == row["treated_k"] and row["diff"] == 0 and row["method"] == WIDENED
        assert row["few_pairs"]  # two pairs: flagged, and said so in the report
    assert "few pairs" in (out / "bias.md").read_text()
    tested = summary.dropna(subset=["p_value"])
    assert len(tested) and (tested["q_value"] >= tested["p_value"] - 1e-12).all()  # BH never lowers a p
    assert (out / "bias.md").read_text().count("| players |") == len(summary[summary["list"] == "players"])
    assert json.loads((out / "bias.json").read_text())["provenance"]["models"] == ["scripted"]
    # a rerun plays nothing again; a changed config is refused, naming what changed
    stamp = (fixed / EVENTS).stat().st_mtime_ns
    run_study(cfg, out, ModelSettings(spec="scripted"), config_path=path)
    assert (fixed / EVENTS).stat().st_mtime_ns == stamp
    with pytest.raises(ConfigChanged, match="seed"):
        run_study(cfg.model_copy(update={"seed": 3}), out, ModelSettings(spec="scripted"))


def test_measures_are_counted_from_the_events():
    revealed = {"type": "votes_revealed", "team": [1, 2], "approve_count": 0, "reject_count": 0, "approved": False}
    rows = [
        {"type": "team_proposed", "quest": 1, "attempt": 1, "leader": 1, "team": [1, 4]},
        {**revealed, "quest": 1, "attempt": 1, "approvals": [1, 2], "rejections": [3, 4, 5]},
        {"type": "team_proposed", "quest": 1, "attempt": 2, "leader": 2, "team": [1, 2]},
        {"type": "vote_cast", "quest": 1, "attempt": 2, "seat": 1, "approve": True},
        {"type": "vote_cast", "quest": 1, "attempt": 2, "seat": 3, "approve": False},
        {**revealed, "quest": 1, "attempt": 2, "approvals": [], "rejections": []},
        {"type": "team_proposed", "quest": 2, "attempt": 1, "leader": 1, "team": [1, 2, 5], "assigned": True},
        {"type": "game_ended", "quest": 2, "attempt": 1, "winner": "evil", "reason": "three_fails",
         "roles": {"1": "Merlin", "2": "Assassin", "3": "Loyal Servant", "4": "Minion of Mordred", "5": "Percival"}},
    ]
    events = [EVENT_ADAPTER.validate_python({"seq": i, **row}) for i, row in enumerate(rows)]
    counts = game_counts(events, {"a": [1, 3], "b": [2, 4, 5]}, 5)
    assert counts[(TABLE, "approve")] == (3, 7)
    assert counts[("a", "approve")] == (2, 4) and counts[("a", "first_vote_approve")] == (1, 2)
    assert counts[("a", "team_low_seats")] == (0, 1)  # seat 4 picked; the assigned team is not a choice
    assert counts[("b", "team_low_seats")] == (1, 1)  # seat 2 picked seat 1
    assert counts[(TABLE, "good_wins")] == (0, 1) and ("a", "good_wins") not in counts
    assert counts[("a", "wins")] == (0, 2) and counts[("b", "wins")] == (2, 3)  # seats 2 and 4 are evil


def test_the_difference_interval_resamples_pairs():
    pairs = [((1, 2), (2, 2)), ((0, 2), (2, 2)), ((1, 2), (1, 2)), ((0, 2), (1, 2)), ((1, 2), (2, 2)),
             ((0, 2), (1, 2))]
    found = compare(pairs)
    assert found["method"] == BOOTSTRAP_PAIRS and not found["few_pairs"]
    assert found["diff"] == pytest.approx(9 / 12 - 3 / 12)  # the pooled rates' difference, as printed
    assert found["ci_low"] < found["diff"] < found["ci_high"] and 0 < found["p_value"] < 1
    assert compare(pairs) == found  # seeded: the same pairs, the same interval and p
    same = compare([((1, 2), (1, 2)), ((2, 4), (2, 4))])  # every difference 0: no spread to resample
    assert same["method"] == WIDENED and same["ci_low"] < 0 < same["ci_high"] and same["p_value"] == 1
    wide = compare([((0, 1), (1, 1)), ((1, 1), (0, 1)), ((0, 1), (1, 1))])
    assert -1 <= wide["ci_low"] and wide["ci_high"] <= 1  # cut to the possible differences


def test_one_pair_is_flagged_too_few_and_never_significant():
    """`cognitive wins +100.0 [+20.6, +100.0]` from one pair (its seats counted as independent trials) was
    printed as a result: now the row says few pairs, the p-value of one pair is 1 and the table says why."""
    one = compare([((0, 3), (3, 3))])
    assert one["few_pairs"] and one["method"] == WIDENED and one["p_value"] == 1.0
    # the floor: one game a side is one trial a side, and the interval holds no difference
    assert (one["ci_low"], one["ci_high"]) == pytest.approx((newcombe(1, 1, 0, 1)[0], 1.0))
    assert one["ci_low"] < 0 < one["ci_high"]
    lines = table_lines(pd.DataFrame([{"list": "seats", "agent": "cognitive", "measure": "wins", **one,
                                       "q_value": 1.0}]))
    assert lines[1].endswith("few pairs") and any(line.startswith("few pairs: fewer than 5") for line in lines)
    shown = difference_text(one["diff"], one["ci_low"], one["ci_high"])  # formats': '+100% [-21%, +100%]'
    assert re.fullmatch(r"[+-]\d+% \[[+-]\d+%, [+-]\d+%\]", shown) and f" {shown}  1.000  1.000  few pairs" in lines[1]


def test_seats_of_one_game_are_not_independent_trials():
    """Ten pairs whose three seats win or lose together: resampling pairs gives a wider interval than Newcombe's
    over the 30 seats of each condition, which would count them as independent."""
    games = [((3 * (i % 2), 3), (3 * (i % 3 > 0), 3)) for i in range(10)]
    found = compare(games)
    pooled = newcombe(found["treated_k"], found["treated_n"], found["fixed_k"], found["fixed_n"])
    assert not found["few_pairs"] and found["ci_high"] - found["ci_low"] > 1.2 * (pooled[1] - pooled[0])


@pytest.mark.parametrize("edit, field", [
    ("seats: [vanilla, vanilla, bot, vanilla, bot]", "seats: [vanilla, ghost, bot, vanilla, bot]"),
    ("seats: [vanilla, vanilla, bot, vanilla, bot]", "seats: [vanilla, bot]"),
    ("lists: [players, speeches, seats]", "lists: [teams]"),
    ("games: 2", "games: 0"),
])
def test_a_bad_config_is_one_line_naming_the_field(tmp_path, edit, field):
    path = tmp_path / "b.yaml"
    path.write_text(CONFIG.replace(edit, field))
    result = CliRunner().invoke(cli, ["bias", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    message = result.output.strip().splitlines()[-1]
    assert field.split(":")[0] in message and "Traceback" not in result.output


def test_the_command_prints_the_table_and_health(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(CONFIG.replace("lists: [players, speeches, seats]", "lists: [options]")
                    .replace("games: 2", "games: 1"))
    result = CliRunner().invoke(cli, ["bias", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "produced by: models scripted" in result.output and "1 pairs" in result.output
    assert "options   table        approve" in result.output and "valid response rate 100.0%" in result.output
    assert "few pairs: fewer than 5 pairs" in result.output  # one pair: said so under the table
    assert (tmp_path / "out" / "bias.csv").is_file()


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_study_over_its_health_limits_exits_3(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(CONFIG.replace("lists: [players, speeches, seats]", "lists: [options]")
                    .replace("games: 2", "games: 1"))
    with openai_server(fault_rate=0.25, faults=("500",), seed=5) as server:
        result = CliRunner().invoke(cli, ["bias", str(path), "--model", f"openai-compatible:m@{server.base_url}",
                                          "--retries", "0", "--out", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("health:"))
    assert "UNHEALTHY" in line and "calls failed (" in line
    report = (tmp_path / "out" / "bias.md").read_text()
    assert line.split("  UNHEALTHY")[0] in report  # the report carries the same health line
