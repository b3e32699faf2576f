"""One format for numbers across commands (avalon_agents.formats): a rate as a whole percentage with its interval
and n, counts as integers, differences signed, provenance short and relative; report.md and `avalon analyze`'s
text show tables through it, `avalon play` its win rates with their interval; JSON keeps the numbers."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from click.testing import CliRunner

from avalon_agents.analysis.paper.report import headline_text, markdown_table, shown_table
from avalon_agents.cli import cli
from avalon_agents.formats import (count, difference_text, number, p_text, percent, provenance_text, rate_text,
                                   relative_paths)

NAN = float("nan")


def test_a_rate_is_a_whole_percentage_with_its_interval_and_n():
    assert rate_text(1 / 3, 0.163, 0.563, 18) == "33% [16%, 56%] n=18"
    assert rate_text(0.5) == "50%" and rate_text(NAN, NAN, NAN) == "n/a" and rate_text(None, nan="") == ""
    assert rate_text(0.25, 0.01, 0.88, 4.0) == "25% [1%, 88%] n=4"  # never 'n=4.0'
    assert count(5.0) == "5" and count(12000) == "12,000" and count(NAN) == "" and count(2.5) == "2.50"
    assert percent(0.421) == "42%" and percent(-0.05, signed=True) == "-5%" and percent(0, signed=True) == "+0%"
    assert number(88699.9) == "88,700" and number(0.049) == "0.049" and number(12.345) == "12.35" and number(5.0) == "5"
    assert p_text(0.0871) == "p=0.087" and p_text(0.0001) == "p<0.001" and p_text(0.5, "") == "0.500"
    assert difference_text(0.2, -0.15, 0.51) == "+20% [-15%, +51%]" and difference_text(NAN) == ""


def test_provenance_is_short_and_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = (f"config {tmp_path}/experiments/q.yaml, commit {'a1b2c3d4e5f6' + '0' * 28}+dirty, elsewhere /opt/x.yaml")
    assert provenance_text(line) == "config experiments/q.yaml, commit a1b2c3d4e5f6+dirty, elsewhere /opt/x.yaml"
    assert relative_paths("/opt/a/b/c.png") == "…/b/c.png"  # a figure's footer keeps the tail


HEADLINE = pd.DataFrame([
    {"variant": "full", "side": "good", "agents": "ours", "win_rate": 1 / 3, "ci_low": 0.163, "ci_high": 0.563,
     "ci_method": "wilson", "n": 18.0, "games": 18.0, "vs_variant": "full", "diff": NAN, "diff_ci_low": NAN,
     "diff_ci_high": NAN, "diff_p_value": NAN, "qer_Morgana": NAN},
    {"variant": "wo", "side": "good", "agents": "ours", "win_rate": 0.5, "ci_low": 0.3, "ci_high": 0.7,
     "ci_method": "wilson", "n": 18.0, "games": 18.0, "vs_variant": "full", "diff": 1 / 6, "diff_ci_low": -0.15,
     "diff_ci_high": 0.45, "diff_p_value": 0.5, "qer_Morgana": 0.4},
])


def test_tables_show_rates_with_intervals_counts_as_integers_and_blanks_for_none():
    shown = shown_table(HEADLINE)
    assert "ci_low" not in shown and "diff_ci_low" not in shown  # each interval is in its rate's cell
    assert list(shown.loc[0, ["win_rate", "n", "diff", "qer_Morgana"]]) == ["33% [16%, 56%]", "18", "", ""]
    assert list(shown.loc[1, ["diff", "diff_p_value", "qer_Morgana"]]) == ["+17% [-15%, +45%]", "0.500", "40%"]
    md = markdown_table(HEADLINE)
    assert "| full | good | ours | 33% [16%, 56%] | wilson | 18 | 18 | full |  |  |  |" in md
    assert "nan" not in md.lower() and "18.0" not in md
    text = headline_text(HEADLINE)
    assert "33% [16%, 56%]" in text and "+17% [-15%, +45%]" in text and "NaN" not in text and "0.33" not in text


def test_play_prints_each_sides_win_rate_with_its_interval_and_json_stays_numeric():
    out = CliRunner().invoke(cli, ["play", "--games", "4", "--seats", "rulebot", "--seed", "3"])
    assert out.exit_code == 0, out.output
    line = next(line for line in out.output.splitlines() if line.startswith("good wins"))
    good = int(line.split()[2].rstrip(":"))
    assert f"good wins {good}: {percent(good / 4)} [" in line and "n=4; evil wins" in line
    assert "{" not in out.output  # no dict reprs
    data = json.loads(CliRunner().invoke(cli, ["play", "--games", "4", "--seats", "rulebot", "--seed", "3",
                                               "--json"]).output)
    assert data["good_wins"] == good and isinstance(data["games"], int) and not math.isnan(data["games"])
    rate = data["win_rates"]["good"]  # the interval the text shows, beside the counts
    assert rate_text(rate["value"], rate["ci_low"], rate["ci_high"], rate["n"]) in line and rate["n"] == 4
    assert rate["ci_low"] <= rate["value"] == good / 4 <= rate["ci_high"]
    assert data["win_rates"]["evil"]["value"] == pytest.approx(1 - good / 4)
