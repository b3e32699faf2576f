"""`avalon import avalonlogs`: avalongame.online logs replayed through the engine into game directories."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from avalon_agents.analysis.humans import players
from avalon_agents.analysis.load import load_run
from avalon_agents.analysis.paper import metrics
from avalon_agents.cli import cli
from avalon_agents.core.types import EndReason, Role
from avalon_agents.importers import NO_SPEECH, ReplayError, avalonlogs
from avalon_agents.records import LAYOUT, open_run, read_events, read_result
from avalon_agents.records.run_dir import EVENTS, HEALTH, META, RESULT, SEATING, TRACE
from avalon_agents.records.run_record import RUN
from tests.importers import logs

GAMES = {"paper6": logs.paper6(), "five_rejections": logs.five_rejections(), "mordred": logs.mordred_assassin(),
         "no_merlin": logs.no_merlin(), "good_fails": logs.good_fails()}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    for name, log in GAMES.items():
        (root / f"{name}.json").write_text(json.dumps(log))
    (root / "corrupt.json").write_text('{"players": [')
    unfinished = logs.paper6()
    del unfinished["outcome"]
    (root / "unfinished.json").write_text(json.dumps(unfinished))
    return root


@pytest.fixture(scope="module")
def run(folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "humans"
    result = CliRunner().invoke(cli, ["import", "avalonlogs", str(folder), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, result.output


def game(out, file: str):
    """The imported game directory of a log file."""
    return next(p.parent for p in out.rglob(META) if json.loads(p.read_text())["source"]["file"] == file)


def test_the_command_reports_imports_and_each_skip_with_its_reason(run):
    out, output = run
    lines = output.strip().splitlines()
    assert lines[0] == "imported 4 of 7 game(s) from avalonlogs"  # the report every importer prints
    skipped = dict(line.removeprefix("skipped ").split(": ", 1) for line in lines[1:])
    assert set(skipped) == {"corrupt.json", "good_fails.json", "unfinished.json"}
    assert skipped["corrupt.json"].startswith("corrupt JSON")
    assert "quest 1.1: the rules refuse it (good cannot fail: seat 2" in skipped["good_fails.json"]
    assert skipped["unfinished.json"].startswith("unfinished game")
    # the games, and the lock the import held
    assert sorted(p.name for p in out.iterdir()) == [".lock", *(f"game-{i:05d}" for i in range(1, 5)), RUN]
    assert open_run(out).command == "import" and open_run(out).record.config == {"format": "avalonlogs"}


def test_an_imported_game_is_a_played_games_directory(run):
    out, _ = run
    path = game(out, "paper6.json")
    assert sorted(p.name for p in path.iterdir()) == [EVENTS, HEALTH, META, RESULT, SEATING, TRACE]
    meta = json.loads((path / META).read_text())
    assert meta["layout"] == LAYOUT and meta["source"] == {"format": "avalonlogs", "file": "paper6.json"}
    assert meta["seats"] == {str(s): "human" for s in range(1, 7)}
    assert meta["rules"]["name"] == "official" and meta["rules"]["first_leader"] == 1
    seating = json.loads((path / SEATING).read_text())
    assert seating["variant"] == "avalonlogs" and set(seating["agents"].values()) == {"human"}
    result = read_result(path)
    assert result.reason is EndReason.MERLIN_ASSASSINATED and result.assassination_target == 1
    assert result.roles[6] is Role.ASSASSIN and result.assassin == 6  # the Minion with the token
    assert [q.success for q in result.quests] == [True, False, True, True] and result.proposals == 5
    events = read_events(path)
    speeches = [e for e in events if e.type == "speech"]
    assert len(speeches) == 6 * 5 and {e.text for e in speeches} == {NO_SPEECH}


def test_the_end_of_each_kind_of_game(run):
    out, _ = run
    five = read_result(game(out, "five_rejections.json"))
    assert five.reason is EndReason.FIVE_REJECTIONS and five.quests == () and five.proposals == 5
    mordred = read_result(game(out, "mordred.json"))
    meta = json.loads((game(out, "mordred.json") / META).read_text())
    assert meta["rules"]["assassin"] == "Mordred" and meta["rules"]["first_leader"] == 3
    assert mordred.assassin == 6 and mordred.assassination_target == 2
    assert mordred.reason is EndReason.ASSASSIN_MISSED
    assert (mordred.quests[3].fails, mordred.quests[3].success) == (1, True)  # two fails needed with 7 players
    plain = read_result(game(out, "no_merlin.json"))
    assert plain.reason is EndReason.THREE_SUCCESSES and plain.assassin is None
    assert plain.assassination_target is None and Role.MINION in plain.roles.values()
    assert (plain.quests[3].fails, plain.quests[3].success) == (2, False)


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_analyze_computes_the_metrics_of_an_imported_run(run, tmp_path):
    out, _ = run
    result = CliRunner().invoke(cli, ["analyze", str(out), "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert "4 game(s)" in result.output
    data = load_run(out)
    assert set(data.seats["kind"]) == {"human"} and set(data.games["variant"]) == {"avalonlogs"}
    paper = data.games[data.games["path"] == str(game(out, "paper6.json"))]["game"].iloc[0]
    one = type(data)(**{name: t[t["game"] == paper] if "game" in t else t for name, t in data.tables().items()})
    qer = metrics.quest_engagement(one).set_index("role")["value"]
    # by hand from the fixture: 4 quests went; A on 4, B on 3, C and D on 2 each, E on none, F on 1
    assert qer.to_dict() == {"Assassin": 0.25, "Loyal Servant": 0.5, "Merlin": 1.0, "Morgana": 0.0,
                             "Percival": 0.75}
    assert players.paper_six(one) and not players.paper_six(data)
    table = players.human_table(one)
    engagement = table[table["measure"] == "quest_engagement"].set_index("role")
    assert engagement.loc["Merlin", "value"] == 1.0 and engagement.loc["Merlin", "humans"] == 0.547
    failure = table[table["measure"] == "failure_vote_rate"].set_index("role")
    assert failure.loc["Assassin", "value"] == 1.0 and failure.loc["Assassin", "n"] == 1
    approve = table[table["measure"] == "approve_rate"].set_index("role")
    assert approve.loc["Morgana", "value"] == pytest.approx(2 / 5)  # E approved 2 of the 5 teams: 2.1 and 4.1
    written = (tmp_path / "a" / "metrics" / "quest_engagement.csv").read_text()
    assert "Merlin" in written


@pytest.mark.parametrize("edit, reason", [
    (lambda g: g["missions"][1]["proposals"][0].update(proposer="C"),
     "quest 2.1: Player 3 proposes, but the leader is Player 2"),
    (lambda g: g["missions"][0]["proposals"][0].update(state="REJECTED"),
     "quest 1.1: 4 of 6 approve, so the rules approve the team; the log says REJECTED"),
    (lambda g: g["outcome"].update(state="GOOD_WIN"),
     "outcome: the rules give evil the game (merlin_assassinated); the log says GOOD_WIN"),
    (lambda g: g["outcome"].update(assassinated=None),
     "unfinished game: good won three quests, but no assassination is logged"),
    (lambda g: g["missions"][0].update(numFails=1), "mission 1: 0 fail card(s) make it a success; the log says "
                                                    "SUCCESS with 1 fail(s)"),
    (lambda g: g["outcome"]["votes"][0].pop("B"),
     "quest 1.1: quest cards recorded for seats [1], but the team is [1, 2]"),
    (lambda g: g["outcome"]["roles"][4].update(role="WIZARD"), "roles: unknown role 'WIZARD'"),
    (lambda g: g["outcome"]["roles"][4].update(role="LOYAL FOLLOWER"), "roles: 5 good and 1 evil roles"),
    (lambda g: g["missions"][3]["proposals"][0]["team"].append("Z"), "team: 'Z' is not a player of this game"),
    (lambda g: g["missions"][0].update(teamSize=3), "mission 1: team size 3 and 1 fail(s) required; the official "
                                                    "rules for 6 players take 2 and 1"),
    (lambda g: g.pop("players"), "malformed log: missing field 'players'"),
])
def test_a_log_the_rules_refuse_is_refused_with_its_reason(edit, reason):
    log = logs.paper6()
    avalonlogs.replay_log(log)  # the fixture itself is accepted
    edit(log)
    with pytest.raises(ReplayError) as exc:
        avalonlogs.replay_log(log)
    assert str(exc.value).startswith(reason)


def test_user_mistakes_are_one_line_errors(folder, tmp_path, run):
    out, _ = run
    runner = CliRunner()
    missing = runner.invoke(cli, ["import", "avalonlogs", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert missing.exit_code == 2 and "dir:" in missing.output and "Traceback" not in missing.output
    (tmp_path / "empty").mkdir()
    empty = runner.invoke(cli, ["import", "avalonlogs", str(tmp_path / "empty"), "--out", str(tmp_path / "o")])
    assert empty.exit_code == 2 and "holds no game logs" in empty.output
    again = runner.invoke(cli, ["import", "avalonlogs", str(folder), "--out", str(out)])
    assert again.exit_code == 2 and "already holds games" in again.output
    no_out = runner.invoke(cli, ["import", "avalonlogs", str(folder)])
    assert no_out.exit_code == 2 and "--out" in no_out.output


def test_the_empty_speeches_of_an_imported_game_are_not_judged(run, tmp_path):
    from avalon_agents.analysis.judges.run import Judge

    out, _ = run
    data = load_run(out)
    assert len(data.speeches) > 0 and set(data.speeches["text"]) == {NO_SPEECH}
    judge = Judge(client=None, cache_dir=None)
    assert judge.tasks(data) == []
    spoken = data.speeches.assign(text=["I trust Player 2."] * len(data.speeches))
    assert len(judge.tasks(type(data)(**{**data.tables(), "speeches": spoken}))) > 0  # spoken ones are judged
