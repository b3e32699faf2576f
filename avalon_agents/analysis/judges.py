"""LLM-judged social behavior (paper Sections 5.2.2 and 6.2-6.6): self-recommendation,
camouflage, teamwork/confrontation, sharing.

A judge model reads speeches and labels them; everything else (who spoke, their role and side, what their
role card showed them at night, who the other players are, who leads the round) comes from the structured
records, never from the text. Four judges, one prompt each under prompts/judges/:

- self_recommendation (6.2): every speech -> `recommends_self`, whether the speaker recommends themself as a
  member of the team for the quest being discussed (its success, the speaker on the team that went, is
  computed from the records in `analysis.behavior`).
- camouflage (6.3): every speech of the first quest -> "self_disclosure" (states or clearly implies the
  speaker's true role or side), "camouflage" (claims or implies one they do not have) or "withholding".
- teamwork (6.4): every speech -> for each other player, the speaker's attitude: "trust" (teamwork),
  "distrust" (confrontation), "ambivalent"; players the speech does not mention get no row.
- sharing (6.5): Merlin's and Percival's speeches of the first quest -> which of the seats their night
  information is about the speech gives away (`shared` is a subset of `known`).

Answers are asked for as JSON-schema constrained output and read leniently (a JSON object anywhere in the
text, else whole-word labels); an answer that cannot be read gives rows with `valid` False. Each judgment is
cached on disk (see `judge_cache`), so a rerun over the same records makes no call. The summaries of the
tables are in `analysis.behavior`.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from avalon_agents.analysis.judge_cache import JudgmentCache, cache_key
from avalon_agents.analysis.label_judges import LABELS, label_schema, parse_label
from avalon_agents.analysis.load import RunData, Tables
from avalon_agents.core.types import Role, seat_name
from avalon_agents.decisions.jsonish import load_json
from avalon_agents.narrate import quote
from avalon_agents.prompting import template
from avalon_agents.records.trace import Purpose

if TYPE_CHECKING:  # the judges call a model only when asked: loading a run imports no model client
    from avalon_agents.llm.client import LLMClient

CAMOUFLAGE_LABELS = ("self_disclosure", "camouflage", "withholding")
ATTITUDES = ("trust", "distrust", "ambivalent")
NOT_MENTIONED = "not_mentioned"
FIRST_QUEST = 1
SHARING_ROLES = {Role.MERLIN.value: "evil", Role.PERCIVAL.value: "merlin_or_morgana"}
"""The roles whose sharing is judged, and the night information (its `known_as`) they may share."""
PROMPTS = {"camouflage": "judges/camouflage", "teamwork": "judges/teamwork", "sharing": "judges/sharing",
           "self_recommendation": "judges/self_recommendation", "persuasion": "judges/persuasion",
           "deception": "judges/deception"}
"""Every judge's prompt. persuasion and deception judge single chat messages against the human labels of
Avalon-NLU (`analysis.label_judges`, `analysis.calibrate`); the behavior metrics use the other four."""
REASON = {"type": "string", "maxLength": 300}
SPEECH_COLUMNS = ["game", "variant", "series", "game_index", "seq", "quest", "attempt", "seat", "role", "side",
                  "kind", "agent"]
COLUMNS = {
    "camouflage": [*SPEECH_COLUMNS, "label", "reason", "raw", "valid", "cached"],
    "teamwork": [*SPEECH_COLUMNS, "target", "target_role", "target_side", "label", "raw", "valid", "cached"],
    "sharing": [*SPEECH_COLUMNS, "known", "shared", "share_rate", "reason", "raw", "valid", "cached"],
    "self_recommendation": [*SPEECH_COLUMNS, "leader", "recommends_self", "reason", "raw", "valid", "cached"],
}
PLURALS = {Role.LOYAL_SERVANT.value: "Loyal Servants", Role.MINION.value: "Minions of Mordred"}
ROLE_ORDER = [r.value for r in Role]

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

Progress = Callable[[int, int], None]
"""progress(done, total): called once with done=0, then after each judgment."""


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


# ------------------------------------------------------------------------------------------------ context


def _players(seats: Sequence[int]) -> str:
    names = [str(s) for s in sorted(seats)]
    if len(names) == 1:
        return seat_name(int(names[0]))
    return "Players " + ", ".join(names[:-1]) + " and " + names[-1]


def knowledge_text(infos: Sequence[tuple[str, Sequence[int]]]) -> str:
    """What a seat's night information told it, in words (from its `night_info` records).

    Args:
        infos: (known_as, seats) of each night_info event of the seat.
    """
    parts = []
    for known_as, seats in infos:
        if known_as == "nothing":
            continue
        names, verb = _players(seats), "is" if len(seats) == 1 else "are"
        if known_as == "evil":
            parts.append(f"{names} {verb} evil (but not which evil role each has).")
        elif known_as == "merlin_or_morgana":
            parts.append(f"{names} is Merlin." if len(seats) == 1 else
                         f"one of {names} is Merlin and the other is Morgana (but not which is which).")
        else:
            parts.append(f"{names} {verb} on the evil side with them (but not which role each has).")
    text = " ".join(parts) if parts else "nothing beyond their own role."
    return text[0].upper() + text[1:]


def roles_in_game(roles: Sequence[str]) -> str:
    """The game's role cards, e.g. "Merlin, Percival, 2 Loyal Servants, Morgana, Assassin"."""
    counts = Counter(roles)
    ordered = sorted(counts, key=lambda r: ROLE_ORDER.index(r) if r in ROLE_ORDER else len(ROLE_ORDER))
    return ", ".join(r if counts[r] == 1 else f"{counts[r]} {PLURALS.get(r, r + 's')}" for r in ordered)


