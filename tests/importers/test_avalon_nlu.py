"""`avalon import avalon-nlu`: the dataset's games replayed through the rules, the chat as speeches, the human
labels as annotation records that load_run reads. A tiny game written in the dataset's format (tiny01.json)
and, when it is on this machine, the real dataset."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from avalon_agents.analysis import load_run
from avalon_agents.core import RuleSet
from avalon_agents.records import Annotation, read_events, read_result, read_trace
from avalon_agents.records.run_dir import IMPORT_REPORT, META
from tests.helpers import avalon
from tests.referee import referee

FIXTURE = Path(__file__).parent / "avalon_nlu"
REAL = Path(__file__).parents[3] / "shared/data/avalon_nlu/dataset"  # ../shared beside the repository


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("nlu") / "run"
    done = avalon("import", "avalon-nlu", str(FIXTURE), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["imported 1 of 1 game(s) from avalon-nlu",
                                            "annotations: 3 belief, 2 deception, 8 persuasion"]
    return out / "game-00001"


def test_the_tiny_game_is_a_legal_game_of_the_paper_rules_with_human_seats(tiny):
    meta = json.loads((tiny / META).read_text())
    rules = RuleSet.model_validate(meta["rules"])
    assert rules.name == "paper" and rules.first_leader == 2  # the log's first proposer leads first
    assert set(meta["seats"].values()) == {"human"}
    events = read_events(tiny)
    referee(events, rules)  # the independent referee agrees the log is legal
    result = read_result(tiny)
    assert (result.winner.value, result.reason.value) == ("good", "assassin_missed")
    assert [q.success for q in result.quests] == [True, True, False, True]
    teams = [e.team for e in events if e.type == "team_proposed"]
    assert teams == [(1, 2), (3, 5, 6), (1, 2, 4), (1, 2, 3, 5), (1, 2, 6)]  # 2.2: the leader's last proposal
    assert [(e.seat, e.success) for e in events if e.type == "quest_card" and e.quest == 3] == [
        (1, True), (2, True), (3, False), (5, True)]  # one fail, from the first evil seat
    declined = [e.quest for e in events if e.type == "assassination_declined"]
    assert declined == [1, 2, 3]  # the paper's Assassin may strike after any quest; these humans waited
    shot = next(e for e in events if e.type == "assassination")
    assert (shot.assassin, shot.target, shot.hit) == (3, 4, False)  # the assassin's stated belief: player-4
    inferred = meta["source"]["inferred"]
    assert [(i["what"], i.get("quest"), i.get("fails"), i.get("seat")) for i in inferred] == [
        ("quest_cards", 3, [3], None), ("assassination_target", None, None, 4)]


def test_the_chat_becomes_each_discussion_s_speeches_leader_first(tiny):
    speeches = [e for e in read_events(tiny) if e.type == "speech"]
    assert len(speeches) == 5 * 6  # one per seat in each of the five discussions
    first = [(e.seat, e.text) for e in speeches if (e.quest, e.attempt) == (1, 1)]
    assert first == [(2, "i'll take myself and player-1\nwe have no info yet"), (3, "fine by me"),
                     (4, ""), (5, ""), (6, ""), (1, "")]
    said = [(e.quest, e.attempt, e.seat, e.text) for e in speeches if e.text]
    assert said == [(1, 1, 2, "i'll take myself and player-1\nwe have no info yet"), (1, 1, 3, "fine by me"),
                    (2, 1, 3, "let me go with player-5 and player-6"), (2, 1, 1, "i don't like it"),
                    (2, 2, 4, "actually, swapping player-3 for player-2"), (3, 1, 5, "i want in"),
                    (4, 1, 6, "player-1, player-2 and player-4 look clean")]
    for speech, proposal in zip([e for e in speeches if e.seat == e.quest % 6 + 1 and e.attempt == 1],
                                [e for e in read_events(tiny) if e.type == "team_proposed" and e.attempt == 1]):
        assert speech.seq < proposal.seq  # the paper's order: discussion, then the proposal


def test_the_labels_are_annotations_beside_the_events(tiny):
    records = [r for r in read_trace(tiny) if isinstance(r, Annotation)]
    assert Counter(r.kind for r in records) == {"persuasion": 8, "deception": 2, "belief": 3}  # a duplicate row once
    events = read_events(tiny)
    second = next(r for r in records if r.message == "m05")
    assert (second.kind, second.label, second.seat, second.part, second.text) == (
        "persuasion", "assertion", 2, 1, "we have no info yet")
    assert events[second.seq].type == "speech" and events[second.seq].seat == 2
    assert events[second.seq].text.split("\n")[second.part] == second.text
    lies = sorted((r.seat, r.label, r.quest) for r in records if r.kind == "deception")
    assert lies == [(3, "commission", 1), (5, "influence", 3)]
    beliefs = sorted((r.seat, r.about_seat, r.label, r.quest, r.attempt) for r in records if r.kind == "belief")
    assert beliefs == [(1, 5, "morgana", 2, 1), (3, 4, "merlin", 4, 1), (4, 1, "merlin", 3, 1)]

    table = load_run(tiny.parent).annotations
    assert table["annotation"].value_counts().to_dict() == {"persuasion": 8, "belief": 3, "deception": 2}
    assert set(table["kind"]) == {"human"}  # the seat's agent kind, as in every table
    truth = table[table["annotation"] == "belief"].set_index("about_seat")["about_role"].to_dict()
    assert truth == {5: "Morgana", 4: "Percival", 1: "Merlin"}
    assert (table.loc[table["message"] == "m04", "role"] == "Assassin").all()


def write(folder: Path, name: str, data: dict) -> None:
    (folder / name).write_text(json.dumps(data))


def test_each_game_that_breaks_the_rules_is_skipped_with_its_reason(tmp_path):
    base = json.loads((FIXTURE / "tiny01.json").read_text())
    folder = tmp_path / "dataset"
    folder.mkdir()
    shutil.copy(FIXTURE / "tiny01.json", folder / "a_good.json")
    (folder / "b_corrupt.json").write_text('{"users": {')
    lead = json.loads(json.dumps(base))
    lead["messages"]["10"]["msg"] = "player-4 proposed a party: player-3, player-5, player-6"
    write(folder, "c_lead.json", lead)
    good_fails = json.loads(json.dumps(base))
    good_fails["messages"]["19"]["msg"] = "quest failed!"  # quest 2's team (1, 2, 4) holds no evil player
    write(folder, "d_good_fails.json", good_fails)
    unfinished = json.loads(json.dumps(base))
    for key in ("30", "31", "32"):
        del unfinished["messages"][key]
    write(folder, "e_unfinished.json", unfinished)
    miscounted = json.loads(json.dumps(base))
    miscounted["messages"]["13"]["msg"] = "vote succeeded! initiating quest vote!"  # 2 approvals of 6
    write(folder, "f_miscounted.json", miscounted)
    out = tmp_path / "run"
    done = avalon("import", "avalon-nlu", str(folder), "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "imported 1 of 6 game(s) from avalon-nlu"
    assert lines[1:6] == [
        "skipped b_corrupt.json: not valid JSON (Expecting property name enclosed in double quotes, line 1)",
        "skipped c_lead.json: quest 2.1: player-4 proposed a party, but the lead passes in seat order to "
        "player-3 (the log's lead leaves seat order)",
        "skipped d_good_fails.json: quest 2.2: the quest failed, but the team [1, 2, 4] holds 0 evil "
        "player(s) and the rules need 1 fail card(s)",
        "skipped e_unfinished.json: the log ends before the game does (no line says who won)",
        "skipped f_miscounted.json: quest 2.1: the log says the vote passed, but 2 of 6 approvals fail it"]
    report = json.loads((out / IMPORT_REPORT).read_text())
    assert report["imported"] == [{"file": "a_good.json", "game": "game-00001"}]
    assert [s["file"] for s in report["skipped"]] == ["b_corrupt.json", "c_lead.json", "d_good_fails.json",
                                                      "e_unfinished.json", "f_miscounted.json"]
    assert sorted(p.name for p in out.glob("game-*")) == ["game-00001"]  # a skipped game leaves nothing


def test_user_mistakes_are_one_line_errors(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for args, message in [
        ((str(empty), "--out", str(tmp_path / "r1")), f"error: dataset: {empty} holds no game logs"),
        ((str(tmp_path / "missing"), "--out", str(tmp_path / "r2")),
         f"error: dataset: {tmp_path / 'missing'} is not a folder"),
    ]:
        done = avalon("import", "avalon-nlu", *args)
        assert (done.returncode, done.stderr.strip()) == (2, message)
    assert avalon("import", "avalon-nlu", str(FIXTURE), "--out", str(tmp_path / "r3")).returncode == 0
    again = avalon("import", "avalon-nlu", str(FIXTURE), "--out", str(tmp_path / "r3"))
    assert (again.returncode, again.stderr.strip()) == (
        2, f"error: out: {tmp_path / 'r3'} already holds games; import into a new folder")


# ----------------------------------------------------------------- the real dataset

README_TOTALS = {"persuasion": 2405, "deception": 432, "belief": 485}
SKIPPED = {
    "3YjxjN.json": "quest 3.1: the quest failed, but the team [1, 3, 5, 6] holds 0 evil player(s)",
    "9avmeG.json": "quest 3.1: player-5 proposed a party, but the lead passes in seat order to player-4",
    "xbojag.json": "quest 2.1: player-3 proposed a party, but the lead passes in seat order to player-2",
}


@pytest.mark.skipif(not REAL.is_dir(), reason="the Avalon-NLU dataset is not on this machine "
                                              "(../shared/data/avalon_nlu/dataset)")
@pytest.mark.slow  # seconds; the slow suite (CI) runs it
def test_the_real_dataset_imports_and_analyzes(tmp_path):
    from avalon_agents.importers.avalon_nlu import read_log

    out = tmp_path / "run"
    done = avalon("import", "avalon-nlu", str(REAL), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "imported 17 of 20 game(s) from avalon-nlu"
    report = json.loads((out / IMPORT_REPORT).read_text())
    assert {s["file"]: s["reason"][:len(SKIPPED[s["file"]])] for s in report["skipped"]} == SKIPPED
    assert (out / "LICENSE-avalon-nlu").read_text().startswith("MIT License")

    # the README's totals are over all 20 files and count 21 duplicate label rows (identical mid and labels)
    raw: Counter[str] = Counter()
    for path in sorted(REAL.glob("*.json")):
        log = read_log(path)
        raw["persuasion"] += len(log.labels)
        raw["deception"] += sum(1 for row in log.labels if row["deception"])
        raw["belief"] += len(log.beliefs)
    assert raw == README_TOTALS
    kept: Counter[str] = Counter()
    for path in sorted(REAL.glob("*.json")):
        if path.name not in SKIPPED:
            log = read_log(path)
            rows = {(r["mid"], r["persuasion"], r["deception"]) for r in log.labels}
            kept.update(persuasion=len(rows), deception=sum(1 for r in rows if r[2]), belief=len(log.beliefs))
    assert kept == {"persuasion": 2182, "deception": 395, "belief": 444}
    assert report["annotations"] == dict(kept)

    data = load_run(out)
    assert len(data.games) == 17 and set(data.seats["kind"]) == {"human"}
    assert data.annotations["annotation"].value_counts().to_dict() == dict(kept)
    chat = sum(len([m for m in read_log(p).messages if m.seat]) for p in sorted(REAL.glob("*.json"))
               if p.name not in SKIPPED)
    assert data.speeches["text"].str.split("\n").map(len)[data.speeches["text"] != ""].sum() == chat
    for game in sorted(out.glob("game-*")):
        referee(read_events(game), RuleSet.model_validate(json.loads((game / META).read_text())["rules"]))

    analyzed = avalon("analyze", str(out), "--out", str(tmp_path / "analysis"))
    assert analyzed.returncode == 0, analyzed.stderr
    assert "17 game(s)" in analyzed.stdout and (tmp_path / "analysis" / "report.md").is_file()
