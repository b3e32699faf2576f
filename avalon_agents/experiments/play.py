"""`avalon play --out` as a study on the scheduler: a batch of games between agent kinds named per seat, one lane of
games played in order into OUT/game-NNNNN (host.batch makes the jobs and the summary).

The scheduler gives it what every study has: the lock, the fingerprint in OUT/study.json (a rerun under other
rules, seats, seed or model is refused, naming what changed; one under the same resumes: finished games kept, an
unfinished one played again from its start), the run record and progress, the budget (no game started that would
take the games over --budget-usd), the health line and the exit codes. Its measure is the batch's summary
(`batch_summary`), read back from the finished games; its lines are what `avalon play` prints: a game's
transcript, or the summary, and the LLM seats' usage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from avalon_agents.experiments.study import Health, Lane, Outcome, Study
from avalon_agents.host.batch import Played, batch_fingerprint, batch_summary
from avalon_agents.host.job import GameJob
from avalon_agents.records.run_dir import game_dir, is_done, read_events, read_result
from avalon_agents.records.transcript import fell_back, transcript

GROUP = ""
"""Its one group (the budget's and the health's: the whole batch)."""


@dataclass
class PlayStudy(Study):
    """A batch of games (`host.batch.batch`'s jobs) as a study: one lane, game k into OUT/game-0000k.

    Args:
        games: the game jobs, in order.
        order: the listing orders the batch was asked for (its summary and fingerprint say them).
        human: the seat a person plays (its game's transcript is not printed: the person saw it as the seat).
        shown: how many lines of a lone game's transcript were already printed as it went (a live view's).
    """

    command: ClassVar[str] = "play"

    games: Sequence[GameJob]
    order: dict[str, str] | None = None
    human: int | None = None
    shown: Callable[[], int] = lambda: 0
    name: str = "play"

    def lanes(self, out: Path) -> list[Lane]:
        return [Lane("play", GROUP, tuple(game_dir(out, i) for i in range(1, len(self.games) + 1)))]

    def jobs(self, lane: Lane, clients: Any, first: int) -> Callable[[int], GameJob]:
        return lambda n: self.games[n - 1]  # the batch's own setups (their clients) play it

    def fingerprint(self) -> dict[str, Any]:
        return batch_fingerprint(self.games, self.order)

    def config(self) -> dict[str, Any]:
        return {**self.fingerprint()["play"], "games": len(self.games)}

    def measure(self, out: Path) -> dict[str, Any]:
        """The batch's summary over its finished games (their records read back one game at a time)."""
        paths = [path for path in self.lanes(out)[0].paths if is_done(path)]
        lone = len(self.games) == 1
        played = [Played(i, read_result(path), read_events(path) if lone else [], [], kept=True, trace=path)
                  for i, path in enumerate(paths)]
        return {"summary": batch_summary(self.games, played, self.order, out), "played": played}

    def report(self, out: Path, measured: Any, health: Health) -> None:
        return None  # the games are its files

    def lines(self, outcome: Outcome) -> list[str]:
        summary, played = outcome.measured["summary"], outcome.measured["played"]
        lines: list[str] = []
        if self.human is not None or not played:
            pass  # the person has seen the game as the seat saw it; the transcript would show what it may not see
        elif len(self.games) == 1:
            decided = fell_back(played[-1].ledger())  # the decisions its fallback made, marked on their lines
            lines += transcript(played[-1].events, decided=decided)[self.shown():]  # those a live view has not printed
        else:
            lines += summary_lines(summary)
        if "usage" in summary:
            lines += usage_lines(summary["usage"], summary["games"])
            if "" in outcome.health:
                lines.append(outcome.health[""][0])
        return lines

    def json(self, outcome: Outcome) -> dict[str, Any]:
        return {**outcome.measured["summary"], "win_rates": win_rates(outcome.measured["summary"])}

    def unhealthy(self, health: Health) -> str:
        return "unhealthy run, not a result: " + "; ".join(p for _, problems in health.values() for p in problems)


def win_rates(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each side's win rate over the batch's games with Wilson's 95% interval: {side: {value, ci_low, ci_high, n}}
    (what the text shows and --json carries beside the counts)."""
    from avalon_agents.analysis.stats import wilson

    g = summary["games"]
    rates = {side: (summary[f"{side}_wins"] / g, *wilson(summary[f"{side}_wins"], g), g) for side in ("good", "evil")
             } if g else {}
    return {side: dict(zip(("value", "ci_low", "ci_high", "n"), rate)) for side, rate in rates.items()}


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The batch's outcome: each side's win rate with Wilson's 95% interval over the games (formats.py), and the
    end reasons."""
    from avalon_agents.formats import percent, rate_text

    g = summary["games"]
    lady = " with the Lady of the Lake" if summary.get("lady_of_the_lake") else ""
    lines = [f"{g} games, {summary['rules']} rules{lady}, {summary['players']} players",
             "; ".join(f"{side} wins {summary[f'{side}_wins']}: {rate_text(*rate.values())}"
                       for side, rate in win_rates(summary).items())]
    return lines + [f"  {reason:<22} {count:>6} {percent(count / g):>5}" for reason, count in summary["reasons"].items()]


def usage_lines(u: dict[str, Any], games: int) -> list[str]:
    """The LLM seats' calls, tokens and valid response rate (the health line follows them)."""
    vrr = u["valid_response_rate"]
    outcomes = ", ".join(f"{n:,} {outcome}" for outcome, n in u["outcomes"].items())
    methods = ", ".join(f"{method} {n:,}" for method, n in u["methods"].items())
    return [f"LLM calls: {u['llm_calls']:,} ({u['llm_calls'] / max(games, 1):,.0f} per game; {outcomes or 'none'}), "
            f"{u['seconds_per_call'] or 0:.2f} s per call",
            f"tokens: {u['input_tokens']:,} in, {u['output_tokens']:,} out",
            f"valid response rate: {'n/a' if vrr is None else f'{vrr:.1%}'} of {u['decisions']:,} decisions "
            f"(read by {methods or 'none'})"]