def night_info(events: pd.DataFrame) -> dict[tuple[str, int], list[tuple[str, tuple[int, ...]]]]:
    """(game, seat) -> [(known_as, seats), ...] from the `night_info` events."""
    found: dict[tuple[str, int], list[tuple[str, tuple[int, ...]]]] = {}
    if events.empty or "type" not in events:
        return found
    for e in events[events["type"] == "night_info"].itertuples(index=False):
        seats = tuple(sorted(int(s) for s in e.seats))
        found.setdefault((e.game, int(e.seat)), []).append((e.known_as, seats))
    return found


def rounds(events: pd.DataFrame) -> dict[tuple[str, int, int], dict[str, Any]]:
    """(game, quest, attempt) -> {"leader", "team_size", "proposals": [(seq, team), ...]} from the events."""
    found: dict[tuple[str, int, int], dict[str, Any]] = {}
    if events.empty or "type" not in events:
        return found
    for e in events[events["type"].isin(["leader_chosen", "team_proposed"])].itertuples(index=False):
        one = found.setdefault((e.game, int(e.quest), int(e.attempt)),
                               {"leader": None, "team_size": None, "proposals": []})
        if e.type == "leader_chosen":
            one.update(leader=int(e.leader), team_size=int(e.team_size))
        else:
            team = tuple(int(s) for s in e.team)
            one["proposals"].append((int(e.seq), team))
            one["leader"] = one["leader"] if one["leader"] is not None else int(e.leader)
            one["team_size"] = one["team_size"] if one["team_size"] is not None else len(team)
    return found


def _round_text(info: dict[str, Any] | None, seq: int) -> dict[str, Any]:
    """The self-recommendation prompt's round values: leader, team size, the team already proposed."""
    info = info or {"leader": None, "team_size": None, "proposals": []}
    before = [team for s, team in info["proposals"] if s < seq]
    table = (f"The team already proposed in this round: {_players(before[-1])}." if before else
             "No team has been proposed yet in this round.")
    return {"leader": seat_name(info["leader"]) if info["leader"] is not None else "not known",
            "team_size": info["team_size"] if info["team_size"] is not None else "some",
            "team_on_table": table}


