"""avalon calibrate: the judges against the human labels of an imported Avalon-NLU run (tests/importers'
tiny game, and the real dataset when it is at hand), the agreement figures against a hand-computed matrix,
the cache, and one-line errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from avalon_agents.analysis.humans.agreement import agreement, confusion, kappa
from avalon_agents.analysis.humans.calibrate import calibrate, held_judges, messages, sample
from avalon_agents.analysis.judges.cache import CACHE_FILE
from avalon_agents.analysis.judges.labels import DECEPTION_LABELS, PERSUASION_LABELS
from avalon_agents.analysis.judges.messages import parse_label
from avalon_agents.analysis.judges.registry import judge_spec
from avalon_agents.analysis.load import load_run
from avalon_agents.cli import cli
from avalon_agents.llm import LLMClient, ModelSettings
from avalon_agents.llm.scripted import ScriptedChatModel

FIXTURE = Path(__file__).parents[1] / "importers" / "avalon_nlu"
REAL = Path(__file__).parents[3] / "shared/data/avalon_nlu/dataset"


def avalon(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("nlu") / "run"
    assert avalon("import", "avalon-nlu", str(FIXTURE), "--out", str(out)).exit_code == 0
    return out


def client(model: ScriptedChatModel) -> LLMClient:
    return LLMClient(settings=ModelSettings(spec="scripted", temperature=0, retries=0), model=model)


# ------------------------------------------------------------------------------------------------ the figures


def test_kappa_precision_recall_match_a_hand_computed_matrix():
    # human \ judge:  a  b  c
    #            a    4  1  0      n = 12, diagonal 4 + 3 + 2 = 9: p_o = 9/12
    #            b    1  3  1      humans' marginals 5, 5, 2; judge's 5, 4, 3
    #            c    0  0  2      p_e = (5*5 + 5*4 + 2*3) / 144 = 51/144
    cells = {("a", "a"): 4, ("a", "b"): 1, ("b", "a"): 1, ("b", "b"): 3, ("b", "c"): 1, ("c", "c"): 2}
    rows = [{"game": f"g{i % 3}", "truth": t, "guess": g} for (t, g), k in cells.items() for i in range(k)]
    found = agreement(pd.DataFrame(rows), ["a", "b", "c"])
    assert found.confusion.to_numpy().tolist() == [[4, 1, 0], [1, 3, 1], [0, 0, 2]]
    p_o, p_e = 9 / 12, 51 / 144
    assert found.kappa == pytest.approx((p_o - p_e) / (1 - p_e))
    assert found.accuracy == pytest.approx(9 / 12)
    pc = found.per_class.set_index("label")
    assert pc["precision"].tolist() == pytest.approx([4 / 5, 3 / 4, 2 / 3])
    assert pc["recall"].tolist() == pytest.approx([4 / 5, 3 / 5, 2 / 2])
    assert pc["support"].tolist() == [5, 5, 2] and pc["predicted"].tolist() == [5, 4, 3]
    assert found.n == 12 and found.games == 3
    low, high = found.kappa_ci
    assert low <= found.kappa <= high and high > low  # three games: resamples that differ
    assert agreement(pd.DataFrame(rows), ["a", "b", "c"]).kappa_ci == found.kappa_ci  # seeded


def test_kappa_edges():
    assert kappa(np.diag([3, 2])) == pytest.approx(1.0)
    assert kappa(np.array([[2, 0], [0, 0]])) != kappa(np.array([[2, 0], [0, 0]]))  # one class only: undefined (nan)
    assert confusion(["x"], ["y"], ["x", "y", "z"]).to_numpy().tolist() == [[0, 1, 0], [0, 0, 0], [0, 0, 0]]


def test_answers_are_read_leniently():
    assert parse_label('{"reason": "r", "label": "Logical_Deduction"}', "persuasion")["label"] == "logical deduction"
    assert parse_label('{"label": "critique"}', "persuasion")["label"] == "critique/opposition"
    assert parse_label("It is an omission.", "deception") == {"label": "omission", "reason": None, "valid": True}
    assert not parse_label("agreement or suggestion", "persuasion")["valid"]
    assert not parse_label('{"label": "banana"}', "deception")["valid"]


# ------------------------------------------------------------------------------------------------ the tiny run


def test_messages_and_a_stratified_sample(tiny):
    frame = messages(load_run(tiny))
    assert len(frame) == 8 and frame["message"].is_unique
    assert set(frame["persuasion"]) <= set(PERSUASION_LABELS) and set(frame["deception"]) <= set(DECEPTION_LABELS)
    assert (frame["deception"] != "none").sum() == 2
    picked = sample(frame, 4, seed=1)
    assert len(picked) == 4 and picked.equals(sample(frame, 4, seed=1))
    assert picked["message"].isin(frame["message"]).all()
    with pytest.raises(ValueError, match="sample: must be between 1 and 8"):
        sample(frame, 9)


PLUGIN_JUDGES = """\
from dataclasses import replace

