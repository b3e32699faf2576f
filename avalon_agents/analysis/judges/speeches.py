"""The paper's four judges of speeches (Sections 5.2.2 and 6.2-6.6), one spec each; their prompts are under
prompts/judges/.

A judge model reads speeches and labels them; everything else (who spoke, their role and side, what their
role card showed them at night, who the other players are, who leads the round) comes from the structured
records, never from the text:

- self_recommendation (6.2): every speech -> `recommends_self`, whether the speaker recommends themself as a
  member of the team for the quest being discussed (its success, the speaker on the team that went, is
  computed from the records in `analysis.paper.behavior`).
- camouflage (6.3): every speech of the first quest -> "self_disclosure" (states or clearly implies the
  speaker's true role or side), "camouflage" (claims or implies one they do not have) or "withholding".
- teamwork (6.4): every speech -> for each other player, the speaker's attitude: "trust" (teamwork),
  "distrust" (confrontation), "ambivalent"; players the speech does not mention get no row.
- sharing (6.5): Merlin's and Percival's speeches of the first quest -> which of the seats their night
  information is about the speech gives away (`shared` is a subset of `known`).

Answers are asked for as JSON-schema constrained output and read leniently (a JSON object anywhere in the
text, else whole-word labels); an answer that cannot be read gives rows with `valid` False.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from avalon_agents.analysis import plots
from avalon_agents.analysis.judges.context import FIRST_QUEST, knowledge_text, roles_in_game, round_text
from avalon_agents.analysis.judges.labels import ATTITUDES, CAMOUFLAGE_LABELS, NO_LIE, NOT_MENTIONED
from avalon_agents.analysis.judges.spec import SPEECH_COLUMNS, Ask, HumanLabels, JudgeFigure, JudgeSpec, Roles, Speech
from avalon_agents.analysis.paper.behavior import (
    camouflage_shares,
    self_recommendation,
    sharing_rates,
    teamwork_matrix,
    vacillation,
)
from avalon_agents.core.types import Role, seat_name
from avalon_agents.decisions.jsonish import load_json

SHARING_ROLES = {Role.MERLIN.value: "evil", Role.PERCIVAL.value: "merlin_or_morgana"}
"""The roles whose sharing is judged, and the night information (its `known_as`) they may share."""
REASON = {"type": "string", "maxLength": 300}
CAMOUFLAGE_TITLE = "First-round speeches: how speakers present themselves"

SEAT_KEY = re.compile(r"^\s*(?:player[\s_]*)?(\d{1,2})\s*$", re.IGNORECASE)
PLAYER = re.compile(r"\bPlayer\s*(\d{1,2})\b", re.IGNORECASE)
LABEL_WORDS = {
    "self_disclosure": re.compile(r"\bself[\s_-]?disclosure\b", re.IGNORECASE),
    "camouflage": re.compile(r"\bcamouflage\b", re.IGNORECASE),
    "withholding": re.compile(r"\bwithholding\b", re.IGNORECASE),
}
ATTITUDE_LINE = re.compile(r"\bPlayer\s*(\d{1,2})\b\W{0,6}(trust|distrust|ambivalent|not[\s_-]mentioned)\b",
                           re.IGNORECASE)
NONE_SHARED = re.compile(r"\b(none|nothing|no one|nobody)\b", re.IGNORECASE)
YES_NO = {"true": True, "yes": True, "false": False, "no": False}
SELF_LINE = re.compile(r"\brecommends?[\s_-]?self\b\W{0,6}(true|false|yes|no)\b", re.IGNORECASE)


# ------------------------------------------------------------------------------------------------ reading


def _normal(value: Any) -> str:
    return re.sub(r"[\s-]+", "_", str(value).strip().lower()).strip("._\"' ")


def _whole_word_label(text: str, patterns: dict[str, re.Pattern[str]]) -> str | None:
    found = {label for label, pattern in patterns.items() if pattern.search(text)}
    return found.pop() if len(found) == 1 else None


def parse_camouflage(raw: str) -> dict[str, Any]:
    """Read a camouflage judgment.

    Args:
        raw: the judge's answer.

    Returns:
        {"label": one of CAMOUFLAGE_LABELS or None, "reason": str or None, "valid": bool}.
    """
    value = load_json(raw)
    if value is not None and "label" in value:
        label = _normal(value["label"])
        if label not in CAMOUFLAGE_LABELS:
            label = _whole_word_label(str(value["label"]), LABEL_WORDS)
        reason = value.get("reason")
        return {"label": label, "reason": None if reason is None else str(reason), "valid": label is not None}
    label = _whole_word_label(raw, LABEL_WORDS)  # free text: exactly one label named, as a whole word
    return {"label": label, "reason": None, "valid": label is not None}


def _attitude(value: Any) -> str | None:
    label = _normal(value)
    return label if label in (*ATTITUDES, NOT_MENTIONED) else None


def parse_teamwork(raw: str, others: Sequence[int]) -> dict[str, Any]:
    """Read a teamwork judgment.

    Args:
        raw: the judge's answer.
        others: the seats the speaker's attitude was asked about.

    Returns:
        {"attitudes": {seat (str): one of ATTITUDES, "not_mentioned", or None for an unreadable value},
        "valid": bool}. A player the answer leaves out is not mentioned; an answer that names none of
        `others` is not valid.
    """
    wanted = set(others)
    found: dict[int, str | None] = {}
    value = load_json(raw)
    if value is not None and len(value) == 1 and isinstance(inner := next(iter(value.values())), dict):
        value = inner  # {"attitudes": {...}}
    if value is not None:
        for key, label in value.items():
            m = SEAT_KEY.match(str(key))
            if m and int(m.group(1)) in wanted:
                found[int(m.group(1))] = _attitude(label)
    else:
        for m in ATTITUDE_LINE.finditer(raw):
            if int(m.group(1)) in wanted:
                found[int(m.group(1))] = _attitude(m.group(2))
    if not found:
        return {"attitudes": {}, "valid": False}
    return {"attitudes": {str(s): found.get(s, NOT_MENTIONED) for s in others}, "valid": True}


def parse_sharing(raw: str, known: Sequence[int]) -> dict[str, Any]:
    """Read a sharing judgment.

    Args:
        raw: the judge's answer.
        known: the seats the speaker's night information is about.

    Returns:
        {"shared": the seats of `known` the speech gives away (in `known` order) or None, "reason": str or
        None, "valid": bool}. Seats outside `known` are ignored.
    """
    value = load_json(raw)
    named: set[int] | None = None
    reason = None
    if value is not None:
        reason = None if value.get("reason") is None else str(value["reason"])
        shared = value.get("shared")
        if isinstance(shared, list):
            named = set()
            for item in shared:
                m = SEAT_KEY.match(str(item))
                if m:
                    named.add(int(m.group(1)))
    else:
        seats = {int(s) for s in PLAYER.findall(raw)}
        if seats:
            named = seats
        elif NONE_SHARED.search(raw):
            named = set()
    if named is None:
        return {"shared": None, "reason": reason, "valid": False}
    return {"shared": [s for s in known if s in named], "reason": reason, "valid": True}


def parse_self_recommendation(raw: str) -> dict[str, Any]:
    """Read a self-recommendation judgment.

    Args:
        raw: the judge's answer.

    Returns:
        {"recommends_self": bool or None, "reason": str or None, "valid": bool}. Read from the JSON key
        (true/false, or "yes"/"no"), else from a line "recommends_self: yes", else from an answer that is one
        word; anything else is not valid.
    """
    value = load_json(raw)
    reason, answer = None, None
    if value is not None and "recommends_self" in value:
        reason = None if value.get("reason") is None else str(value["reason"])
        found = value["recommends_self"]
        answer = found if isinstance(found, bool) else YES_NO.get(_normal(found))
    elif m := SELF_LINE.search(raw):
        answer = YES_NO[m.group(1).lower()]
    else:
        answer = YES_NO.get(_normal(raw))
    return {"recommends_self": answer, "reason": reason, "valid": answer is not None}


# ------------------------------------------------------------------------------------------------ the specs


def _camouflage_schema(subjects: tuple[int, ...]) -> dict[str, Any]:
    return {"type": "object", "properties": {"reason": REASON, "label": {"type": "string",
                                                                         "enum": list(CAMOUFLAGE_LABELS)}},
            "required": ["reason", "label"]}


def _ask_camouflage(s: Speech) -> Ask | None:
    if s.row["quest"] != FIRST_QUEST:
        return None
    return Ask({"speaker": s.speaker, "role": s.row["role"], "side": s.row["side"],
                "knowledge": knowledge_text(s.night), "speech": s.text,
                "roles_in_game": roles_in_game(list(s.roles.values()))})


CAMOUFLAGE = JudgeSpec(
    name="camouflage",
    prompt="judges/camouflage",
    labels=CAMOUFLAGE_LABELS,
    schema=_camouflage_schema,
    parse=lambda raw, subjects: parse_camouflage(raw),
    ask=_ask_camouflage,
    columns=(*SPEECH_COLUMNS, "label", "reason", "raw", "valid", "cached"),
    figures=(JudgeFigure("camouflage", "First-round camouflage (paper Fig. 4)", "camouflage_shares",
                         summary=lambda judged, data: camouflage_shares(judged),
                         draw=lambda table: plots.shares_plot(table, list(CAMOUFLAGE_LABELS), CAMOUFLAGE_TITLE)),),
    # people labelled lies, not camouflage: "camouflage" reads as a lie, the rest as honest (first-quest messages)
    humans=HumanLabels(("honest", "lie"), "deception label: any kind is a lie (first-quest messages)",
                       truth=lambda m: "honest" if m["deception"] == NO_LIE else "lie",
                       guess=lambda parsed: "lie" if parsed["label"] == "camouflage" else "honest"),
)


def _teamwork_schema(subjects: tuple[int, ...]) -> dict[str, Any]:
    attitude = {"type": "string", "enum": [*ATTITUDES, NOT_MENTIONED]}
    names = [seat_name(s) for s in subjects]
    return {"type": "object", "properties": dict.fromkeys(names, attitude), "required": names}


def _ask_teamwork(s: Speech) -> Ask | None:
    others = s.others
    if not others:
        return None
    example = ", ".join(f'"{seat_name(o)}": "{label}"' for o, label in zip(others[:2], ("trust", NOT_MENTIONED)))
    return Ask({"speaker": s.speaker, "speech": s.text, "example": example,
                "others": ", ".join(seat_name(o) for o in others)}, subjects=others)


def _teamwork_rows(base: dict[str, Any], parsed: dict[str, Any], subjects: tuple[int, ...],
                   roles: Roles) -> list[dict[str, Any]]:
    """One row per player the speech mentions (one row with target None for an unreadable answer)."""
    if not parsed["valid"]:
        return [{**base, "target": None, "target_role": None, "target_side": None, "label": None, "valid": False}]
    out = []
    for target in subjects:
        label = parsed["attitudes"].get(str(target), NOT_MENTIONED)
        if label == NOT_MENTIONED:
            continue
        role, side = roles.get((base["game"], target), (None, None))
        out.append({**base, "target": target, "target_role": role, "target_side": side, "label": label,
                    "valid": label is not None})
    return out


TEAMWORK_CLASSES = ("agreement", "critique/opposition", "other")
"""The teamwork judge held to people's persuasion labels: any "distrust" reads as critique/opposition, else any
"trust" as agreement, else other."""


def _teamwork_class(parsed: dict[str, Any]) -> str | None:
    said = set(parsed["attitudes"].values())
    if None in said:
        return None
    return "critique/opposition" if "distrust" in said else "agreement" if "trust" in said else "other"


TEAMWORK = JudgeSpec(
    name="teamwork",
    prompt="judges/teamwork",
    labels=ATTITUDES,
    schema=_teamwork_schema,
    parse=parse_teamwork,
    ask=_ask_teamwork,
    columns=(*SPEECH_COLUMNS, "target", "target_role", "target_side", "label", "raw", "valid", "cached"),
    rows=_teamwork_rows,
    humans=HumanLabels(TEAMWORK_CLASSES, "persuasion label: agreement, critique/opposition, or other",
                       truth=lambda m: m["persuasion"] if m["persuasion"] in TEAMWORK_CLASSES[:2] else "other",
                       guess=_teamwork_class),
    figures=(
        JudgeFigure("teamwork", "Teamwork and confrontation, role to role (paper Fig. 5)", "teamwork_matrix",
                    summary=lambda judged, data: teamwork_matrix(judged), draw=lambda table: plots.heatmaps(table)),
        JudgeFigure("vacillation", "Teamwork over the quests (paper Fig. 6b, c)", "vacillation",
                    summary=lambda judged, data: vacillation(judged),
                    draw=lambda table: plots.curves(
                        table, "quest", "trust", ["agent", "role", "target_group"],
                        "Teamwork (trust share) towards each group over the quests", "trust share")),
    ),
)


def _sharing_schema(subjects: tuple[int, ...]) -> dict[str, Any]:
    seats = {"type": "array", "items": {"type": "integer", "enum": list(subjects)}, "uniqueItems": True,
             "maxItems": len(subjects)}
    return {"type": "object", "properties": {"reason": REASON, "shared": seats}, "required": ["reason", "shared"]}


def _ask_sharing(s: Speech) -> Ask | None:
    wanted = SHARING_ROLES.get(s.row["role"])
    known = tuple(sorted({x for kind, xs in s.night if kind == wanted for x in xs}))
    if s.row["quest"] != FIRST_QUEST or not wanted or not known:
        return None
    return Ask({"speaker": s.speaker, "role": s.row["role"], "speech": s.text,
                "knowledge": knowledge_text([(k, xs) for k, xs in s.night if k == wanted]),
                "known_players": ", ".join(seat_name(x) for x in known)}, subjects=known)


def _sharing_rows(base: dict[str, Any], parsed: dict[str, Any], subjects: tuple[int, ...],
                  roles: Roles) -> list[dict[str, Any]]:
    known, shared = list(subjects), parsed["shared"]
    rate = len(shared) / len(known) if shared is not None else None
    return [{**base, "known": known, "shared": shared, "share_rate": rate, "reason": parsed["reason"],
             "valid": parsed["valid"]}]


SHARING = JudgeSpec(
    name="sharing",
    prompt="judges/sharing",
    labels=(),
    schema=_sharing_schema,
    parse=parse_sharing,
    ask=_ask_sharing,
    columns=(*SPEECH_COLUMNS, "known", "shared", "share_rate", "reason", "raw", "valid", "cached"),
    rows=_sharing_rows,
    figures=(JudgeFigure("sharing", "Known information shared by Merlin and Percival in the first round "
                                    "(paper Fig. 6a)", "sharing_rates",
                         summary=lambda judged, data: sharing_rates(judged),
                         draw=lambda table: plots.bars_figure(table, "role", "agent", "share_rate",
                                                              "Share of night information given away")),),
)


def _self_schema(subjects: tuple[int, ...]) -> dict[str, Any]:
    return {"type": "object", "properties": {"reason": REASON, "recommends_self": {"type": "boolean"}},
            "required": ["reason", "recommends_self"]}


def _ask_self(s: Speech) -> Ask:
    return Ask({"speaker": s.speaker, "speech": s.text, "quest": s.row["quest"], "attempt": s.row["attempt"],
                **round_text(s.round, int(s.row["seq"]))}, row={"leader": (s.round or {}).get("leader")})


SELF_RECOMMENDATION = JudgeSpec(
    name="self_recommendation",
    prompt="judges/self_recommendation",
    labels=(),
    schema=_self_schema,
    parse=lambda raw, subjects: parse_self_recommendation(raw),
    ask=_ask_self,
    columns=(*SPEECH_COLUMNS, "leader", "recommends_self", "reason", "raw", "valid", "cached"),
    figures=(JudgeFigure("self_recommendation", "Self-recommendation in discussion and its success "
                                                "(paper Fig. 3b, c; judged)", "self_recommendation",
                         summary=lambda judged, data: self_recommendation(judged, data.quests),
                         draw=lambda table: plots.self_recommendation_plot(table, judged=True)),),
)
