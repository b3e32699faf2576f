"""Every command that writes games into a directory (`run`, `redteam`, `bias`, `play --out`) writes them through
the one game job (host/job.py) and guards the directory alike: the lock, the config fingerprint (a changed model
refused, naming what changed), finished games kept on a rerun, health.json with every finished game, and events
read back typed, whatever a speech holds. A run directory holding games of a layout this code does not read is
refused in one line by every command that reads or resumes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from avalon_agents.cli import cli
from avalon_agents.experiments.guard import run_lock
from avalon_agents.records import LAYOUT
from avalon_agents.records.run_dir import EVENTS, HEALTH, META, RESULT, read_events, read_meta, read_seating
from avalon_agents.records.walk import finished_games

RUN = """\
name: dirs
model: scripted
players: 5
agents: {a: {kind: llm}, b: {kind: rulebot}}
sides: {good: a, evil: b}
series: 1
games_per_series: 2
"""
REDTEAM = """\
name: dirs
model: scripted
players: 5
defended: {kind: llm}
attacker: {seat: 2, inner: {kind: llm}}
attacks: [host_vote_cancelled]
games: 1
seed: 3
"""
BIAS = """\
name: dirs
model: scripted
players: 5
agents: {a: {kind: llm}}
lists: [players]
games: 1
seed: 2
"""
COMMANDS = {
    "run": (RUN, lambda config, out: ["run", str(config), "--out", str(out)]),
    "redteam": (REDTEAM, lambda config, out: ["redteam", str(config), "--out", str(out)]),
    "bias": (BIAS, lambda config, out: ["bias", str(config), "--out", str(out)]),
    "play": (None, lambda config, out: ["play", "--players", "5", "--seats", "llm,rulebot,llm,rulebot,llm",
                                        "--model", "scripted", "--games", "2", "--out", str(out)]),
}


def _invoke(args: list[str]):
    return CliRunner().invoke(cli, args)


def _args(name: str, tmp_path: Path, out: Path) -> list[str]:
    text, make = COMMANDS[name]
    config = tmp_path / f"{name}.yaml"
    if text is not None:
        config.write_text(text)
    return make(config, out)


@pytest.mark.parametrize("name", [name if name == "run" else pytest.param(name, marks=pytest.mark.slow)
                                  for name in sorted(COMMANDS)])  # the fast suite: run's; every command: -m slow
def test_every_command_guards_its_directory_alike(name, tmp_path):
    out = tmp_path / "out"
    args = _args(name, tmp_path, out)
    first = _invoke(args)
    assert first.exit_code == 0, first.output
    games = finished_games(out)
    assert games, "no finished game written"
    for game in games:
        assert (game / HEALTH).is_file() and (game / RESULT).is_file()
        assert read_events(game)[-1].type == "game_ended"  # typed, through records only
        assert read_meta(game).seed is not None
        if name in ("run", "bias"):  # named agents: who sat where (play seats kinds; the red team's arms are dirs)
            assert read_seating(game) is not None
    stamps = {g: (g / RESULT).stat().st_mtime_ns for g in games}

    # the same config again: nothing is played again
    again = _invoke(args)
    assert again.exit_code == 0, again.output
    assert {g: (g / RESULT).stat().st_mtime_ns for g in games} == stamps

    # another model: refused, naming what changed, and nothing is touched
    other = [*args, "--model", "scripted:other"] if name != "play" else \
        [a if a != "scripted" else "scripted:other" for a in args]
    changed = _invoke(other)
    assert changed.exit_code == 2, changed.output
    assert "another config" in changed.output and "changed" in changed.output
    assert {g: (g / RESULT).stat().st_mtime_ns for g in games} == stamps

    # while another process holds the directory: refused in one line
    with run_lock(out):
        busy = _invoke(args)
    assert busy.exit_code == 2, busy.output
    assert "in use" in busy.output and "Traceback" not in busy.output


def test_a_speech_with_unicode_line_separators_reads_back_whole(tmp_path):
    """U+2028, U+2029 and U+0085 are no line ends for the run directory's readers (str.splitlines would split)."""
    out = tmp_path / "out"
    assert _invoke(_args("play", tmp_path, out)).exit_code == 0
    game = finished_games(out)[0]
    lines = (game / EVENTS).read_text().split("\n")
    speech = next(i for i, line in enumerate(lines) if '"type":"speech"' in line.replace(" ", ""))
    row = json.loads(lines[speech])
    row["text"] = "I trust\u2028Player 2\u2029and\u0085Player 3."
    lines[speech] = json.dumps(row, ensure_ascii=False)
    (game / EVENTS).write_text("\n".join(lines))
    events = read_events(game)
    assert events[speech].text == row["text"] and len(events) == len([x for x in lines if x.strip()])