# ------------------------------------------------------------------------------------------------ the judge


@dataclass(frozen=True)
class JudgeTask:
    """One judgment to make: which judge, about which speech (its record columns), the rendered prompt."""

    judge: str
    row: dict[str, Any]
    prompt: str
    prompt_hash: str
    schema: dict[str, Any]
    subjects: tuple[int, ...] = ()
    """The other seats (teamwork) or the known seats (sharing)."""

    def parse(self, raw: str) -> dict[str, Any]:
        if self.judge == "camouflage":
            return parse_camouflage(raw)
        if self.judge == "teamwork":
            return parse_teamwork(raw, self.subjects)
        if self.judge == "self_recommendation":
            return parse_self_recommendation(raw)
        if self.judge in LABELS:
            return parse_label(raw, self.judge)
        return parse_sharing(raw, self.subjects)


@dataclass(repr=False)
class Judgments(Tables):
    """The judged tables (each row also carries the judge's `raw` answer, `valid` and `cached`).

    Attributes:
        camouflage: one row per first-quest speech: speech columns, label (CAMOUFLAGE_LABELS or None), reason.
        teamwork: one row per speech and player it mentions: speech columns (`seat` is the speaker), target,
            target_role, target_side, label (ATTITUDES or None). An unreadable answer gives one row with
            target None.
        sharing: one row per first-quest speech of Merlin or Percival: speech columns, known (seats their
            night information is about), shared (those the speech gives away), share_rate, reason.
        self_recommendation: one row per speech: speech columns, leader (of the round), recommends_self
            (bool or None), reason.
    """

    camouflage: pd.DataFrame
    teamwork: pd.DataFrame
    sharing: pd.DataFrame
    self_recommendation: pd.DataFrame


