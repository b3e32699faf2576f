"""Run health: whether a batch of games is a result at all, judged from its trace.

A run whose calls failed or whose answers fell back too often is not a result: `play`, `run` and `analyze`
print the health beside every figure, mark what is over the thresholds, and `play`/`run` then exit with
EXIT_UNHEALTHY. Thresholds are set in an experiment's `health:` section.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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
(prompts/host/no_speech.txt, said when nothing of a speech's own was left) or empty (a failed call, an empty
answer). What is read from speeches (the judged behaviours, persuasion) then measures the guard, not the model."""


def not_data(speeches: int, not_their_own: int) -> str | None:
    """The warning that a run's speeches are not data (over NOT_DATA of them are placeholders or empty), or None."""
    if not speeches or not_their_own / speeches <= NOT_DATA:
        return None
    return (f"speeches are not data: {not_their_own} of {speeches} are placeholders or empty, over "
            f"{NOT_DATA:.0%}; what is judged from them measures the speech guard, not the model")


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
        note = not_data(said, placeholders + empty)
        speeches = (f"; speeches {said}: {u['echoes']} copy their instructions, {placeholders} placeholders, "
                    f"{empty} empty, {u['mid_sentence']} end mid-sentence" + (f"; {note}" if note else ""))
    programs = (f"; program and web seats: {u['seat_faults']} protocol errors, {u['seat_fallbacks']} fallbacks"
                if u.get("seat_faults") or u.get("seat_fallbacks") else "")
    return (f"health: calls {failed}, {u['attempts'] - calls} retries{throttled}; decisions {u['reasks']} re-asks, "
            f"{u['fallbacks']}/{decisions} fallbacks, valid response rate {'n/a' if vrr is None else f'{vrr:.1%}'}"
            f"{speeches}{programs}")
