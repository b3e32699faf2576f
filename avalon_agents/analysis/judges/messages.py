"""The two judges of the human labels of Avalon-NLU (Stepputtis et al., 2023), one chat message at a time:

- persuasion: which of the dataset's eight persuasion strategies the message uses (PERSUASION_LABELS, the
  dataset's own label strings).
- deception: whether the message is a lie and of which kind (DECEPTION_LABELS: the dataset's three kinds, and
  "none").

Their prompts are `prompts/judges/persuasion.txt` and `prompts/judges/deception.txt`; `analysis.judges.run`
asks them (JudgeTask, the cache) and `analysis.humans.calibrate` compares their answers with the people's labels
(they are not asked about a run's speeches: `analyze` False). Answers are asked for as JSON and read leniently:
the JSON `label`, else exactly one label named in the text.
"""

from __future__ import annotations

import re
from typing import Any

from avalon_agents.analysis.judges.context import knowledge_text, roles_in_game
from avalon_agents.analysis.judges.labels import DECEPTION_LABELS, NO_LIE, PERSUASION_LABELS
from avalon_agents.analysis.judges.spec import Ask, HumanLabels, JudgeSpec, Speech
from avalon_agents.decisions.jsonish import load_json

LABELS = {"persuasion": PERSUASION_LABELS, "deception": DECEPTION_LABELS}

_WORDS = {  # label -> whole words that name it in a free-text answer
    "assertion": r"assertion", "logical deduction": r"logical[\s_-]*deduction|deduction",
    "suggestion": r"suggestion", "critique/opposition": r"critique|opposition",
    "questioning": r"questioning", "appeal/defense": r"appeal|defen[cs]e",
    "agreement": r"agreement", "compromise/concession": r"compromise|concession",
    "none": r"none|no[\s_-]+lie|not[\s_-]+a[\s_-]+lie", "influence": r"influence", "commission": r"commission",
    "omission": r"omission",
}
PATTERNS = {label: re.compile(rf"\b(?:{words})\b", re.IGNORECASE) for label, words in _WORDS.items()}
REASON = {"type": "string", "maxLength": 300}


def _one(text: str, labels: tuple[str, ...]) -> str | None:
    found = {label for label in labels if PATTERNS[label].search(text)}
    return found.pop() if len(found) == 1 else None


def parse_label(raw: str, judge: str) -> dict[str, Any]:
    """Read a persuasion or deception judgment.

    Args:
        raw: the judge's answer.
        judge: "persuasion" or "deception".

    Returns:
        {"label": one of LABELS[judge] or None, "reason": str or None, "valid": bool}.
    """
    labels = LABELS[judge]
    value = load_json(raw)
    if value is not None and "label" in value:
        said = re.sub(r"[\s_]+", " ", str(value["label"]).strip().lower())
        label = said if said in labels else _one(said, labels)
        reason = value.get("reason")
        return {"label": label, "reason": None if reason is None else str(reason), "valid": label is not None}
    label = _one(raw, labels)
    return {"label": label, "reason": None, "valid": label is not None}


def label_schema(judge: str) -> dict[str, Any]:
    """The JSON schema of a persuasion or deception answer: a reason, then one label."""
    label = {"type": "string", "enum": list(LABELS[judge])}
    return {"type": "object", "properties": {"reason": REASON, "label": label}, "required": ["reason", "label"]}


MESSAGE_COLUMNS = ("game", "message", "seq", "part", "quest", "attempt", "seat", "role", "side", "text",
                   "persuasion", "deception", "label", "reason", "raw", "valid", "cached")


def _ask_persuasion(s: Speech) -> Ask:
    return Ask({"speaker": s.speaker, "quest": s.row["quest"], "message": s.text})


def _ask_deception(s: Speech) -> Ask:
    return Ask({"speaker": s.speaker, "quest": s.row["quest"], "message": s.text, "role": s.row["role"],
                "side": s.row["side"], "knowledge": knowledge_text(s.night),
                "roles_in_game": roles_in_game(list(s.roles.values()))})


def _message_judge(name: str, labels: tuple[str, ...], ask, against: str) -> JudgeSpec:
    """A judge of one chat message's label (`labels`), asked through `ask`, held to the players' own label of the
    same name; calibration only (not in analyze)."""
    return JudgeSpec(name=name, prompt=f"judges/{name}", labels=labels, schema=lambda subjects: label_schema(name),
                     parse=lambda raw, subjects: parse_label(raw, name), ask=ask, columns=MESSAGE_COLUMNS,
                     analyze=False, humans=HumanLabels(labels, against, truth=lambda m: m[name],
                                                       guess=lambda parsed: parsed["label"]))


PERSUASION = _message_judge("persuasion", PERSUASION_LABELS, _ask_persuasion, "persuasion label")
DECEPTION = _message_judge("deception", DECEPTION_LABELS, _ask_deception, "deception label (none where unset)")
