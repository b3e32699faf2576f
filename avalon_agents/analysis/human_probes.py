"""Belief probes on imported human games (`avalon probe-humans`): at the end of each quest, a model is given the
game as one seat saw it and asked who is Merlin and how likely each other player is to be evil.

The question, the answer's schema and how it is read are the in-game belief probe's (`host.probe`,
`prompts/probes/belief.txt`): the seat's rules and role card as the system prompt, then the events that seat
could see up to the end of the quest (`seat_view`: public events and speeches, its own role card, night
information, votes and quest cards; never another seat's), worded by `narrate.announce` as the host words them.
Every seat is probed at the end of every quest that went out.

Each answer is cached in `OUT/answers.jsonl` (keyed by the rendered prompt and the model's settings), so a
rerun or an interrupted run asks only what is missing; every call made is an `llm_call` record in
`OUT/calls/<game>.jsonl`. Scoring is in `analysis.human_scores`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avalon_agents.analysis.judge_cache import JudgmentCache, cache_key
from avalon_agents.core.events import GameEvent
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Role, Seat
from avalon_agents.host.probe import PROMPT, BeliefProbe, probe_schema, read_answer
from avalon_agents.llm.client import LLMCallFailed, LLMClient
from avalon_agents.prompting import template
from avalon_agents.records.run_dir import META, JsonlTracer, read_events, read_result, read_trace
from avalon_agents.records.trace import Annotation, Purpose

PURPOSE = Purpose(stage="probe", name="belief", part="human_game")
ANSWERS = "answers.jsonl"
CALLS = "calls"
Progress = Callable[[int, int], None]


@dataclass
class HumanGame:
    """An imported game, read: its folder name, rules, events, true roles and stated beliefs."""

    name: str
    source: str
    file: str
    rules: RuleSet
    events: list[GameEvent]
    roles: dict[Seat, Role]
    beliefs: list[Annotation]

    @property
    def quest_ends(self) -> list[GameEvent]:
        """The `quest_completed` events: the probe points."""
        return [e for e in self.events if e.type == "quest_completed"]


def imported_games(run: Path, limit: int | None = None) -> list[HumanGame]:
    """The imported games of `run` (folders `game-*` whose meta.json says where they came from), in order;
    the first `limit` only if given.

    Raises:
        ValueError: `run` is not a folder, holds no game, or holds games that were not imported (one line).
    """
    run = Path(run)
    if not run.is_dir():
        raise ValueError(f"run: {run} is not a folder")
    dirs = sorted(p.parent for p in run.glob(f"*/{META}") if (p.parent / "result.json").is_file())
    if not dirs:
        raise ValueError(f"run: no finished games in {run} (import some: avalon import avalon-nlu DATASET --out RUN)")
    games = []
    for d in dirs:
        meta = json.loads((d / META).read_text())
        imported = meta.get("source")
        if not imported:
            raise ValueError(f"run: {d.name} is not an imported human game (made by avalon import)")
        source = imported.get("format", "") if isinstance(imported, dict) else str(imported)
        file = imported.get("file", "") if isinstance(imported, dict) else ""
        roles = {int(s): Role(r) for s, r in read_result(d).roles.items()}
        beliefs = [r for r in read_trace(d) if isinstance(r, Annotation) and r.kind == "belief"]
        games.append(HumanGame(name=d.name, source=source, file=file, rules=RuleSet.model_validate(meta["rules"]),
                               events=read_events(d), roles=roles, beliefs=beliefs))
    return games[:limit] if limit is not None else games


def seat_view(events: Sequence[GameEvent], seat: Seat, end: int) -> list[GameEvent]:
    """What `seat` could see up to event `end` (included): exactly the events visible to it, as the host
    delivers them."""
    return [e for e in events if e.seq <= end and (e.visible_to == "all" or seat in e.visible_to)]


@dataclass
class Asked:
    """One probe: the game, seat and quest, the answer read, and whether the history was cut to fit."""

    game: str
    seat: Seat
    quest: int
    end: int
    merlin_guess: int | None
    p_evil: dict[str, float]
    valid: bool
    raw: str | None
    cut: bool
    cached: bool


class HumanProbe:
    """Asks a model the belief probe at every seat and quest end of imported games, caching the answers.

    Args:
        client: the model's client (its settings say the history budget unless `history_tokens` is given).
        out: where answers.jsonl and calls/ go.
        history_tokens: the budget for the seat's view in the prompt (most recent part kept; night information
            always); None: the model's (as in games).
        concurrency: probes in flight at once.
    """

    def __init__(self, client: LLMClient, out: Path, history_tokens: int | None = None,
                 concurrency: int = 4) -> None:
        self.client = client
        self.out = Path(out)
        self.budget = history_tokens if history_tokens is not None else client.settings.history_tokens
        self.cache = JudgmentCache(folder=self.out, name=ANSWERS)
        self.limit = asyncio.Semaphore(concurrency)
        settings = client.settings
        self.model = json.dumps({"spec": settings.spec, "temperature": settings.temperature,
                                 "max_tokens": settings.max_tokens, "kwargs": settings.kwargs,
                                 "constrained": settings.schema_style}, sort_keys=True)

    async def run(self, games: Sequence[HumanGame], progress: Progress | None = None) -> list[Asked]:
        """Probe every seat at every quest end of `games`; the answers in game, quest, seat order."""
        jobs = [(g, end, seat) for g in games for end in g.quest_ends for seat in g.rules.seats]
        done = 0

        async def one(g: HumanGame, end: GameEvent, seat: Seat) -> Asked:
            nonlocal done
            async with self.limit:
                asked = await self.ask(g, end, seat)
            done += 1
            if progress is not None:
                progress(done, len(jobs))
            return asked

        if progress is not None:
            progress(0, len(jobs))
        return list(await asyncio.gather(*(one(*job) for job in jobs)))

    async def ask(self, game: HumanGame, end: GameEvent, seat: Seat) -> Asked:
        """One probe (from the cache when it was asked before); never raises for a bad answer or a failed call."""
        view = seat_view(game.events, seat, end.seq)
        probe = BeliefProbe(clients={seat: self.client}, history_tokens=self.budget)
        messages = probe.messages(rules=game.rules, seat=seat, quest=end.quest, events=view)
        prompt = template(PROMPT)
        key = cache_key("probe_humans", prompt.hash, [str(m.content) for m in messages], self.model)
        cut = self._cut(game.rules, view)
        hit = self.cache.get(key)
        raw: str | None
        if hit is not None:
            raw = hit["raw"]
        else:
            schema = probe_schema(game.rules, seat) if self.client.settings.schema_style != "none" else None
            client = self.client.with_tracer(JsonlTracer(self.out / CALLS / f"{game.name}.jsonl"))
            try:
                raw = await client.call(messages, purpose=PURPOSE, prompt_id=prompt.id, prompt_hash=prompt.hash,
                                        seat=seat, schema=schema, quest=end.quest,
                                        about={"game": game.name, "file": game.file})
            except LLMCallFailed:
                raw = None  # recorded in calls/ already; asked again on the next run
            if raw is not None:
                self.cache.put(key, {"game": game.name, "seat": seat, "quest": end.quest, "prompt_id": prompt.id,
                                     "prompt_hash": prompt.hash, "model": self.client.settings.spec, "raw": raw})
        merlin, p_evil, valid = read_answer(raw, game.rules, seat)
        return Asked(game=game.name, seat=seat, quest=end.quest, end=end.seq, merlin_guess=merlin, p_evil=p_evil,
                     valid=valid, raw=raw, cut=cut, cached=hit is not None)

    def _cut(self, rules: RuleSet, view: Sequence[GameEvent]) -> bool:
        """Whether the seat's view was longer than the budget (its oldest lines left out)."""
        return BeliefProbe.history(rules, view, self.budget) != BeliefProbe.history(rules, view, 10**9)


def answers_to_rows(games: Sequence[HumanGame], asked: Sequence[Asked]) -> list[dict[str, Any]]:
    """The probes as rows with the truth attached (what `human_scores.score_rows` takes)."""
    by_name = {g.name: g for g in games}
    rows = []
    for a in asked:
        g = by_name[a.game]
        evil = sorted(s for s, r in g.roles.items() if r.side.value == "evil")
        merlin = next((s for s, r in g.roles.items() if r is Role.MERLIN), None)
        role = g.roles[a.seat]
        rows.append({"game": a.game, "file": g.file, "seat": a.seat, "role": role.value, "side": role.side.value,
                     "quest": a.quest, "end_seq": a.end, "valid": a.valid, "merlin_guess": a.merlin_guess,
                     "p_evil": dict(a.p_evil), "merlin_seat": merlin, "evil_seats": evil, "history_cut": a.cut,
                     "cached": a.cached, "raw": a.raw})
    return rows
