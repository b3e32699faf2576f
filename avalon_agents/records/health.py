"""Run health: whether a batch of games is a result at all, judged from its trace.

A run whose calls failed or whose answers fell back too often is not a result: `play`, `run` and `analyze`
print the health beside every figure, mark what is over the thresholds, and `play`/`run` then exit with
EXIT_UNHEALTHY. Thresholds are set in an experiment's `health:` section.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from avalon_agents.records.usage import usage

EXIT_UNHEALTHY = 3
"""The exit code of a run that finished but is over its health thresholds, or that stopped because its model
was unusable (distinct from 2, a user mistake)."""


class HealthLimits(BaseModel):
    """The most a run may have of each before it is marked unhealthy."""

    model_config = ConfigDict(extra="forbid")

    max_failed_calls: float = Field(0.05, ge=0, le=1, description="share of LLM calls that failed after retries")
    max_fallbacks: float = Field(0.20, ge=0, le=1, description="share of decisions decided by the paper's fallback")

    def problems(self, u: dict[str, Any]) -> list[str]:
        """What of a usage summary (records.usage) is over the limits, in words; empty if healthy."""
        found = []
        if u["llm_calls"] and u["failed_calls"] / u["llm_calls"] > self.max_failed_calls:
            causes = ", ".join(f"{k} {v}" for k, v in u["failed_by_cause"].items())
            found.append(f"{u['failed_calls']} of {u['llm_calls']} calls failed ({causes}; limit "
                         f"{self.max_failed_calls:.0%})")
        if u["decisions"] and u["fallbacks"] / u["decisions"] > self.max_fallbacks:
            found.append(f"{u['fallbacks']} of {u['decisions']} decisions fell back (limit {self.max_fallbacks:.0%})")
        return found


NOT_DATA = 0.5
"""Speeches are not data when more than this share of the LLM seats' speeches are not their own words: the placeholder
(prompts/host/no_speech.txt, said when nothing of a speech's own was left), empty (a failed call, an empty
answer) or a copy of the prompt spoken as it came (speeches.copies). What is read from speeches (the judged
behaviours, persuasion) then measures the guard, not the model."""


def not_data(speeches: int, not_their_own: int) -> str | None:
    """The warning that a run's speeches are not data (over NOT_DATA of them are not their own: placeholders, empty
    or copies), or None."""
    if not speeches or not_their_own / speeches <= NOT_DATA:
        return None
    return (f"speeches are not data: {not_their_own} of {speeches} are not their own (placeholders, empty or "
            f"copies), over "
            f"{NOT_DATA:.0%}; what is judged from them measures the speech guard, not the model")


def problems(u: dict[str, Any], limits: HealthLimits | None = None) -> list[str]:
    """Everything a usage summary (records.usage, Health.summary) says is wrong with a run, in words: what is over
    `limits` (HealthLimits.problems: these make `play` and `run` exit EXIT_UNHEALTHY) and speeches that are not data
    (`not_data`: counted as not the seats' own, the placeholder, empty or a copy of the prompt). What `avalon view`
    marks a run with."""
    found = (limits or HealthLimits()).problems(u)
    note = not_data(u.get("speeches") or 0, not_their_own(u))
    return found + ([note] if note else [])


def not_their_own(u: dict[str, Any]) -> int:
    """The speeches of a usage summary that are not the seats' own words: the placeholders, the empty ones and the
    copies spoken as they came (echoes not asked again; an echo asked again is its second answer, own words or a
    placeholder)."""
    return (u.get("placeholder_speeches", 0) + u.get("empty_speeches", 0)
            + max(0, u.get("echoes", 0) - u.get("echo_reasks", 0)))


def health_line(u: dict[str, Any]) -> str:
    """One line of health figures for people."""
    calls, decisions = u["llm_calls"], u["decisions"]
    causes = ", ".join(f"{k} {v}" for k, v in u["failed_by_cause"].items())
    failed = f"{u['failed_calls']}/{calls} failed" + (f" ({causes})" if causes else "")
    vrr = u["valid_response_rate"]
    throttled = (f"; throttled: {u['throttled']} answers 429, {u['waited_s']:.0f} s waited"
                 if u.get("throttled") else "")
    speeches = ""
    if said := u.get("speeches"):
        placeholders, empty = u.get("placeholder_speeches", 0), u.get("empty_speeches", 0)
        note = not_data(said, not_their_own(u))
        speeches = (f"; speeches {said}: {u['echoes']} copy their instructions, {placeholders} placeholders, "
                    f"{empty} empty, {u['mid_sentence']} end mid-sentence" + (f"; {note}" if note else ""))
    programs = (f"; program and web seats: {u['seat_faults']} protocol errors, {u['seat_fallbacks']} fallbacks"
                if u.get("seat_faults") or u.get("seat_fallbacks") else "")
    return (f"health: calls {failed}, {u['attempts'] - calls} retries{throttled}; decisions {u['reasks']} re-asks, "
            f"{u['fallbacks']}/{decisions} fallbacks, valid response rate {'n/a' if vrr is None else f'{vrr:.1%}'}"
            f"{speeches}{programs}")


class Health(BaseModel):
    """health.json: a game's health, as records.usage counts it from its trace; its counts add up (the outcomes
    to the calls, the failed calls to their causes, the methods to the decisions, the fallbacks to the method, the
    models' calls to the calls, the seat faults to their problems), or it is refused on reading.

    `Health.total(healths)` sums several games' (a run's row, a variant's): counts added, rates counted again.
    """

    model_config = ConfigDict(extra="allow")

    llm_calls: int = 0
    attempts: int = 0
    outcomes: dict[str, int] = Field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    llm_seconds: float = 0.0
    seconds_per_call: float | None = None
    decisions: int = 0
    valid: int | None = None
    """Decisions whose first answer gave a legal action (older files keep only the rate: counted back from it)."""
    valid_response_rate: float | None = None
    methods: dict[str, int] = Field(default_factory=dict)
    failed_calls: int = 0
    failed_by_cause: dict[str, int] = Field(default_factory=dict)
    reasks: int = 0
    throttled: int = 0
    waited_s: float = 0.0
    fallbacks: int = 0
    speeches: int = 0
    echoes: int = 0
    echo_rate: float | None = None
    echo_reasks: int = 0
    echoes_trimmed: int = 0
    mid_sentence: int = 0
    placeholder_speeches: int = 0
    empty_speeches: int = 0
    by_model: dict[str, dict[str, int]] = Field(default_factory=dict)
    seat_faults: int = 0
    seat_faults_by_problem: dict[str, int] = Field(default_factory=dict)
    seat_fallbacks: int = 0

    @model_validator(mode="after")
    def _adds_up(self) -> Health:
        if self.valid is None:
            self.valid = round((self.valid_response_rate or 0) * self.decisions)
        wrong = [what for what, ok in (
            ("outcomes != llm_calls", not self.outcomes or sum(self.outcomes.values()) == self.llm_calls),
            ("failed_calls != outcomes' failed",
             not self.outcomes or self.outcomes.get("failed", 0) == self.failed_calls),
            ("failed_by_cause != failed_calls", sum(self.failed_by_cause.values()) == self.failed_calls),
            ("methods != decisions", not self.methods or sum(self.methods.values()) == self.decisions),
            ("fallbacks != methods' fallback", not self.methods or self.methods.get("fallback", 0) == self.fallbacks),
            ("by_model's calls != llm_calls",
             not self.by_model or sum(m.get("calls", 0) for m in self.by_model.values()) == self.llm_calls),
            ("seat_faults_by_problem != seat_faults",
             not self.seat_faults_by_problem or sum(self.seat_faults_by_problem.values()) == self.seat_faults),
            ("valid > decisions", 0 <= self.valid <= self.decisions)) if not ok]
        if wrong:
            raise ValueError(f"health: its counts do not add up ({'; '.join(wrong)})")
        return self

    @classmethod
    def of(cls, records: Iterable[Any]) -> Health:
        """The health of trace records (records.usage), with the valid decisions counted."""
        from avalon_agents.records.trace import Extraction

        records = list(records)
        return cls(**usage(records), valid=sum(1 for r in records if isinstance(r, Extraction) and r.valid))

    @classmethod
    def total(cls, healths: Iterable[Health]) -> Health:
        """Several games' health summed: every count and count table added, the rates and means counted again."""
        sums: dict[str, Any] = {}
        for h in healths:
            for name, value in h.model_dump().items():
                if name in RATES or value is None:
                    continue
                if isinstance(value, dict):
                    mine = sums.setdefault(name, {})
                    for key, n in value.items():
                        if isinstance(n, dict):
                            inner = mine.setdefault(key, {})
                            for k, m in n.items():
                                inner[k] = inner.get(k, 0) + m
                        else:
                            mine[key] = mine.get(key, 0) + n
                elif isinstance(value, (int, float)) and not isinstance(value, bool):
                    sums[name] = sums.get(name, 0) + value
        calls, decisions, speeches = sums.get("llm_calls", 0), sums.get("decisions", 0), sums.get("speeches", 0)
        for name in ("llm_seconds", "waited_s"):
            if name in sums:
                sums[name] = round(sums[name], 3)
        sums["failed_by_cause"] = dict(sorted(sums.get("failed_by_cause", {}).items(), key=lambda kv: -kv[1]))
        return cls(**sums, seconds_per_call=round(sums.get("llm_seconds", 0) / calls, 3) if calls else None,
                   valid_response_rate=round(sums.get("valid", 0) / decisions, 4) if decisions else None,
                   echo_rate=round(sums.get("echoes", 0) / speeches, 4) if speeches else None)

    def __add__(self, other: Health) -> Health:
        return Health.total([self, other])

    def summary(self) -> dict[str, Any]:
        """As records.usage gives it (the dict records.health's lines and limits read)."""
        return self.model_dump()


RATES = ("seconds_per_call", "valid_response_rate", "echo_rate")
"""Health's figures that are not counts: counted again from the sums, never added."""
