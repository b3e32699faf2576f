"""Self-recommendation as the paper measured it (6.2): a judge over every discussion speech, success counted from
the team that went, against values counted by hand from the records in tests/analysis/records.py.

Each speech there is the leader's "I propose [..]." (after the team is proposed). The judge below says a
speaker recommends themself when their seat is in the team they name. By hand (variant "full", games A and B):

  Merlin (1):        A Q1 [1, 3] went -> on it;            B Q1 [1, 2] rejected, no quest went -> not
  Percival (2):      A Q2a1 [2, 3, 5] rejected, Q2 went at attempt 2 with [1, 2, 3] -> on it (not at its attempt)
                     B [2, 3] -> not
  Loyal Servants:    A Q2a2 3 on [1, 2, 3] went; A Q3 4 on [1, 4, 5, 6] went; B 3 and 4 -> not
  Morgana (5):       A Q4 [1, 2, 3] does not recommend herself; B [5, 6] -> not
  Assassin (6):      never speaks
Variant "other" holds game A alone.
"""

from __future__ import annotations

import json
import re

import pytest

from avalon_agents.analysis.judges.run import Judge, judge_run
from avalon_agents.analysis.load import load_run
from avalon_agents.analysis.paper.behavior import self_recommendation, went_on_quest
from avalon_agents.analysis.stats import wilson
from avalon_agents.llm import LLMClient, ModelSettings
from avalon_agents.llm.scripted import ScriptedChatModel
from tests.analysis.records import game_a, write_game, write_run

SPEAKER = re.compile(r"The speaker is Player (\d+)")
TEAM = re.compile(r"I propose \[([\d, ]+)\]")


def by_team(messages, kwargs) -> str:
    prompt = str(messages[-1].content)
    assert kwargs["response_format"]["json_schema"]["name"].startswith("judge_")
    me = int(SPEAKER.search(prompt).group(1))
    team = {int(s) for s in TEAM.search(prompt).group(1).split(",")}
    return json.dumps({"reason": "named in the team", "recommends_self": me in team})


def client(model: ScriptedChatModel) -> LLMClient:
    return LLMClient(settings=ModelSettings(spec="scripted", temperature=0, retries=0), model=model)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = write_run(tmp_path_factory.mktemp("run"))
    agents = {s: "ours" if s < 5 else "theirs" for s in range(1, 7)}
    write_game(root / "other" / "series-1" / "game-00001", *game_a(), agents, variant="other", index=1)
    return load_run(root)


@pytest.fixture(scope="module")
def judged(data):
    return judge_run(data, client=client(ScriptedChatModel(respond=by_team)), cache_dir=None).self_recommendation


def row(frame, **where):
    for column, wanted in where.items():
        frame = frame[frame[column] == wanted]
    assert len(frame) == 1, frame
    return frame.iloc[0]


def test_every_speech_is_judged_with_its_round(judged, data):
    assert len(judged) == len(data.speeches) == 5 + 5 + 5 and judged["valid"].all()
    assert (judged["leader"] == judged["seat"]).all()  # each speech in these records is the leader's
    assert list(judged[judged["variant"] == "other"]["recommends_self"]) == [True, True, True, True, False]


def test_the_prompt_names_the_round_from_the_events(data):
    tasks = [t for t in Judge(client=client(ScriptedChatModel()), cache_dir=None).tasks(data)
             if t.judge == "self_recommendation"]
    second = next(t for t in tasks if t.row["variant"] == "full" and t.row["game_index"] == 1
                  and (t.row["quest"], t.row["attempt"]) == (2, 1))
    assert "The leader is Player 2; the team will have 3 players." in second.prompt
    assert "The team already proposed in this round: Players 2, 3 and 5." in second.prompt
    assert "The speaker is Player 2." in second.prompt and '"I propose [2, 3, 5]."' in second.prompt


def test_rate_and_success_by_role_by_hand(judged, data):
    sr = self_recommendation(judged, data.quests)
    full = sr[sr["variant"] == "full"]
    rate, success = full[full["metric"] == "rate"], full[full["metric"] == "success"]
    assert (row(rate, role="Merlin")["value"], row(success, role="Merlin")["value"]) == (1.0, 0.5)
    assert row(success, role="Percival")["value"] == 0.5
    assert (row(rate, role="Loyal Servant")["n"], row(success, role="Loyal Servant")["value"]) == (4, 0.5)
    morgana = row(rate, role="Morgana")
    assert (morgana["value"], morgana["n"], morgana["games"]) == (0.5, 2, 2)
    assert row(success, role="Morgana")["value"] == 0.0 and row(success, role="Morgana")["n"] == 1
    assert "Assassin" not in set(sr["role"])


def test_variants_are_not_pooled(judged, data):
    sr = self_recommendation(judged, data.quests)
    assert row(sr, variant="other", role="Merlin", metric="success")["value"] == 1.0  # game A only
    assert row(sr, variant="full", role="Merlin", metric="success")["value"] == 0.5
    assert set(sr["variant"]) == {"full", "other"}


def test_every_rate_has_a_wilson_interval(judged, data):
    sr = self_recommendation(judged, data.quests)
    assert (sr["ci_high"] > sr["ci_low"]).all()
    assert ((sr["ci_low"] <= sr["value"]) & (sr["value"] <= sr["ci_high"])).all()
    merlin = row(sr, variant="full", role="Merlin", metric="success")
    assert (merlin["ci_low"], merlin["ci_high"]) == pytest.approx(wilson(1, 2))
    perfect = row(sr, variant="full", role="Merlin", metric="rate")  # 2 of 2: still an interval
    assert perfect["ci_low"] < 1 and perfect["ci_high"] == pytest.approx(1)


def test_per_side_and_the_team_of_the_same_attempt(judged, data):
    by_side = self_recommendation(judged, data.quests, by=("variant", "side"))
    good = row(by_side, variant="full", side="good", metric="success")
    assert (good["value"], good["n"]) == (4 / 8, 8)  # Merlin 1 of 2, Percival 1 of 2, Loyal Servants 2 of 4
    strict = self_recommendation(judged, data.quests, when="attempt")
    assert row(strict, variant="full", role="Percival", metric="success")["value"] == 0.0  # rejected at its attempt
    assert row(strict, variant="full", role="Merlin", metric="success")["value"] == 0.5
    with pytest.raises(ValueError, match="when"):
        went_on_quest(judged, data.quests, when="game")


def test_unreadable_judgments_are_left_out(judged, data):
    broken = judged.astype({"recommends_self": object})
    broken.loc[broken["seat"] == 1, "recommends_self"] = None
    broken.loc[broken["seat"] == 1, "valid"] = False
    sr = self_recommendation(broken, data.quests)
    assert "Merlin" not in set(sr["role"]) and "Percival" in set(sr["role"])
    assert self_recommendation(judged.iloc[:0], data.quests).empty


def test_the_scripted_judge_is_deterministic(data):
    first = judge_run(data, client=client(ScriptedChatModel(seed=5)), cache_dir=None).self_recommendation
    again = judge_run(data, client=client(ScriptedChatModel(seed=5)), cache_dir=None).self_recommendation
    assert first["valid"].all()
    assert list(first["recommends_self"]) == list(again["recommends_self"])
