"""LLM-judged behavior: the judges over a scripted run, the disk cache, lenient reading, and the summaries."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import pandas as pd
import pytest
from click.testing import CliRunner

from avalon_agents.analysis.judges.cache import CACHE_FILE
from avalon_agents.analysis.judges.context import knowledge_text, roles_in_game
from avalon_agents.analysis.judges.labels import ATTITUDES, CAMOUFLAGE_LABELS
from avalon_agents.analysis.judges.registry import JUDGES
from avalon_agents.analysis.judges.run import Judge, judge_run
from avalon_agents.analysis.judges.speeches import (
    parse_camouflage,
    parse_self_recommendation,
    parse_sharing,
    parse_teamwork,
)
from avalon_agents.analysis.load import load_run
from avalon_agents.analysis.paper.behavior import camouflage_shares, sharing_rates, teamwork_matrix, vacillation
from avalon_agents.analysis.stats import wilson
from avalon_agents.cli import cli
from avalon_agents.llm import LLMClient, ModelSettings
from avalon_agents.llm.scripted import ScriptedChatModel

SPEAKER = re.compile(r"The speaker is Player (\d+)")


def share_columns(labels) -> list[str]:
    return [c for label in labels for c in (label, f"{label}_low", f"{label}_high")]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    result = CliRunner().invoke(cli, ["play", "--seats", "cognitive", "--model", "scripted", "--out", str(out),
                                      "--games", "1"])
    assert result.exit_code == 0, result.output
    return load_run(out)


def client(model: ScriptedChatModel) -> LLMClient:
    return LLMClient(settings=ModelSettings(spec="scripted", temperature=0, retries=0), model=model)


def night(data, game: str, seat: int, known_as: str) -> list[int]:
    e = data.events
    rows = e[(e["type"] == "night_info") & (e["game"] == game) & (e["seat"] == seat) & (e["known_as"] == known_as)]
    return sorted(int(s) for seats in rows["seats"] for s in seats)


# ------------------------------------------------------------------------------------------------ end to end


def test_scripted_judge_end_to_end(run, tmp_path):
    seen: list[tuple[int, int]] = []
    j = judge_run(run, client=client(ScriptedChatModel(seed=3)), cache_dir=tmp_path,
                  progress=lambda done, total: seen.append((done, total)))
    for name, frame in j.tables().items():
        assert list(frame.columns) == list(JUDGES[name].columns)
        assert frame["valid"].all() and not frame["cached"].any() and frame["raw"].notna().all()

    first = run.speeches[run.speeches["quest"] == 1]
    camo = j.camouflage
    assert sorted(zip(camo["game"], camo["seq"])) == sorted(zip(first["game"], first["seq"]))
    assert set(camo["label"]) <= set(CAMOUFLAGE_LABELS)
    assert camo.merge(run.seats, on=["game", "seat"], suffixes=("", "_seat")).eval("role == role_seat").all()

    team = j.teamwork
    assert len(team) > 0 and (team["target"] != team["seat"]).all()
    assert set(team["label"]) <= set(ATTITUDES)
    truth = run.seats.rename(columns={"seat": "target", "role": "true_role", "side": "true_side"})
    merged = team.merge(truth[["game", "target", "true_role", "true_side"]], on=["game", "target"])
    assert len(merged) == len(team)
    assert (merged["target_role"] == merged["true_role"]).all() and (merged["target_side"] == merged["true_side"]).all()
    assert set(team["seq"]) <= set(run.speeches["seq"]) and set(team["quest"]) > {1}  # every quest's speeches

    share = j.sharing
    spoken = first[first["role"].isin(["Merlin", "Percival"])]
    assert len(share) == len(spoken) > 0 and set(share["role"]) == {"Merlin", "Percival"}
    for row in share.itertuples():
        known_as = "evil" if row.role == "Merlin" else "merlin_or_morgana"
        assert row.known == night(run, row.game, row.seat, known_as)
        assert set(row.shared) <= set(row.known)
        assert row.share_rate == len(row.shared) / len(row.known)

    recommend = j.self_recommendation
    assert sorted(zip(recommend["game"], recommend["seq"])) == sorted(zip(run.speeches["game"], run.speeches["seq"]))
    assert set(recommend["recommends_self"]) == {True, False}  # the scripted judge answers both ways

    total = len(camo) + 2 * len(run.speeches) + len(share)
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert [d for d, _ in seen] == list(range(total + 1))


def test_a_run_without_speeches_gives_empty_tables(run):
    seen = []
    empty = dataclasses.replace(run, speeches=run.speeches.iloc[:0])
    j = judge_run(empty, client=client(ScriptedChatModel()), cache_dir=None, progress=lambda *a: seen.append(a))
    assert seen == [(0, 0)]
    for name, frame in j.tables().items():
        assert frame.empty and list(frame.columns) == list(JUDGES[name].columns)
    assert camouflage_shares(j.camouflage).empty and vacillation(j.teamwork).empty


# ------------------------------------------------------------------------------------------------ the cache


def test_a_rerun_makes_no_call_and_reads_everything_from_the_cache(run, tmp_path):
    first_model = ScriptedChatModel(seed=1)
    first = judge_run(run, client=client(first_model), cache_dir=tmp_path)
    judged = len(first.camouflage) + 2 * len(run.speeches) + len(first.sharing)
    assert len(first_model.calls) == judged
    lines = (tmp_path / CACHE_FILE).read_text().splitlines()
    assert len(lines) == judged
    entry = json.loads(lines[0])
    assert {"key", "judge", "prompt_id", "prompt_hash", "model", "raw", "parsed"} <= set(entry)

    again_model = ScriptedChatModel(seed=2)  # would answer differently, if it were asked
    again = judge_run(run, client=client(again_model), cache_dir=tmp_path)
    assert again_model.calls == []
    for name, frame in again.tables().items():
        assert frame["cached"].all()
        pd.testing.assert_frame_equal(frame.drop(columns="cached"), first.tables()[name].drop(columns="cached"))


def test_a_half_written_line_is_skipped_and_redone(run, tmp_path):
    judge_run(run, client=client(ScriptedChatModel()), cache_dir=tmp_path)
    path = tmp_path / CACHE_FILE
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # killed in the middle of a write

    model = ScriptedChatModel()
    judgments = judge_run(run, client=client(model), cache_dir=tmp_path)
    assert len(model.calls) == 1
    assert sum(not frame["cached"].all() for frame in judgments.tables().values()) == 1

    model = ScriptedChatModel()
    judge_run(run, client=client(model), cache_dir=tmp_path)
    assert model.calls == []  # the redone judgment was stored on a line of its own


def test_no_cache_dir_keeps_nothing(run, tmp_path):
    model = ScriptedChatModel()
    judge = Judge(client=client(model), cache_dir=None, concurrency=2)
    tasks = judge.tasks(run)
    judge_run(run, client=client(model), cache_dir=None)
    judge_run(run, client=client(model), cache_dir=None)
    assert len(model.calls) == 2 * len(tasks)
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------------------------ unreadable answers


def test_garbage_answers_give_invalid_rows(run, tmp_path):
    model = ScriptedChatModel(respond=lambda messages, kwargs: "Hmm, hard to tell, honestly.")
    j = judge_run(run, client=client(model), cache_dir=tmp_path)
    camo, team, share = j.camouflage, j.teamwork, j.sharing
    assert len(camo) and not camo["valid"].any() and camo["label"].isna().all()
    assert len(team) == len(run.speeches)  # one row per speech, no target
    assert not team["valid"].any() and team["target"].isna().all() and team["label"].isna().all()
    assert len(share) and not share["valid"].any() and share["shared"].isna().all() and share["share_rate"].isna().all()
    recommend = j.self_recommendation
    assert len(recommend) == len(run.speeches) and not recommend["valid"].any()
    assert recommend["recommends_self"].isna().all()
    assert (camo["raw"] == "Hmm, hard to tell, honestly.").all()
    # the summaries leave them out
    assert camouflage_shares(camo).empty and teamwork_matrix(team).empty and sharing_rates(share).empty
    assert vacillation(team).empty


def test_failed_calls_give_invalid_rows_and_are_not_cached(run, tmp_path):
    model = ScriptedChatModel(respond=lambda messages, kwargs: None)  # every call raises
    j = judge_run(run, client=client(model), cache_dir=tmp_path)
    assert not j.camouflage["valid"].any() and j.camouflage["raw"].isna().all()
    assert not j.teamwork["valid"].any()
    assert not (tmp_path / CACHE_FILE).exists() or (tmp_path / CACHE_FILE).read_text() == ""


# ------------------------------------------------------------------------------------------------ a judge we control


CAMO_BY_SEAT = {1: "self_disclosure", 2: "camouflage", 3: "withholding", 4: "camouflage", 5: "withholding",
                6: "self_disclosure"}


def controlled(messages, kwargs) -> str:
    """Camouflage: by the speaker's seat. Teamwork: trust the next seat, distrust the one after, in free text.
    Sharing: the lowest known seat, as "Player N" strings. Self-recommendation: odd seats do, in free text."""
    prompt = str(messages[-1].content)
    me = int(SPEAKER.search(prompt).group(1))
    name = kwargs["response_format"]["json_schema"]["name"]
    if name == "judge_camouflage":
        return json.dumps({"reason": "by seat", "label": CAMO_BY_SEAT[me]})
    if name == "judge_teamwork":
        nxt, after = me % 6 + 1, (me + 1) % 6 + 1
        return f"Player {nxt}: trust\nPlayer {after} - distrust\nPlayer {me}: trust\n"  # own seat: ignored
    if name == "judge_self_recommendation":
        return f"Recommends self: {'yes' if me % 2 else 'no'}."
    assert name == "judge_sharing"
    known = kwargs["response_format"]["json_schema"]["schema"]["properties"]["shared"]["items"]["enum"]
    return 'Here you go: {"reason": "x", "shared": ["Player %d", 99]}' % min(known)


def test_a_controlled_judge_gives_exactly_its_labels(run):
    j = judge_run(run, client=client(ScriptedChatModel(respond=controlled)), cache_dir=None)
    assert j.camouflage["valid"].all()
    assert list(j.camouflage["label"]) == [CAMO_BY_SEAT[s] for s in j.camouflage["seat"]]

    team = j.teamwork
    assert team["valid"].all() and len(team) == 2 * len(run.speeches)
    for _, rows in team.groupby(["game", "seq"]):
        me = int(rows["seat"].iloc[0])
        assert dict(zip(rows["target"], rows["label"])) == {me % 6 + 1: "trust", (me + 1) % 6 + 1: "distrust"}

    share = j.sharing
    assert share["valid"].all()
    assert [s for s in share["shared"]] == [[min(k)] for k in share["known"]]
    assert (share["share_rate"] == 0.5).all()  # Merlin sees two evil seats, Percival two candidates (6 players)

    recommend = j.self_recommendation
    assert recommend["valid"].all() and list(recommend["recommends_self"]) == [s % 2 == 1 for s in recommend["seat"]]


def test_parsing_is_lenient_but_never_guesses():
    assert parse_camouflage('{"label": "Self-Disclosure", "reason": "r"}')["label"] == "self_disclosure"
    assert parse_camouflage("Label: camouflage.")["label"] == "camouflage"
    assert parse_camouflage("withholding or camouflage?") == {"label": None, "reason": None, "valid": False}
    assert parse_camouflage('{"label": "sneaky"}')["valid"] is False
    assert parse_teamwork('{"Player 2": "trust", "3": "Not mentioned", "player_4": "??"}', [2, 3, 4, 5]) == {
        "attitudes": {"2": "trust", "3": "not_mentioned", "4": None, "5": "not_mentioned"}, "valid": True}
    assert parse_teamwork('{"attitudes": {"Player 1": "distrust"}}', [1])["attitudes"] == {"1": "distrust"}
    assert parse_teamwork("Player 10: distrust", [1, 2])["valid"] is False  # never "Player 1" inside "Player 10"
    assert parse_sharing('{"shared": [5, 2, 7]}', [2, 5])["shared"] == [2, 5]
    assert parse_sharing("None of it.", [2, 5])["shared"] == []
    assert parse_sharing("no idea", [2, 5])["valid"] is False
    assert parse_sharing('{"shared": "Player 2"}', [2, 5])["valid"] is False
    assert parse_self_recommendation('{"reason": "r", "recommends_self": true}') == {
        "recommends_self": True, "reason": "r", "valid": True}
    assert parse_self_recommendation('{"recommends_self": "No"}')["recommends_self"] is False
    assert parse_self_recommendation("recommends_self: yes")["recommends_self"] is True
    assert parse_self_recommendation(" False. ")["recommends_self"] is False
    assert parse_self_recommendation("no idea, maybe yes")["valid"] is False  # never guessed from loose words
    assert parse_self_recommendation('{"recommends_self": "perhaps"}')["valid"] is False


def test_context_comes_from_the_records():
    assert knowledge_text([("evil", (5, 2))]) == "Players 2 and 5 are evil (but not which evil role each has)."
    assert knowledge_text([("merlin_or_morgana", (4, 1))]).startswith("One of Players 1 and 4 is Merlin")
    assert knowledge_text([]) == "Nothing beyond their own role."
    roles = ["Loyal Servant", "Assassin", "Merlin", "Loyal Servant", "Morgana", "Percival"]
    assert roles_in_game(roles) == "Merlin, Percival, 2 Loyal Servants, Morgana, Assassin"


# ------------------------------------------------------------------------------------------------ summaries


def test_camouflage_shares_by_hand():
    camo = pd.DataFrame({
        "variant": ["v"] * 6,
        "agent": ["a", "a", "a", "a", "b", "b"],
        "role": ["Merlin", "Merlin", "Merlin", "Morgana", "Merlin", "Merlin"],
        "label": ["self_disclosure", "self_disclosure", "withholding", "camouflage", "camouflage", None],
        "valid": [True, True, True, True, True, False],
        "game": ["g1"] * 6,
    })
    out = camouflage_shares(camo).set_index(["variant", "agent", "role"])
    assert list(out.columns) == [*share_columns(CAMOUFLAGE_LABELS), "n", "games", "few_games"]
    labels = [*CAMOUFLAGE_LABELS, "n"]
    assert out.loc[("v", "a", "Merlin"), labels].tolist() == pytest.approx([2 / 3, 0, 1 / 3, 3])
    assert out.loc[("v", "a", "Morgana"), labels].tolist() == [0, 1, 0, 1]
    assert out.loc[("v", "b", "Merlin"), labels].tolist() == [0, 1, 0, 1]  # the invalid row is left out
    low, high = out.loc[("v", "a", "Merlin"), ["self_disclosure_low", "self_disclosure_high"]]
    assert low <= wilson(2, 3)[0] and high >= wilson(2, 3)[1]  # one game: at least the pooled Wilson interval
    assert out["few_games"].all() and (out["games"] == 1).all()
    by_role = camouflage_shares(camo, by="role").set_index("role")
    assert by_role.loc["Merlin", "n"] == 4 and by_role.loc["Merlin", "self_disclosure"] == 0.5


def test_judged_shares_are_per_variant_with_intervals_never_zero_wide():
    camo = pd.DataFrame({"variant": ["full", "full", "full", "ablated"], "agent": ["a"] * 4, "role": ["Merlin"] * 4,
                         "label": ["camouflage", "camouflage", "camouflage", "withholding"], "valid": [True] * 4,
                         "game": ["g1", "g2", "g3", "g4"]})
    out = camouflage_shares(camo).set_index("variant")
    assert out.loc["full", "camouflage"] == 1 and out.loc["full", "n"] == 3  # not pooled with "ablated"
    assert out.loc["ablated", "withholding"] == 1 and out.loc["ablated", "n"] == 1
    for label in CAMOUFLAGE_LABELS:  # 3 of 3, 0 of 3, 1 of 1, 0 of 1: none is a point
        assert (out[f"{label}_high"] > out[f"{label}_low"]).all()
        assert ((out[f"{label}_low"] <= out[label]) & (out[label] <= out[f"{label}_high"])).all()
    assert out.loc["full", "camouflage_low"] < 1 and out.loc["full", "withholding_high"] > 0


def teamwork_rows() -> pd.DataFrame:
    rows = [  # agent, speaker role, quest, target role, target side, label
        ("a", "Loyal Servant", 1, "Merlin", "good", "trust"),
        ("a", "Loyal Servant", 1, "Morgana", "evil", "trust"),
        ("a", "Loyal Servant", 1, "Assassin", "evil", "distrust"),
        ("a", "Loyal Servant", 2, "Assassin", "evil", "distrust"),
        ("a", "Loyal Servant", 2, "Percival", "good", "ambivalent"),
        ("a", "Percival", 1, "Merlin", "good", "trust"),
        ("a", "Percival", 1, "Morgana", "evil", "trust"),
        ("a", "Percival", 1, "Loyal Servant", "good", "distrust"),
        ("a", "Percival", 2, "Morgana", "evil", "distrust"),
        ("a", "Merlin", 1, "Morgana", "evil", "distrust"),
        ("a", "Merlin", 1, "Morgana", "evil", None),
    ]
    frame = pd.DataFrame(rows, columns=["agent", "role", "quest", "target_role", "target_side", "label"])
    return frame.assign(valid=frame["label"].notna(), variant="v", game="g1")


def test_teamwork_matrix_by_hand():
    out = teamwork_matrix(teamwork_rows()).set_index(["variant", "agent", "role", "target_role"])
    assert list(out.columns) == [*share_columns(ATTITUDES), "n", "games", "few_games"]
    labels = [*ATTITUDES, "n"]
    assert out.loc[("v", "a", "Loyal Servant", "Assassin"), labels].tolist() == [0, 1, 0, 2]
    assert out.loc[("v", "a", "Percival", "Morgana"), labels].tolist() == [0.5, 0.5, 0, 2]
    assert out.loc[("v", "a", "Merlin", "Morgana"), labels].tolist() == [0, 1, 0, 1]
    low, high = out.loc[("v", "a", "Percival", "Morgana"), ["trust_low", "trust_high"]]
    assert low <= wilson(1, 2)[0] and high >= wilson(1, 2)[1]
    assert len(out) == 8  # Loyal Servant: 4 target roles, Percival: 3, Merlin: 1
    two = pd.concat([teamwork_rows(), teamwork_rows().assign(variant="w", label="trust")])
    both = teamwork_matrix(two).set_index(["variant", "agent", "role", "target_role"])
    assert both.loc[("v", "a", "Loyal Servant", "Assassin"), "distrust"] == 1  # "w" trusts everyone: not pooled
    assert both.loc[("w", "a", "Loyal Servant", "Assassin"), "trust"] == 1 and len(both) == 16


def test_vacillation_by_hand():
    out = vacillation(teamwork_rows()).set_index(["variant", "agent", "role", "quest", "target_group"])
    labels = [*ATTITUDES, "n"]
    assert set(out.index.get_level_values("role")) == {"Loyal Servant", "Percival"}
    assert out.loc[("v", "a", "Loyal Servant", 1, "evil"), labels].tolist() == [0.5, 0.5, 0, 2]
    assert out.loc[("v", "a", "Loyal Servant", 1, "good"), labels].tolist() == [1, 0, 0, 1]
    assert out.loc[("v", "a", "Loyal Servant", 2, "good"), labels].tolist() == [0, 0, 1, 1]
    assert out.loc[("v", "a", "Percival", 1, "Merlin"), "trust"] == 1
    assert out.loc[("v", "a", "Percival", 2, "Morgana"), labels].tolist() == [0, 1, 0, 1]
    assert ("v", "a", "Percival", 1, "Loyal Servant") not in out.index  # Percival: only Merlin and Morgana
    assert out.loc[("v", "a", "Loyal Servant", 2, "evil"), labels].tolist() == [0, 1, 0, 1]
    assert (out["trust_high"] > out["trust_low"]).all()
    assert len(out) == 7  # Loyal Servant: 2 quests x good/evil; Percival: Merlin, Morgana in 1, Morgana in 2


def test_sharing_rates_by_hand():
    share = pd.DataFrame({
        "game": ["g1", "g1", "g1", "g2", "g2"],
        "seat": [1, 1, 2, 1, 3],
        "variant": ["v"] * 5,
        "agent": ["a"] * 5,
        "role": ["Merlin", "Merlin", "Percival", "Merlin", "Percival"],
        "known": [[2, 5], [2, 5], [1, 5], [3, 4], [1, 4]],
        "shared": [[2], [5], [], [3, 4], None],
        "share_rate": [0.5, 0.5, 0.0, 1.0, None],
        "valid": [True, True, True, True, False],
    })
    per_speech = sharing_rates(share).set_index(["variant", "agent", "role"])
    assert list(per_speech.columns) == ["share_rate", "ci_low", "ci_high", "n", "games", "few_games"]
    assert per_speech.loc[("v", "a", "Merlin"), ["share_rate", "n"]].tolist() == pytest.approx([2 / 3, 3])
    low, high = per_speech.loc[("v", "a", "Merlin"), ["ci_low", "ci_high"]]
    assert low <= wilson(4, 6)[0] and high >= wilson(4, 6)[1]  # two games: at least the pooled Wilson interval
    assert per_speech.loc[("v", "a", "Merlin"), ["games", "few_games"]].tolist() == [2, True]
    assert per_speech.loc[("v", "a", "Percival"), ["share_rate", "n"]].tolist() == [0, 1]
    assert per_speech.loc[("v", "a", "Percival"), "ci_high"] > 0  # 0 of 2 known seats: not a zero-width interval
    per_game = sharing_rates(share, unit="game").set_index(["variant", "agent", "role"])
    assert per_game.loc[("v", "a", "Merlin"), ["share_rate", "n"]].tolist() == [1, 2]  # g1: 2 and 5; g2: both
    assert math.isclose(sharing_rates(share, by="agent")["share_rate"].iloc[0], 0.5)
