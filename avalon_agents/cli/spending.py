"""What a command's own model calls cost, before and while it makes them: the plan `--check` prints (calls,
tokens, dollars, time; with --json one JSON object) and the budget `--budget-usd` keeps (exit 4 before the call or
game that would go over), for the commands that call a model outside a study: `avalon analyze --judge-model`,
`avalon calibrate`, `avalon probe-humans` (per call: experiments.spend.BudgetedClient) and `avalon play` without
--out (per game: `PaidGames`). Every study (`avalon run`, `tournament`, `redteam`, `bias`, `study`, `play --out`)
is planned and budgeted by cli.studies.prepare and the scheduler."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from avalon_agents.cli.base import OverBudget, echo_json

CALL_BUDGET = ("Make no model call that would take this command's cost over this many dollars (answers already "
               "cached cost nothing): it stops with exit code 4, the answers so far cached; rerun with a larger "
               "budget to go on.")
PLAY_BUDGET = ("Start no game that would take the games' cost (with --out, those finished before included) over "
               "this many dollars: play stops with exit code 4, finished games kept.")


def prices_of(prices_file: Path | None) -> Any:
    """The price table, --prices laid over the shipped one."""
    from avalon_agents.prices import load_prices

    return load_prices(prices_file)


def planned_calls(work: dict[str, Any], check: bool, as_json: bool, budget_usd: float | None, prices: Any,
                  unit: str = "call", kept: str = "the answers so far are cached") -> Any:
    """A command's own model calls, planned (experiments.plan.work_plan): print the plan (on stderr with --json;
    with --check --json the plan is the one JSON object on stdout); returns the Budget of --budget-usd (None:
    none; per `unit`: a call, or a game of `work["games"]`), refused in one line for a model without a price."""
    from avalon_agents.experiments.plan import work_lines
    from avalon_agents.experiments.spend import CALL, make_budget

    for line in work_lines(work):
        click.echo(line, err=as_json)
    if check and as_json:
        echo_json({**work, "budget_usd": budget_usd})

    def estimates() -> dict[str, float]:
        if work["usd"] is None:
            raise ValueError(f"budget-usd: no price for {', '.join(work['no_price'])}, so no budget can be kept "
                             "(give one with --prices FILE)")
        units = work["calls"] if unit == "call" else work.get("games", 1)
        return {CALL if unit == "call" else "": work["usd"] / units if units else 0.0}

    return make_budget(budget_usd, prices, estimates, unit=unit, kept=kept)


@contextmanager
def kept_within() -> Iterator[None]:
    """While a command's calls are kept within its budget: the call or game that would go over is not started
    (spend.BudgetReached), and the command exits 4 (OverBudget) with the budget's line, what was done kept."""
    from avalon_agents.experiments.spend import BudgetReached

    try:
        yield
    except BudgetReached as exc:
        raise OverBudget(str(exc) or "budget-usd: reached") from None


class PaidGames:
    """`avalon play`'s games kept within a Budget: before each game (play_batch's `before`) one is admitted at the
    measured cost per game (the plan's before the first finished), else BudgetReached; after it (`played`) its
    calls' dollars are counted."""

    def __init__(self, budget: Any) -> None:
        self.budget = budget
        self.ticket: int | None = None

    async def before(self, index: int) -> None:
        from avalon_agents.experiments.spend import BudgetReached

        self.ticket = self.budget.admit("")
        if self.ticket is None:
            raise BudgetReached(self.budget.stopped)

    def played(self, game: Any) -> None:
        from avalon_agents.experiments.spend import usage_dollars
        from avalon_agents.records import usage

        self.budget.settle_usd(self.ticket, "", usage_dollars(usage(game.ledger()), self.budget.prices))
