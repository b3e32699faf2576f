"""What the trace says about a batch of games: LLM calls, tokens, time, and the Valid Response Rate.

The Valid Response Rate is the paper's eq. 8: the share of decision answers (team, vote, quest card,
assassination) whose first answer gave a legal action, whichever stage read it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from avalon_agents.records.trace import Extraction, LLMCall, Record, SeatFault, SpeechCheck


def usage(records: Iterable[Record]) -> dict[str, Any]:
    """Counts and sums over trace records (of one game or many), health included: failed calls by cause,
    re-asks (answers after the first) and fallbacks; of the LLM seats' speeches, those that copied their
    instructions (`echoes`, avalon_agents.speeches), those that said the placeholder (prompts/host/no_speech.txt:
    nothing of their own was left) and the empty ones (a failed call's or a model's empty answer)."""
    calls = extractions = valid = attempts = input_tokens = output_tokens = reasks = throttled = 0
    speeches = echoes = unfinished = echo_reasks = trimmed = placeholders = empty = 0
    seconds = waited = 0.0
    outcomes: Counter[str] = Counter()
    methods: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    seat_faults: Counter[str] = Counter()
    models: dict[str, dict[str, int]] = {}
    for r in records:
        if isinstance(r, LLMCall):
            calls += 1
            tokens = models.setdefault(r.spec or "unknown", {"calls": 0, "input_tokens": 0, "cached_tokens": 0,
                                                             "output_tokens": 0})
            tokens["calls"] += 1
            tokens["input_tokens"] += r.input_tokens
            tokens["cached_tokens"] += r.cached_tokens
            tokens["output_tokens"] += r.output_tokens
            attempts += r.attempts
            outcomes[r.outcome] += 1
            input_tokens += r.input_tokens
            output_tokens += r.output_tokens
            seconds += r.latency_s
            throttled += r.throttled
            waited += r.waited_s
            if r.outcome == "failed":
                causes[(r.error or "unknown").split(":")[0]] += 1
        elif isinstance(r, SpeechCheck):
            speeches += 1
            echoes += r.echo
            unfinished += r.mid_sentence
            echo_reasks += r.reasked
            trimmed += r.trimmed
            placeholders += r.placeholder
            empty += r.words == 0
        elif isinstance(r, SeatFault):
            seat_faults[r.problem] += 1
        elif isinstance(r, Extraction):
            extractions += 1
            valid += r.valid
            methods[r.method] += 1
            reasks += r.answers - 1
    return {
        "llm_calls": calls,
        "attempts": attempts,
        "outcomes": dict(sorted(outcomes.items())),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "llm_seconds": round(seconds, 3),
        "seconds_per_call": round(seconds / calls, 3) if calls else None,
        "decisions": extractions,
        "valid_response_rate": round(valid / extractions, 4) if extractions else None,
        "methods": dict(sorted(methods.items())),
        "failed_calls": outcomes["failed"],
        "failed_by_cause": dict(causes.most_common()),
        "reasks": reasks,
        "throttled": throttled,
        "waited_s": round(waited, 1),
        "fallbacks": methods["fallback"],
        "speeches": speeches,
        "echoes": echoes,
        "echo_rate": round(echoes / speeches, 4) if speeches else None,
        "echo_reasks": echo_reasks,
        "echoes_trimmed": trimmed,
        "mid_sentence": unfinished,
        "placeholder_speeches": placeholders,
        "empty_speeches": empty,
        "by_model": dict(sorted(models.items())),
        "seat_faults": sum(n for p, n in seat_faults.items() if p != "fallback"),
        "seat_faults_by_problem": {p: n for p, n in sorted(seat_faults.items()) if p != "fallback"},
        "seat_fallbacks": seat_faults["fallback"],
    }


def critical_path(records: Iterable[Record]) -> int:
    """The LLM calls of one game that must happen one after another: host steps follow each other, and a
    seat makes its calls within a step in order, while different seats in a step run at the same time. So
    it is the sum over steps of the most calls any one seat made in that step. Multiplied by a fixed model
    latency, it is the least wall time the game can take."""
    per: Counter[tuple[int, Any]] = Counter()
    for r in records:
        if isinstance(r, LLMCall) and r.step is not None:
            per[(r.step, r.seat)] += 1
    longest: dict[int, int] = {}
    for (step, _), n in per.items():
        longest[step] = max(longest.get(step, 0), n)
    return sum(longest.values())
