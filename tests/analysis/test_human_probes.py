"""`avalon probe-humans`: belief probes on imported human games (the tiny Avalon-NLU fixture; the real dataset
when it is on this machine), scored against the truth and against the players' stated beliefs."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from avalon_agents.analysis.humans.games import imported_games
from avalon_agents.analysis.stats import as_games, wilson
from avalon_agents.host.human_probes import probe_humans, seat_view
from avalon_agents.llm import ClientPool, ModelSettings, ScriptedChatModel
from avalon_agents.narrate import announce
from avalon_agents.records.trace import read_lines
from tests.helpers import avalon

FIXTURE = Path(__file__).parents[1] / "importers" / "avalon_nlu"
REAL = Path(__file__).parents[3] / "shared/data/avalon_nlu/dataset"
YOU = re.compile(r"You are Player (\d)")
ASSASSINATION = "the Assassin, names Player 4 as Merlin"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """The tiny fixture imported (Merlin 1, evil 3 and 5; beliefs: 1 says 5 is Morgana in quest 2, 4 says 1 is
    Merlin in quest 3, 3 says 4 is Merlin in quest 4)."""
    out = tmp_path_factory.mktemp("hprobe") / "run"
    done = avalon("import", "avalon-nlu", str(FIXTURE), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


def fresh(run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("probes-humans"))
    return copy


def answer(messages, kwargs) -> str:
    """Odd seats name 4 as Merlin, even seats 1; seats 3 and 6 look evil (0.9), 5 undecided (0.5), others 0.1."""
    seat = int(YOU.search(str(messages[0].content)).group(1))
    p = {3: 0.9, 6: 0.9, 5: 0.5}
    evil = {str(s): p.get(s, 0.1) for s in range(1, 7) if s != seat}
    return json.dumps({"merlin": 4 if seat % 2 else 1, "evil": evil})


def scripted(respond=None):
    model = ScriptedChatModel(respond=respond) if respond else ScriptedChatModel()
    return ClientPool(models={"scripted": model}).get(ModelSettings(spec="scripted")), model


def test_the_command_prints_and_writes_a_row_per_quest_with_wilson_intervals(tiny_run, tmp_path):
    run = fresh(tiny_run, tmp_path)
    done = avalon("probe-humans", str(run), "--model", "scripted")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Produced by: model scripted") and "1 imported game(s) of avalon-nlu" in lines[0]
    rows = [line.split()[0] for line in lines[2:7]]
    assert rows == ["1", "2", "3", "4", "all"]
    assert all(re.search(r"\d\.\d\d \[\d\.\d\d, \d\.\d\d\] \(n=\d+\)", line) for line in lines[2:7])
    assert lines[-1].startswith("24 probes (24 asked now")
    out = run / "probes-humans"
    report = (out / "report.md").read_text()
    assert "Produced by: model scripted" in report and "prompt probes/belief" in report
    table = [line for line in report.splitlines() if re.match(r"\| (\d|all) \|", line)]
    assert [line.split("|")[1].strip() for line in table[:5]] == ["1", "2", "3", "4", "all"]
    assert all(re.search(r"\[\d\.\d\d, \d\.\d\d\]", line) for line in table[:5])
    quests = pd.read_csv(out / "quests.csv")
    assert list(quests["quest"].astype(str)) == ["1", "2", "3", "4", "all"]
    assert (quests["merlin_accuracy_high"] > quests["merlin_accuracy_low"]).all()
    assert len(pd.read_csv(out / "probes.csv")) == 24  # 6 seats x 4 quests
    calls = read_lines(out / "calls" / "game-00001.jsonl")
    assert len(calls) == 24 and {(c.type, c.stage, c.name, c.part) for c in calls} == {
        ("llm_call", "probe", "belief", "human_game")}
    assert {c.about["game"] for c in calls} == {"game-00001"}
    again = avalon("probe-humans", str(run), "--model", "scripted")
    assert again.stdout.splitlines()[-1].startswith("24 probes (0 asked now")  # every answer cached
    assert len(read_lines(out / "calls" / "game-00001.jsonl")) == 24
    assert again.stdout.splitlines()[:7] == lines[:7]


def test_each_seat_is_given_only_what_it_could_see_up_to_the_end_of_the_quest(tiny_run, tmp_path):
    run = fresh(tiny_run, tmp_path)
    client, model = scripted(answer)
    asyncio.run(probe_humans(run, client, concurrency=1))
    prompts = {}
    for call in model.calls:
        text = "\n".join(m["content"] for m in call["messages"])
        seat = int(YOU.search(text).group(1))
        quest = int(re.search(r"Quest (\d) is over", text).group(1))
        prompts[seat, quest] = text
    assert len(prompts) == 24
    game = imported_games(run)[0]
    night = {e.seat: announce(e, game.rules) for e in game.events if e.type == "night_info"}
    assert "Night: you see that Player 3 and Player 5 are evil" in night[1]
    for (seat, _), text in prompts.items():
        assert night[seat] in text
        assert not any(line in text for line in night.values() if line != night[seat])
    assert "You played a success card on quest 1" in prompts[2, 1]  # its own card
    assert "You played a" not in prompts[6, 1]  # nobody else's
    assert "You chose not to name Merlin yet" in prompts[3, 2]  # its pass after quest 1; nobody else sees one
    assert all("You chose not to name" not in t for (s, _), t in prompts.items() if s != 3)
    assert "let me go with player-5" not in prompts[1, 1] and "let me go with player-5" in prompts[1, 2]
    assert all(ASSASSINATION not in t for t in prompts.values())  # it came after quest 4's end
    view = seat_view(game.events, 6, game.quest_ends[0].seq)
    assert [e.type for e in view if e.type in ("quest_card", "night_info", "role_assigned")] == [
        "role_assigned", "night_info"]
    assert max(e.seq for e in view) == game.quest_ends[0].seq


def test_scores_against_the_truth_and_the_stated_beliefs_match_a_count_by_hand(tiny_run, tmp_path):
    run = fresh(tiny_run, tmp_path)
    client, _ = scripted(answer)
    result = asyncio.run(probe_humans(run, client))
    q = result.quests.set_index("quest")
    # Merlin (seat 1) asked of seats 2..6: even seats name 1, odd 4 -> 3 of 5 each quest
    assert list(q["merlin_accuracy_n"]) == [5, 5, 5, 5, 20] and list(q["merlin_accuracy"]) == [0.6] * 5
    # one game: its 20 answers are not 20 independent trials (stats.as_games)
    assert (q.loc["all", "merlin_accuracy_low"], q.loc["all", "merlin_accuracy_high"]) == pytest.approx(
        wilson(*as_games(12, 20, 1)))
    # evil (3, 5) asked of seats 2, 4, 6: 2 and 4 rank 3 and 6 top, 6 ranks 3 then 5 -> 1 of 3
    assert list(q["evil_accuracy_n"]) == [3, 3, 3, 3, 12] and list(q["evil_accuracy"]) == pytest.approx([1 / 3] * 5)
    assert q.loc["all", "brier"] == pytest.approx((0.218 + 0.218 + 0.058) / 3)
    # stated Merlin: none by quest 2; seat 4 says 1 (model at 4 says 1: agrees, true) from quest 3;
    # seat 3 says 4 (model at 3 says 4: agrees, false) in quest 4
    assert list(q["agree_merlin_n"]) == [0, 0, 1, 2, 3] and list(q["agree_merlin"].fillna(-1)) == [-1, -1, 1, 1, 1]
    assert list(q["human_merlin_accuracy"].fillna(-1)) == [-1, -1, 1.0, 0.5, pytest.approx(2 / 3)]
    # stated sides: 1 says 5 evil from quest 2 (model at 1: 0.5, agrees with neither); 4 says 1 good (0.1:
    # agrees) from quest 3; 3 says 4 good (0.1: agrees) in quest 4; every stated side is true
    assert list(q["agree_side_n"]) == [0, 1, 2, 3, 6] and list(q["agree_side"].fillna(-1)) == [
        -1, 0, 0.5, pytest.approx(2 / 3), 0.5]
    assert list(q["human_side_accuracy"].fillna(-1)) == [-1, 1, 1, 1, 1]
    probes = result.scored.set_index(["seat", "quest"])
    assert probes.loc[(3, 4), "stated_merlin"] == 4 and probes.loc[(4, 3), "stated_merlin"] == 1
    assert probes.loc[(1, 2), "stated_sides"] == {5: "evil"}
    roles = result.roles.set_index("role")
    assert roles.loc["Merlin", "probes"] == 4 and roles.loc["Merlin", "merlin_accuracy"] == 0.0  # seat 1 names 4


@pytest.mark.parametrize("case", ["played", "empty", "missing", "zero", "no-model"])
def test_mistakes_are_one_line_errors(tiny_run, tmp_path, case):
    if case == "played":
        run = tmp_path / "played"
        assert avalon("play", "--games", "1", "--out", str(run)).returncode == 0
        args, says = [str(run), "--model", "scripted"], "is not an imported human game"
    elif case == "empty":
        (tmp_path / "empty").mkdir()
        args, says = [str(tmp_path / "empty"), "--model", "scripted"], "no finished games"
    elif case == "missing":
        args, says = [str(tmp_path / "nowhere"), "--model", "scripted"], "is not a folder"
    elif case == "zero":
        args, says = [str(tiny_run), "--model", "scripted", "--games", "0"], "games: must be at least 1"
    else:
        args, says = [str(tiny_run)], "model: give the model"
    done = avalon("probe-humans", *args)
    assert done.returncode == 2, done.stdout
    assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr


@pytest.mark.slow  # seconds; the slow suite (CI) runs it
@pytest.mark.skipif(not REAL.is_dir(), reason="the Avalon-NLU dataset is not on this machine")
def test_the_scripted_floor_over_the_real_dataset(tmp_path):
    run = tmp_path / "nlu"
    assert avalon("import", "avalon-nlu", str(REAL), "--out", str(run)).returncode == 0
    done = avalon("probe-humans", str(run), "--model", "scripted", "--games", "2")
    assert done.returncode == 0, done.stderr
    assert "2 imported game(s)" in done.stdout
    client, _ = scripted()
    result = asyncio.run(probe_humans(run, client))
    assert len(result.games) == 17 and len(result.scored) == 420  # 70 quest ends x 6 seats
    assert result.scored["valid"].all()
    merlin = result.quests.set_index("quest").loc["all"]
    assert 0.05 < merlin["merlin_accuracy"] < 0.3  # a random guess among six: about 1 in 6
    assert merlin["human_merlin_accuracy_n"] > 100


def test_intervals_resample_whole_games_so_one_games_shared_talk_widens_them():
    from avalon_agents.analysis.humans.scores import RATES, by_quest

    # 8 games of 10 probes each; within a game every probe agrees (all hit or all miss): 40 of 80 trials, but
    # only 8 independent units
    rows = []
    for game in range(8):
        for _probe in range(10):
            row = {"game": f"g{game}", "quest": 1, "valid": True, "brier": 0.25}
            for hits, trials in RATES.values():
                row[hits], row[trials] = int(game % 2 == 0), 1
            rows.append(row)
    q = by_quest(pd.DataFrame(rows)).set_index("quest")
    low, high = q.loc["all", "merlin_accuracy_low"], q.loc["all", "merlin_accuracy_high"]
    w_low, w_high = wilson(40, 80)
    assert q.loc["all", "merlin_accuracy"] == 0.5 and low <= 0.5 <= high
    assert high - low > 1.5 * (w_high - w_low)  # far wider than the pooled trials' Wilson interval