class Judge:
    """Judges the speeches of a run with an LLM, through a disk cache.

    Args:
        client: the judge model's client (every call is recorded through it).
        cache_dir: where judgments are kept (`judgments.jsonl`); None keeps none.
        concurrency: at most this many judge calls in flight.
    """

    def __init__(self, *, client: LLMClient, cache_dir: Path | None, concurrency: int = 4) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency: must be at least 1, got {concurrency}")
        self.client = client
        self.cache = JudgmentCache(folder=cache_dir)
        self.concurrency = concurrency

    def tasks(self, data: RunData) -> list[JudgeTask]:
        """Every judgment the run asks for, in (game, seq) order: camouflage, teamwork, sharing, then
        self-recommendation. Empty speeches (a seat of an imported game without chat) are not judged."""
        speeches = data.speeches.sort_values(["game", "seq"], kind="stable")
        speeches = speeches[speeches["text"].fillna("").astype(str).str.strip() != ""]  # an imported game's "no speech"
        seats = {g: dict(zip(f["seat"].astype(int), f["role"])) for g, f in data.seats.groupby("game")}
        night = night_info(data.events)
        by_round = rounds(data.events)
        camouflage, teamwork, sharing, recommend = [], [], [], []
        for s in speeches.to_dict("records"):
            row = {c: s.get(c) for c in SPEECH_COLUMNS}
            seat, game = int(row["seat"]), row["game"]
            row["seat"] = seat
            roles = seats.get(game, {})
            others = tuple(x for x in sorted(roles) if x != seat)
            speaker, text = seat_name(seat), quote(str(s.get("text") or ""))  # unforgeable: a JSON string literal
            infos = night.get((game, seat), [])
            if row["quest"] == FIRST_QUEST:
                camouflage.append(self.task("camouflage", row, speaker=speaker, role=row["role"], side=row["side"],
                                             knowledge=knowledge_text(infos), speech=text,
                                             roles_in_game=roles_in_game(list(roles.values()))))
            if others:
                example = ", ".join(f'"{seat_name(o)}": "{label}"'
                                    for o, label in zip(others[:2], ("trust", NOT_MENTIONED)))
                teamwork.append(self.task("teamwork", row, others, speaker=speaker, speech=text, example=example,
                                           others=", ".join(seat_name(o) for o in others)))
            wanted = SHARING_ROLES.get(row["role"])
            known = tuple(sorted({x for kind, xs in infos if kind == wanted for x in xs}))
            if row["quest"] == FIRST_QUEST and wanted and known:
                sharing.append(self.task("sharing", row, known, speaker=speaker, role=row["role"], speech=text,
                                          knowledge=knowledge_text([(k, xs) for k, xs in infos if k == wanted]),
                                          known_players=", ".join(seat_name(x) for x in known)))
            info = by_round.get((game, int(row["quest"]), int(row["attempt"])))
            recommend.append(self.task("self_recommendation", {**row, "leader": (info or {}).get("leader")},
                                        speaker=speaker, speech=text, quest=row["quest"], attempt=row["attempt"],
                                        **_round_text(info, int(row["seq"]))))
        return camouflage + teamwork + sharing + recommend

    def task(self, judge: str, row: dict[str, Any], subjects: tuple[int, ...] = (), **values: Any) -> JudgeTask:
        """One judgment: `judge`'s prompt rendered with `values`, about the speech `row` (its `game`, `seq`,
        `seat` name the call in the trace)."""
        prompt = template(PROMPTS[judge])
        return JudgeTask(judge=judge, row=row, prompt=prompt.render(**values), prompt_hash=prompt.hash,
                         schema=_schema(judge, subjects), subjects=subjects)

    async def judge(self, data: RunData, progress: Progress | None = None) -> Judgments:
        """Judge every speech the metrics need (see the module docstring).

        Args:
            data: the loaded run.
            progress: called with (0, total) first, then (done, total) after each judgment.

        Returns:
            The judged tables.
        """
        tasks = self.tasks(data)
        answers = await self.answers(tasks, progress)
        rows: dict[str, list[dict[str, Any]]] = {name: [] for name in COLUMNS}
        roles = {(g, int(s)): (r, side) for g, s, r, side in
                 data.seats[["game", "seat", "role", "side"]].itertuples(index=False)}
        for task, (raw, cached) in zip(tasks, answers):
            rows[task.judge].extend(_rows(task, raw, cached, roles))
        return Judgments(**{name: _frame(records, COLUMNS[name]) for name, records in rows.items()})

    async def answers(self, tasks: Sequence[JudgeTask],
                      progress: Progress | None = None) -> list[tuple[str | None, bool]]:
        """Answer the tasks, at most `concurrency` calls at once, through the cache.

        Returns:
            Per task, in order: (the raw answer, or None if the call failed; whether it came from the cache).
        """
        slots = asyncio.Semaphore(self.concurrency)
        done = 0
        if progress is not None:
            progress(0, len(tasks))

        async def one(task: JudgeTask) -> tuple[str | None, bool]:
            nonlocal done
            answer = await self._answer(task, slots)
            done += 1
            if progress is not None:
                progress(done, len(tasks))
            return answer

        return list(await asyncio.gather(*(one(t) for t in tasks)))

    async def _answer(self, task: JudgeTask, slots: asyncio.Semaphore) -> tuple[str | None, bool]:
        """(raw answer or None if the call failed, whether it came from the cache)."""
        from langchain_core.messages import HumanMessage

        from avalon_agents.llm.client import LLMCallFailed

        spec = self.client.settings.spec
        key = cache_key(task.judge, task.prompt_hash, [task.prompt], spec)
        hit = self.cache.get(key)
        if hit is not None:
            return hit["raw"], True
        async with slots:
            try:
                raw = await self.client.call(
                    [HumanMessage(task.prompt)], purpose=Purpose(stage="judge", name=task.judge),
                    prompt_id=PROMPTS[task.judge], prompt_hash=task.prompt_hash, schema=task.schema,
                    about={"game": task.row["game"], "speech_seq": int(task.row["seq"]),
                           "speaker": int(task.row["seat"])})
            except LLMCallFailed:
                return None, False  # recorded by the client; not cached, so a rerun tries again
        self.cache.put(key, {"judge": task.judge, "prompt_id": PROMPTS[task.judge], "prompt_hash": task.prompt_hash,
                             "model": spec, "raw": raw, "parsed": task.parse(raw)})
        return raw, False


