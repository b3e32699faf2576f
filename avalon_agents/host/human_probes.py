"""Belief probes on imported human games (`avalon probe-humans`): at the end of each quest, a model is given the
game as one seat saw it and asked who is Merlin and how likely each other player is to be evil.

The question, the answer's schema and how it is read are the in-game belief probe's (`host.probe`,
`prompts/probes/belief.txt`): the seat's rules and role card as the system prompt, then the events that seat
could see up to the end of the quest (`seat_view`: public events and speeches, its own role card, night
information, votes and quest cards; never another seat's), worded by `narrate.announce` as the host words them.
Every seat is probed at the end of every quest that went out.

Each answer is cached in `OUT/answers.jsonl` (keyed by the rendered prompt and the model's settings), so a
rerun or an interrupted run asks only what is missing; every call made is an `llm_call` record in
`OUT/calls/<game>.jsonl`. The games are read by `analysis.humans.games`, scored by
`analysis.humans.scores` and written by `analysis.humans.report`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from avalon_agents.analysis.humans.games import Asked, HumanGame, Progress, answers_to_rows, imported_games
from avalon_agents.analysis.humans.report import HumanProbeResult, provenance, write
from avalon_agents.analysis.humans.scores import by_quest, by_role, score_rows
from avalon_agents.analysis.judges.cache import JudgmentCache, cache_key
from avalon_agents.core.events import GameEvent
from avalon_agents.core.rules import RuleSet
from avalon_agents.core.types import Seat
from avalon_agents.host.probe import PROMPT, BeliefProbe, probe_schema, read_answer
from avalon_agents.llm.health import LLMCallFailed
from avalon_agents.prompting import template
from avalon_agents.records.run_dir import JsonlTracer
from avalon_agents.records.trace import Purpose

if TYPE_CHECKING:
    from avalon_agents.llm.client import LLMClient

PURPOSE = Purpose(stage="probe", name="belief", part="human_game")
ANSWERS = "answers.jsonl"
CALLS = "calls"
OUT = "probes-humans"


def seat_view(events: Sequence[GameEvent], seat: Seat, end: int) -> list[GameEvent]:
    """What `seat` could see up to event `end` (included): exactly the events visible to it, as the host
    delivers them."""
    return [e for e in events if e.seq <= end and (e.visible_to == "all" or seat in e.visible_to)]



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
        return BeliefProbe.history(rules, view, self.budget)[0] != BeliefProbe.history(rules, view, 10**9)[0]


async def probe_humans(run: Path, client: LLMClient, out: Path | None = None, games: int | None = None,
                       history_tokens: int | None = None, concurrency: int = 4,
                       progress: Progress | None = None) -> HumanProbeResult:
    """Probe every seat at every quest end of the imported games of `run` (the first `games` if given), score
    the answers and write the files under `out` (default RUN/probes-humans).

    Raises:
        ValueError: not a run of imported games, no games, a bad count (one line).
    """
    run = Path(run)
    if games is not None and games < 1:
        raise ValueError(f"games: must be at least 1, got {games}")
    if concurrency < 1:
        raise ValueError(f"concurrency: must be at least 1, got {concurrency}")
    if history_tokens is not None and history_tokens < 1:
        raise ValueError(f"history-tokens: must be at least 1, got {history_tokens}")
    found = imported_games(run, games)
    out = Path(out) if out else run / OUT
    out.mkdir(parents=True, exist_ok=True)
    probe = HumanProbe(client, out, history_tokens=history_tokens, concurrency=concurrency)
    asked = await probe.run(found, progress)
    scored = score_rows(answers_to_rows(found, asked), {g.name: g.beliefs for g in found})
    result = HumanProbeResult(games=found, scored=scored, quests=by_quest(scored), roles=by_role(scored), out=out,
                              provenance=provenance(run, found, client.settings, PROMPT, probe.budget, scored),
                              asked=sum(not a.cached for a in asked))
    write(result)
    return result