@pytest.mark.parametrize(("config", "command", "belongs"), [
    ("experiments/tournament_bots.yaml", "run", "tournament"),
    ("experiments/redteam.yaml", "run", "redteam"),
    ("experiments/bias.yaml", "run", "bias"),
    ("experiments/quickstart.yaml", "tournament", "run"),
    ("experiments/quickstart.yaml", "redteam", "run"),
    ("experiments/bias.yaml", "redteam", "bias"),
    ("experiments/redteam.yaml", "bias", "redteam"),
    ("experiments/tournament_bots.yaml", "bias", "tournament"),
])
def test_a_config_given_to_the_wrong_command_names_its_command(config, command, belongs):
    path = Path(__file__).parents[2] / config
    result = _invoke([command, str(path), "--check"])
    assert result.exit_code == 2, result.output
    assert f"an `avalon {belongs}` config" in result.output and f"avalon {belongs} {path}" in result.output


def _commands(group, prefix=()):
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


def test_every_command_takes_json_and_every_study_takes_check():
    from avalon_agents.cli import cli

    options = {path: {o for p in command.params for o in p.opts} for path, command in _commands(cli)}
    assert len(options) >= 14
    assert [p for p, opts in options.items() if "--json" not in opts] == []
    studies = [("run",), ("tournament",), ("redteam",), ("bias",)]
    assert [p for p in studies if "--check" not in options[p]] == []


REPLAY_RUN = Path(__file__).parents[1] / "data" / "replay" / "run"


@pytest.mark.parametrize(("name", "make", "key"), [
    ("play", lambda tmp: ["play", "--games", "3"], "good_wins"),
    ("bench engine", lambda tmp: ["bench", "engine", "--games", "3"], "host_games_per_s"),
    pytest.param("tournament", lambda tmp: ["tournament", "experiments/tournament_bots.yaml", "--max-games", "5",
                                            "--out", str(tmp / "t")], "leaderboard", marks=pytest.mark.slow),
    ("redteam", lambda tmp: ["redteam", str(_write(tmp, REDTEAM)), "--out", str(tmp / "r")], "attacks"),
    ("bias", lambda tmp: ["bias", str(_write(tmp, BIAS)), "--out", str(tmp / "b")], "summary"),
    ("replay", lambda tmp: ["replay", str(REPLAY_RUN), "--out", str(tmp / "pages")], "replay"),
    pytest.param("analyze", lambda tmp: ["analyze", str(REPLAY_RUN), "--out", str(tmp / "a")], "headline",
                 marks=pytest.mark.slow),
])
def test_json_is_one_object_on_stdout(name, make, key, tmp_path, monkeypatch):
    monkeypatch.chdir(Path(__file__).parents[2])
    result = CliRunner().invoke(cli, [*make(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert key in found and found[key] not in (None, [], {}), found.keys()


def _write(tmp: Path, text: str) -> Path:
    path = tmp / "config.yaml"
    path.write_text(text)
    return path


def test_a_run_of_a_newer_layout_is_refused_in_one_line_and_a_layout_1_run_still_opens(tmp_path):
    """Every command that reads a run or resumes it refuses a game directory of a layout this code does not read
    (meta.json's `layout`), naming the directory and both layouts; games written before the layout was kept
    (no `layout`: layout 1) open as they did."""
    run = tmp_path / "run"
    shutil.copytree(REPLAY_RUN, run)
    game = run / "main" / "series-1" / "game-00001"
    meta = json.loads((game / META).read_text())
    meta.pop("layout", None)  # as recorded before the layout was kept
    (game / META).write_text(json.dumps(meta))
    opened = _invoke(["replay", str(run), "--out", str(tmp_path / "pages")])
    assert opened.exit_code == 0, opened.output
    assert read_meta(game).layout == 1

    (game / META).write_text(json.dumps({**meta, "layout": LAYOUT + 1}))
    line = (f"run-dir: {run} holds a game of layout {LAYOUT + 1} (main/series-1/game-00001); this version of "
            f"avalon_agents reads layouts 1 to {LAYOUT}: open it with the version that wrote it")
    stamp = (game / RESULT).stat().st_mtime_ns
    for args in (["analyze", str(run), "--out", str(tmp_path / "a")],
                 ["replay", str(run), "--out", str(tmp_path / "pages")],
                 ["run", str(REPLAY_RUN.parent / "config.yaml"), "--model", "scripted", "--out", str(run)]):
        refused = _invoke(args)
        assert refused.exit_code == 2, (args[0], refused.output)
        assert refused.output.strip().splitlines() == [f"Error: {line}"], args[0]
        assert "Traceback" not in refused.output
    assert (game / RESULT).stat().st_mtime_ns == stamp and not list(game.glob("attempt-*"))