from avalon_agents.analysis.judges.registry import judge_spec, register_judge
from avalon_agents.analysis.judges.spec import HumanLabels

persuasion = judge_spec("persuasion")
# a judge of its own that people's labels can hold: does the message argue for agreement?
register_judge(replace(persuasion, name="agreeing", humans=HumanLabels(
    ("agreement", "other"), "persuasion label: agreement or other",
    truth=lambda m: "agreement" if m["persuasion"] == "agreement" else "other",
    guess=lambda parsed: "agreement" if parsed["label"] == "agreement" else "other")))
# and one with no human labels
register_judge(replace(persuasion, name="unlabelled", humans=None))
"""


def test_a_plugin_judge_with_human_labels_is_calibrated_and_one_without_is_named(tiny, tmp_path):
    """The last consumer of a judge's `humans`: `avalon calibrate` compares a plugin's judge (its rows in
    summary.csv and in the confusion table) and names a judge it cannot compare."""
    plugin = tmp_path / "judges_plugin.py"
    plugin.write_text(PLUGIN_JUDGES)
    out = tmp_path / "cal"
    done = avalon("calibrate", str(tiny), "--judge-model", "scripted", "--out", str(out), "--plugin", str(plugin))
    assert done.exit_code == 0, done.output
    assert "no human labels to be held to: sharing, self_recommendation, unlabelled" in done.output
    summary = pd.read_csv(out / "summary.csv").set_index("judge")
    assert "agreeing" in summary.index and summary.loc["agreeing", "n"] == 8
    assert summary.loc["agreeing", "against"] == "persuasion label: agreement or other"
    conf = pd.read_csv(out / "confusion.csv", keep_default_na=False)
    assert set(conf[conf["judge"] == "agreeing"]["human"]) == {"agreement", "other"}


def test_scripted_judge_gives_a_report_of_the_right_shape(tiny, tmp_path):
    LABELS = {j: judge_spec(j).humans.classes for j in held_judges()}  # noqa: N806
    assert set(LABELS) == {"persuasion", "deception", "camouflage", "teamwork"}
    out = tmp_path / "cal"
    done = avalon("calibrate", str(tiny), "--judge-model", "scripted", "--out", str(out))
    assert done.exit_code == 0, done.output
    assert "judge model scripted" in done.output and "all 8 labelled messages" in done.output
    assert "judges with no human labels to be held to: sharing, self_recommendation" in done.output
    for judge in LABELS:
        assert judge in done.output
    summary = pd.read_csv(out / "summary.csv")
    assert summary["judge"].tolist() == list(LABELS)
    assert summary.set_index("judge")["n"].to_dict() == {"persuasion": 8, "deception": 8, "camouflage": 3,
                                                          "teamwork": 8}
    assert (summary["invalid"] == 0).all() and (summary["games"] == 1).all()
    assert summary["kappa"].between(-1, 1).all()
    per_class = pd.read_csv(out / "per_class.csv", keep_default_na=False)
    assert per_class.groupby("judge", sort=False).size().to_dict() == {j: len(v) for j, v in LABELS.items()}
    conf = pd.read_csv(out / "confusion.csv", keep_default_na=False)
    assert len(conf) == sum(len(v) ** 2 for v in LABELS.values())
    assert conf.groupby("judge")["count"].sum().to_dict() == summary.set_index("judge")["n"].to_dict()
    rows = pd.read_csv(out / "judgments.csv")
    assert len(rows) == 8 * 3 + 3 and rows["raw"].notna().all()
    report = (out / "report.md").read_text()
    assert "judge model scripted" in report and f"run {tiny}" in report and "## deception" in report
    calls = [json.loads(line) for line in (out / "judgments" / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == 27 and {c["name"] for c in calls} == set(LABELS)


def test_a_rerun_is_served_from_the_cache(tiny, tmp_path):
    data = load_run(tiny)
    first_model = ScriptedChatModel()
    first = calibrate(data, tiny, client=client(first_model), cache_dir=tmp_path)
    assert len(first_model.calls) == 27 and not first.rows["cached"].any()
    assert len((tmp_path / CACHE_FILE).read_text().splitlines()) == 27
    again_model = ScriptedChatModel()
    again = calibrate(data, tiny, client=client(again_model), cache_dir=tmp_path)
    assert again_model.calls == [] and again.rows["cached"].all()
    assert again.rows["guess"].tolist() == first.rows["guess"].tolist()
    smaller = calibrate(data, tiny, client=client(again_model), cache_dir=tmp_path, n=3, seed=2)
    assert again_model.calls == [] and smaller.rows["message"].nunique() == 3


def test_a_judge_that_agrees_with_the_humans_gets_kappa_one(tiny):
    data = load_run(tiny)
    truth = messages(data).set_index("text")

    def echo(messages_, kwargs) -> str:
        prompt = str(messages_[-1].content)
        name = kwargs["response_format"]["json_schema"]["name"]
        text = next(t for t in truth.index if json.dumps(t) in prompt)
        if name == "judge_persuasion":
            return json.dumps({"reason": "x", "label": truth.loc[text, "persuasion"]})
        if name == "judge_deception":
            return json.dumps({"reason": "x", "label": truth.loc[text, "deception"]})
        return "no idea"  # camouflage and teamwork: unreadable

    found = calibrate(data, tiny, client=client(ScriptedChatModel(respond=echo)), cache_dir=None)
    assert found.agreements["persuasion"].accuracy == 1 and found.agreements["persuasion"].kappa == 1
    assert found.agreements["deception"].kappa == 1
    assert found.agreements["teamwork"].n == 0 and math.isnan(found.agreements["teamwork"].kappa)


# ------------------------------------------------------------------------------------------------ errors


def test_one_line_errors(tiny, tmp_path):
    played = tmp_path / "played"
    assert avalon("play", "--seats", "random", "--games", "1", "--out", str(played)).exit_code == 0
    cases = [
        ([str(played)], "holds no human labels"),
        ([str(tiny), "--sample", "0"], "sample: must be at least 1"),
        ([str(tiny), "--sample", "99"], "sample: must be between 1 and 8"),
        ([str(tmp_path / "nothing")], "run-dir:"),
    ]
    for args, message in cases:
        done = CliRunner().invoke(cli, ["calibrate", *args, "--judge-model", "scripted", "--out",
                                        str(tmp_path / "cal")], standalone_mode=False)
        assert done.exit_code != 0 or done.exception is not None
        assert message in str(done.exception), (args, done.exception)
        assert len(str(done.exception).splitlines()) == 1


@pytest.mark.slow  # seconds; the slow suite (CI) runs it
@pytest.mark.skipif(not REAL.is_dir(), reason="the Avalon-NLU dataset is not at ../shared/data/avalon_nlu")
def test_the_real_dataset_sample_is_stratified(tmp_path):
    out = tmp_path / "real"
    assert avalon("import", "avalon-nlu", str(REAL), "--out", str(out)).exit_code == 0
    frame = messages(load_run(out))
    assert len(frame) == 2182 and set(frame["persuasion"]) == set(PERSUASION_LABELS)
    picked = sample(frame, 200, seed=0)
    assert len(picked) == 200
    shares = picked["persuasion"].value_counts(normalize=True)
    expected = frame["persuasion"].value_counts(normalize=True)
    assert (shares - expected).abs().max() < 0.01


def test_no_agreement_interval_is_zero_width():
    """A judge that always gives one answer has kappa 0 in every resample: no interval rather than [0, 0]; and an
    accuracy over a few games gets at least Wilson's interval."""
    import pandas as pd

    from avalon_agents.analysis.humans.agreement import agreement
    from avalon_agents.analysis.stats import wilson

    frame = pd.DataFrame({"game": [1, 1, 2, 2, 3], "truth": ["a", "b", "a", "a", "b"], "guess": ["a"] * 5})
    found = agreement(frame, ["a", "b"])
    assert found.kappa == 0 and all(x != x for x in found.kappa_ci)
    low, high = wilson(3, 5)
    assert found.accuracy_ci[0] <= low and found.accuracy_ci[1] >= high and found.accuracy_ci[1] > found.accuracy_ci[0]
    right = pd.DataFrame({"game": [1, 2, 3], "truth": ["a", "b", "a"], "guess": ["a", "b", "a"]})
    assert agreement(right, ["a", "b"]).accuracy_ci[0] < 1.0  # 3 of 3 is not [100%, 100%]
