"""What `avalon run --check` prints: variants x series x games and the LLM calls to expect.

The per-seat estimates are `avalon bench cost` figures (6 players, official rules, 5 scripted games each;
README, "Cost") divided by 6; re-measure them with `avalon bench cost` after changing an agent.
"""

from __future__ import annotations

from pathlib import Path

from avalon_agents.agents.registry import needs_llm
from avalon_agents.analysis.stats import wilson
from avalon_agents.experiments.config import AgentSpec, Experiment
from avalon_agents.modules import AgentConfig
from avalon_agents.modules.base import SLOTS

CALLS_PER_SEAT = {  # per game
    "baseline": 267 / 6,
    "llm": 93 / 6,
}
MODULE_CALLS = {  # cognitive agent, per game for 6 seats, per module slot (the README's split)
    "per_round": {"summary": 19, "analysis": 25, "plan": 25, "action": 0, "response": 79, "experience": 18},
    "per_turn": {"summary": 20, "analysis": 74, "plan": 74, "action": 74, "response": 74, "experience": 18},
}
"""per_round: action and response are one call (the response slot's); with action off the response still
answers each request, so the count stays."""
PROBES_PER_SEAT = 4.0
"""Belief probes per LLM seat and game: one per completed quest, 3 to 5."""


def calls_per_seat(agent: AgentSpec, learning: bool = True) -> float:
    """Expected calls per game of one seat of this agent (disabled modules cost nothing; without `learning`,
    as in a series' last game, experience learning costs nothing either)."""
    if agent.kind == "cognitive":
        modules = agent.modules or AgentConfig()
        per_turn = any(modules.settings(slot).enabled and modules.settings(slot).options.get("cadence") == "per_turn"
                       for slot in ("analysis", "plan"))
        calls = MODULE_CALLS["per_turn" if per_turn else "per_round"]
        return sum(calls[slot] for slot in modules.enabled() if learning or slot != "experience") / 6
    return CALLS_PER_SEAT.get(agent.kind, 0.0)


def calls_per_game(exp: Experiment, learning: bool = True) -> float:
    """Expected calls per game: every seat's agent's estimate (sides split by the official good/evil counts),
    plus one belief probe per LLM seat and quest when `probes` is on."""
    rules = exp.game_rules()
    if exp.lineup is not None:
        seats = [(exp.agents[name], n) for name, n in exp.lineup.items()]
    elif exp.rotation is not None:  # a tournament: every entrant sits players / entrants seats on average
        seats = [(exp.agents[name], exp.players / len(exp.rotation)) for name in exp.rotation]
    else:
        seats = [(exp.agents[exp.agent_for_role(role)], 1) for role in rules.roles]
    probes = PROBES_PER_SEAT if exp.probes else 0.0
    return sum((calls_per_seat(agent, learning) + (probes if needs_llm(agent.kind) else 0.0)) * n
               for agent, n in seats)


def calls_per_run(exp: Experiment) -> float:
    """Expected calls of all the variant's games: a series' last game learns nothing (unless
    `learn_after_last`)."""
    last = calls_per_game(exp, learning=exp.learn_after_last)
    return calls_per_game(exp) * (exp.games - exp.series) + last * exp.series


def pipeline(agent: AgentSpec) -> str:
    """How an agent plays, in words: the cognitive agent's cadence and calls, the others' kind."""
    if agent.kind != "cognitive":
        return agent.kind
    modules = agent.modules or AgentConfig()
    per_turn = [slot for slot in ("analysis", "plan") if modules.settings(slot).enabled
                and modules.settings(slot).options.get("cadence") == "per_turn"]
    combined = modules.settings("action").enabled and modules.settings("action").options.get("combine", True)
    off = [slot for slot in SLOTS if not modules.settings(slot).enabled]
    cadence = "+".join(per_turn) + " before every answer" if per_turn else "analysis and plan once per round"
    return (f"cognitive ({cadence}"
            f"; {'action and response in one call' if combined else 'action and response as separate calls'}"
            f"{'; off: ' + ', '.join(off) if off else ''})")


def decisions(exp: Experiment) -> str:
    settings = exp.model
    return "free text, read by the extractor" if settings is not None and settings.constrained is False else \
        "JSON-schema constrained where the model supports it"


def plan_lines(variants: dict[str, Experiment], out: Path) -> list[str]:
    first = next(iter(variants.values()))
    lines = [f"experiment {first.name}: {len(variants)} variant(s), {first.rules} rules, {first.players} players",
             f"decisions: {decisions(first)}",
             *(f"agent {name}: {pipeline(agent)}" + (f", {agent.cards} role cards" if needs_llm(agent.kind) else "")
               for name, agent in first.agents.items()),
             f"{'variant':<28}{'series':>7}{'games/series':>13}{'games':>7}{'est. LLM calls':>16}"
             f"{'win-rate CI ±':>15}{'detectable diff.':>18}"]
    total_games = total_calls = 0
    for name, exp in variants.items():
        calls = calls_per_run(exp)
        total_games += exp.games
        total_calls += calls
        half, diff = precision(exp.games)
        half_text = f"{half:.0%}" if half < 1 else ">100%"
        diff_text = f"{diff:.0%}" if diff < 1 else ">100%"
        lines.append(f"{name:<28}{exp.series:>7}{exp.games_per_series:>13}{exp.games:>7}{calls:>16,.0f}"
                     f"{half_text:>15}{diff_text:>18}")
    lines.append(f"{'total':<28}{'':>7}{'':>13}{total_games:>7}{total_calls:>16,.0f}")
    lines.append("win-rate CI ±: half the width of a variant's 95% interval at a 50% win rate; detectable diff.: the "
                 "smallest difference between two variants' win rates found 80% of the time at the 5% level")
    lines.append(f"run directory: {out}")
    return lines


def precision(games: int, rate: float = 0.5) -> tuple[float, float]:
    """(half the width of the 95% Wilson interval `avalon run` prints for a win rate over `games` games, the
    smallest difference between two such variants a two-sided test at the 5% level detects with 80% power, by
    the normal approximation), at the given rate."""
    if games <= 0:
        return float("nan"), float("nan")
    low, high = wilson(round(rate * games), games)
    spread = (rate * (1 - rate) / games) ** 0.5
    return (high - low) / 2, (1.96 + 0.84) * spread * 2 ** 0.5
