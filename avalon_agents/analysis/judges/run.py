"""Judging a run: `Judge` makes each judgment a registered judge asks for (`registry.JUDGES`) through the
judgments' disk cache (`cache`), so a rerun over the same records makes no call, and `Judgments` holds the
judged tables (their summaries are in `analysis.paper.behavior`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from avalon_agents.analysis.judges.cache import JudgmentCache, cache_key
from avalon_agents.analysis.judges.context import night_info, rounds
from avalon_agents.analysis.judges.registry import JUDGES, judge_spec
from avalon_agents.analysis.judges.spec import SPEECH_COLUMNS, Roles, Speech
from avalon_agents.analysis.load import RunData, Tables
from avalon_agents.core.types import seat_name
from avalon_agents.narrate import quote
from avalon_agents.prompting import template
from avalon_agents.records.trace import Purpose

if TYPE_CHECKING:  # the judges call a model only when asked: loading a run imports no model client
    from avalon_agents.llm.client import LLMClient

Progress = Callable[[int, int], None]
"""progress(done, total): called once with done=0, then after each judgment."""


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
        return judge_spec(self.judge).parse(raw, self.subjects)


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
        more: the tables of judges registered beyond these four, by name.
    """

    camouflage: pd.DataFrame
    teamwork: pd.DataFrame
    sharing: pd.DataFrame
    self_recommendation: pd.DataFrame
    more: dict[str, pd.DataFrame] = field(default_factory=dict)

    @classmethod
    def of(cls, frames: dict[str, pd.DataFrame]) -> Judgments:
        """The tables by judge name (each field's, the rest in `more`)."""
        own = [f.name for f in fields(cls) if f.name != "more"]
        return cls(**{name: frames[name] for name in own}, more={n: f for n, f in frames.items() if n not in own})

    def tables(self) -> dict[str, pd.DataFrame]:
        return {**{f.name: getattr(self, f.name) for f in fields(self) if f.name != "more"}, **self.more}


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
        """Every judgment the run asks for: per judge whose spec says `analyze` (in `JUDGES` order: camouflage,
        teamwork, sharing, then self-recommendation), the speeches it asks about in (game, seq) order. Empty
        speeches (a seat of an imported game without chat) are not judged."""
        speeches = data.speeches.sort_values(["game", "seq"], kind="stable")
        speeches = speeches[speeches["text"].fillna("").astype(str).str.strip() != ""]  # an imported game's "no speech"
        seats = {g: dict(zip(f["seat"].astype(int), f["role"])) for g, f in data.seats.groupby("game")}
        night = night_info(data.events)
        by_round = rounds(data.events)
        asked: dict[str, list[JudgeTask]] = {name: [] for name, spec in JUDGES.items() if spec.analyze}
        for s in speeches.to_dict("records"):
            row = {c: s.get(c) for c in SPEECH_COLUMNS}
            seat, game = int(row["seat"]), row["game"]
            row["seat"] = seat
            speech = Speech(row=row, speaker=seat_name(seat), text=quote(str(s.get("text") or "")),
                            roles=seats.get(game, {}), night=night.get((game, seat), []),
                            round=by_round.get((game, int(row["quest"]), int(row["attempt"]))))
            for name, tasks in asked.items():
                if (ask := JUDGES[name].ask(speech)) is not None:
                    tasks.append(self.task(name, {**row, **ask.row}, ask.subjects, **ask.values))
        return [task for tasks in asked.values() for task in tasks]

    def task(self, judge: str, row: dict[str, Any], subjects: tuple[int, ...] = (), **values: Any) -> JudgeTask:
        """One judgment: `judge`'s prompt rendered with `values`, about the speech `row` (its `game`, `seq`,
        `seat` name the call in the trace)."""
        spec = judge_spec(judge)
        prompt = template(spec.prompt)
        return JudgeTask(judge=judge, row=row, prompt=prompt.render(**values), prompt_hash=prompt.hash,
                         schema=spec.schema(subjects), subjects=subjects)

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
        rows: dict[str, list[dict[str, Any]]] = {name: [] for name, spec in JUDGES.items() if spec.analyze}
        roles = {(g, int(s)): (r, side) for g, s, r, side in
                 data.seats[["game", "seat", "role", "side"]].itertuples(index=False)}
        for task, (raw, cached) in zip(tasks, answers):
            rows[task.judge].extend(_rows(task, raw, cached, roles))
        return Judgments.of({name: _frame(records, list(JUDGES[name].columns)) for name, records in rows.items()})

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
        prompt_id = judge_spec(task.judge).prompt
        key = cache_key(task.judge, task.prompt_hash, [task.prompt], spec)
        hit = self.cache.get(key)
        if hit is not None:
            return hit["raw"], True
        async with slots:
            try:
                raw = await self.client.call(
                    [HumanMessage(task.prompt)], purpose=Purpose(stage="judge", name=task.judge),
                    prompt_id=prompt_id, prompt_hash=task.prompt_hash, schema=task.schema,
                    about={"game": task.row["game"], "speech_seq": int(task.row["seq"]),
                           "speaker": int(task.row["seat"])})
            except LLMCallFailed:
                return None, False  # recorded by the client; not cached, so a rerun tries again
        self.cache.put(key, {"judge": task.judge, "prompt_id": prompt_id, "prompt_hash": task.prompt_hash,
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


def _rows(task: JudgeTask, raw: str | None, cached: bool, roles: Roles) -> list[dict[str, Any]]:
    """The table rows of one judgment (a failed call reads as an empty, unreadable answer)."""
    base = {**task.row, "raw": raw, "cached": cached}
    return judge_spec(task.judge).rows(base, task.parse(raw if raw is not None else ""), task.subjects, roles)


def _frame(records: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(records, columns=columns).astype({"valid": bool, "cached": bool})
    for column in ("target", "leader"):
        if column in frame:
            frame[column] = frame[column].astype("Int64")
    return frame
