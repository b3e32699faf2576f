"""Judges declared once: every judge's spec reads a sample answer back, an unknown name is a one-line error
naming the known judges, and a judge registered in the registry alone is asked by `Judge.tasks` and shown in
the report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from avalon_agents.analysis.judges.registry import JUDGES, judge_spec
from avalon_agents.analysis.judges.run import Judge, Judgments
from avalon_agents.analysis.judges.spec import Ask, JudgeFigure, JudgeSpec, Speech
from avalon_agents.analysis.load import load_run
from avalon_agents.analysis.paper.report import behavior_tables, sections
from avalon_agents.narrate import quote

RUN = Path(__file__).parents[1] / "data" / "replay" / "run"

SAMPLES = {  # judge -> (subjects, a sample answer, what parsing it gives)
    "camouflage": ((), {"reason": "r", "label": "camouflage"}, {"label": "camouflage", "reason": "r", "valid": True}),
    "teamwork": ((2, 3), {"Player 2": "distrust", "Player 3": "not_mentioned"},
                 {"attitudes": {"2": "distrust", "3": "not_mentioned"}, "valid": True}),
    "sharing": ((4, 5), {"reason": "r", "shared": [5]}, {"shared": [5], "reason": "r", "valid": True}),
    "self_recommendation": ((), {"reason": "r", "recommends_self": True},
                            {"recommends_self": True, "reason": "r", "valid": True}),
    "persuasion": ((), {"reason": "r", "label": "questioning"}, {"label": "questioning", "reason": "r", "valid": True}),
    "deception": ((), {"reason": "r", "label": "omission"}, {"label": "omission", "reason": "r", "valid": True}),
}


def test_every_registered_judge_reads_back_a_sample_answer():
    assert set(SAMPLES) == set(JUDGES)  # a new judge needs its sample here
    for name, (subjects, answer, parsed) in SAMPLES.items():
        spec = judge_spec(name)
        assert spec.name == name
        assert set(answer) == set(spec.schema(subjects)["required"]), name  # the answer model's keys
        assert spec.parse(json.dumps(answer), subjects) == parsed, name
        assert spec.parse("", subjects)["valid"] is False, name  # a failed call reads as unreadable
        if "label" in parsed:
            assert parsed["label"] in spec.labels, name


def test_an_unknown_judge_is_a_one_line_error_naming_the_known_ones():
    with pytest.raises(ValueError) as caught:
        judge_spec("honesty")
    message = str(caught.value)
    assert "\n" not in message and "'honesty'" in message
    assert all(name in message for name in JUDGES)
    with pytest.raises(ValueError, match="unknown judge 'honesty'"):
        Judge(client=None, cache_dir=None).task("honesty", {})  # type: ignore[arg-type]


def _ask_first_quest(speech: Speech) -> Ask | None:
    if speech.row["quest"] != 1:
        return None
    return Ask({"speaker": speech.speaker, "quest": speech.row["quest"], "message": speech.text},
               row={"length": len(speech.text)})


LENGTH = JudgeSpec(
    name="length",
    prompt="judges/persuasion",
    labels=("long", "short"),
    schema=lambda subjects: {"type": "object", "required": ["label"]},
    parse=lambda raw, subjects: {"label": raw or None, "valid": bool(raw)},
    ask=_ask_first_quest,
    columns=("game", "seq", "length", "label", "raw", "valid", "cached"),
    figures=(JudgeFigure("length", "Speech length", "length_shares",
                         summary=lambda judged, data: judged.groupby("label").size().reset_index(name="n"),
                         draw=lambda table: None),),  # type: ignore[arg-type,return-value]
)


def test_a_judge_registered_alone_is_asked_by_tasks_and_shown_in_the_report(monkeypatch):
    data = load_run(RUN)
    before = Judge(client=None, cache_dir=None).tasks(data)  # type: ignore[arg-type]
    JUDGES.register("length", LENGTH)  # the fixture restores the registry
    tasks = Judge(client=None, cache_dir=None).tasks(data)  # type: ignore[arg-type]
    added = [t for t in tasks if t.judge == "length"]
    first = data.speeches[data.speeches["quest"] == 1]
    assert tasks[: len(before)] == before  # the built-in judges' tasks unchanged, the new one's after them
    assert len(added) == len(first) > 0
    assert all(t.row["length"] > 0 and t.row["quest"] == 1 for t in added)
    assert quote(str(first.sort_values("seq").iloc[0]["text"])) in added[0].prompt  # its prompt, rendered
    assert list(sections())[-2:] == ["length", "probes"]  # its figure, after the paper's judged ones
    judged = Judgments.of({name: _empty(spec.columns) for name, spec in JUDGES.items() if spec.analyze})
    judged.more["length"].loc[0] = ["g", 1, 5, "long", "long", True, False]
    assert behavior_tables(judged, data)["length_shares"].to_dict("records") == [{"label": "long", "n": 1}]


def test_the_temporary_judge_is_gone_after_its_test():
    assert "length" not in JUDGES and "length" not in sections()


def _empty(columns):
    return pd.DataFrame(columns=list(columns))