def judge_run(data: RunData, *, client: LLMClient, cache_dir: Path | None, progress: Progress | None = None,
              concurrency: int = 4) -> Judgments:
    """Judge a run synchronously (see `Judge.judge`); also from a notebook, whose event loop is already running
    (the judging then runs on a loop of its own in a worker thread)."""
    work = Judge(client=client, cache_dir=cache_dir, concurrency=concurrency).judge(data, progress)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, work).result()


def _schema(judge: str, subjects: tuple[int, ...]) -> dict[str, Any]:
    if judge in LABELS:
        return label_schema(judge)
    if judge == "camouflage":
        return {"type": "object", "properties": {"reason": REASON, "label": {"type": "string",
                                                                             "enum": list(CAMOUFLAGE_LABELS)}},
                "required": ["reason", "label"]}
    if judge == "self_recommendation":
        return {"type": "object", "properties": {"reason": REASON, "recommends_self": {"type": "boolean"}},
                "required": ["reason", "recommends_self"]}
    if judge == "teamwork":
        attitude = {"type": "string", "enum": [*ATTITUDES, NOT_MENTIONED]}
        names = [seat_name(s) for s in subjects]
        return {"type": "object", "properties": dict.fromkeys(names, attitude), "required": names}
    seats = {"type": "array", "items": {"type": "integer", "enum": list(subjects)}, "uniqueItems": True,
             "maxItems": len(subjects)}
    return {"type": "object", "properties": {"reason": REASON, "shared": seats}, "required": ["reason", "shared"]}


def _rows(task: JudgeTask, raw: str | None, cached: bool,
          roles: dict[tuple[str, int], tuple[str, str]]) -> list[dict[str, Any]]:
    """The table rows of one judgment (a failed call reads as an unreadable answer)."""
    parsed = task.parse(raw) if raw is not None else None
    base = {**task.row, "raw": raw, "cached": cached}
    if task.judge == "camouflage":
        parsed = parsed or {"label": None, "reason": None, "valid": False}
        return [{**base, "label": parsed["label"], "reason": parsed["reason"], "valid": parsed["valid"]}]
    if task.judge == "self_recommendation":
        parsed = parsed or {"recommends_self": None, "reason": None, "valid": False}
        return [{**base, **parsed}]
    if task.judge == "sharing":
        parsed = parsed or {"shared": None, "reason": None, "valid": False}
        known, shared = list(task.subjects), parsed["shared"]
        rate = len(shared) / len(known) if shared is not None else None
        return [{**base, "known": known, "shared": shared, "share_rate": rate, "reason": parsed["reason"],
                 "valid": parsed["valid"]}]
    if parsed is None or not parsed["valid"]:
        return [{**base, "target": None, "target_role": None, "target_side": None, "label": None, "valid": False}]
    out = []
    for target in task.subjects:
        label = parsed["attitudes"].get(str(target), NOT_MENTIONED)
        if label == NOT_MENTIONED:
            continue
        role, side = roles.get((task.row["game"], target), (None, None))
        out.append({**base, "target": target, "target_role": role, "target_side": side, "label": label,
                    "valid": label is not None})
    return out


def _frame(records: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(records, columns=columns).astype({"valid": bool, "cached": bool})
    for column in ("target", "leader"):
        if column in frame:
            frame[column] = frame[column].astype("Int64")
    return frame
