"""Run health: a broken run never looks like a result. Failed calls, re-asks and fallbacks are counted beside
the results; a run over its thresholds is marked and exits 3; a model that refuses its first calls stops the
run at once with one line quoting the server."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.llm.loopback import openai_server
from avalon_agents.records.run_dir import ABORTED, HEALTH

CONFIG = """\
name: health
model: {{spec: "openai-compatible:m@{url}", retries: 0}}
agents:
  ours: {{kind: llm}}
  bots: {{kind: rulebot}}
sides: {{good: ours, evil: bots}}
series: 1
games_per_series: 2
{extra}"""


def run(tmp_path, server, extra: str = "", name: str = "c.yaml"):
    path = tmp_path / name
    path.write_text(CONFIG.format(url=server.base_url, extra=extra))
    return CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / name.replace(".yaml", ""))])


def test_a_wrong_key_stops_the_run_at_once_with_the_servers_words(tmp_path):
    with openai_server(fault_rate=1.0, faults=("401",)) as server:
        result = run(tmp_path, server)
        asked = len(server.state.requests)
    assert result.exit_code == 3
    assert "Incorrect API key provided" in result.output and "refused the first calls" in result.output
    assert asked < 10  # not a game of fallbacks
    assert not list((tmp_path / "c").glob("*/series-*/game-*/result.json"))  # nothing counted as a result


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_game_over_the_failed_call_share_is_aborted_not_counted(tmp_path):
    """A quarter of the calls fail: each game is over the 5% limit, so it is no result: aborted with the reason,
    never counted, replayed on resume; the command exits 3."""
    with openai_server(fault_rate=0.25, faults=("500",), seed=5) as server:
        result = run(tmp_path, server)
    assert result.exit_code == 3, result.output
    assert "aborted: main/series-1 game 1:" in result.output and "LLM calls failed (ServerError" in result.output
    assert not list((tmp_path / "c").glob("main/series-*/game-*/result.json"))
    [aborted] = (tmp_path / "c").glob("main/series-1/game-*/aborted.json")
    assert "limit 5%" in json.loads(aborted.read_text())["reason"]
    assert (aborted.parent / HEALTH).is_file()  # its health is kept beside the reason


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_too_many_fallbacks_mark_the_variant_and_exit_3(tmp_path):
    """Every call is answered, but with nothing an extractor can read: the decisions fall back more than the run
    allows, and the variant is marked unhealthy beside its results."""
    with openai_server(reply=lambda body: "hmm, let me think") as server:
        result = run(tmp_path, server)
    assert result.exit_code == 3, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("main: health:"))
    assert "UNHEALTHY" in line and "fell back" in line
    assert "unhealthy variant(s), not results: main" in result.output
    assert "! over the variant's health limits" in result.output  # the results table marks the cells
    assert any(line.startswith("main ") and "% !" in line for line in result.output.splitlines())


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_thresholds_are_set_in_the_config(tmp_path):
    with openai_server(fault_rate=0.25, faults=("500",), seed=5) as server:
        result = run(tmp_path, server, "health: {max_failed_calls: 0.6, max_fallbacks: 1.0}\n")
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("main: health:"))
    assert "UNHEALTHY" not in line and " failed (" in line


def test_play_prints_health_and_exits_3_when_unhealthy(tmp_path):
    with openai_server(fault_rate=0.25, faults=("500",), seed=5) as server:
        spec = f"openai-compatible:m@{server.base_url}"
        result = CliRunner().invoke(cli, ["play", "--seats", "llm", "--model", spec, "--retries", "0", "--json"])
    assert result.exit_code == 3
    summary = json.loads(result.stdout.splitlines()[0])
    assert summary["health"]["healthy"] is False and summary["usage"]["failed_calls"] > 0
    assert sum(summary["usage"]["failed_by_cause"].values()) == summary["usage"]["failed_calls"]


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_game_without_progress_is_aborted_not_counted_and_replayed(tmp_path):
    """A server that stops answering: the watchdog ends the game as aborted (with the reason), nothing counts,
    the command exits 3, and a rerun once the server answers again replays it."""
    from avalon_agents.records import is_done

    with openai_server(latency=2.0) as server:  # every answer comes too late for the watchdog
        result = run(tmp_path, server, "watchdog_s: 0.5\n")
        assert result.exit_code == 3 and "aborted (no progress" in result.output
        games = sorted((tmp_path / "c").glob("main/series-1/game-*"))
        assert len(games) == 1 and not is_done(games[0])  # the series stopped at its first game
        assert "no progress for 0.5 s" in json.loads((games[0] / ABORTED).read_text())["reason"]
        server.state.latency = 0.0  # the server is back
        again = run(tmp_path, server, "watchdog_s: 0.5\n")
    assert again.exit_code == 0, again.output
    assert all(is_done(g) for g in (tmp_path / "c").glob("main/series-1/game-*"))
    assert not (games[0] / ABORTED).exists()


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_timeout_and_retries_on_the_command_line_reach_every_call(tmp_path):
    from avalon_agents.records import LLMCall, read_trace

    with openai_server() as server:
        path = tmp_path / "c.yaml"
        path.write_text(CONFIG.format(url=server.base_url, extra="games_per_series: 1\n").replace(
            "games_per_series: 2\n", ""))
        result = CliRunner().invoke(cli, ["run", str(path), "--out", str(tmp_path / "c"), "--timeout", "7.5",
                                          "--retries", "1"])
    assert result.exit_code == 0, result.output
    (game,) = (tmp_path / "c").glob("main/series-1/game-*")
    calls = [r for r in read_trace(game) if isinstance(r, LLMCall)]
    assert calls and {(c.settings["timeout"], c.settings["retries"]) for c in calls} == {(7.5, 1)}


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_a_server_that_dies_mid_run_stops_it_and_nothing_it_broke_counts(tmp_path):
    """After answering for a while the server fails every call: the run stops within the game it was playing
    (ten failed calls in a row), exit 3; that game is not counted; with the server back a rerun finishes it."""
    from avalon_agents.llm.loopback import scripted_reply

    answer = scripted_reply()
    with openai_server() as server:
        def reply(body):
            if len(server.state.requests) > 60:  # about two games in, it dies
                server.state.fault_rate, server.state.faults = 1.0, ("500",)
            return answer(body)

        server.state.reply = reply
        config = CONFIG.replace("games_per_series: 2", "games_per_series: 4")
        path = tmp_path / "c.yaml"
        path.write_text(config.format(url=server.base_url, extra=""))
        args = ["run", str(path), "--out", str(tmp_path / "c")]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 3, result.output
        assert "failed one after another" in result.output
        done = list((tmp_path / "c").glob("main/series-1/game-*/result.json"))
        assert len(done) == 1  # the first game (46 calls) finished; the server died in the second
        assert not (tmp_path / "c" / "main/series-1/game-00002/result.json").exists()
        for game in done:  # what counted was played while the server answered
            assert json.loads((game.parent / HEALTH).read_text())["failed_calls"] == 0
        server.state.fault_rate = 0.0
        server.state.reply = answer
        again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert len(list((tmp_path / "c").glob("main/series-1/game-*/result.json"))) == 4
