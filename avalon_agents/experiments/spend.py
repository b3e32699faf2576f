"""What a run costs: dollars per game and per variant from the traces, and a budget the runner keeps.

A game's dollars are its calls' tokens per model (`usage(...)["by_model"]`) at the prices (llm.prices). A
`Budget` admits a game only while the run's dollars (its finished games, measured) plus the games in flight
(each at the variant's measured cost per game, or the estimate before any game of it finished) plus the new
game stay within the limit; otherwise the run stops before that game (finished games kept; a rerun with a
larger budget goes on). The run's cost table (`cost.csv`, the report, `--json`) is `prices.cost_rows`.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avalon_agents.prices import REPLAYED, NoPrice, Prices, model_name
from avalon_agents.records import read_trace, usage
from avalon_agents.records.run_dir import COST, has_trace, is_done

EXIT_BUDGET = 4
"""The exit code of a run stopped by its budget (2: a user mistake; 3: unhealthy)."""


def streamed_usage(games: Iterable[Path]) -> dict[str, Any] | None:
    """The usage of these game directories together, one trace in memory at a time (None: no trace record)."""
    records = (record for game in games for record in read_trace(game))
    first = next(records, None)
    return None if first is None else usage(itertools.chain((first,), records))


def usage_dollars(u: dict[str, Any] | None, prices: Prices) -> float:
    """The dollars of a usage summary's tokens. Raises NoPrice."""
    if not u:
        return 0.0
    return sum(prices.dollars(spec, t["input_tokens"], t["output_tokens"], t["cached_tokens"])
               for spec, t in u["by_model"].items())


def game_dollars(path: Path, prices: Prices) -> float:
    """What one game directory's calls cost (finished or not)."""
    return usage_dollars(streamed_usage([path]) if has_trace(path) else None, prices)


@dataclass
class Budget:
    """A limit on a run's dollars, kept game by game.

    Args:
        limit_usd: the most the run may cost, finished games before this invocation included.
        prices: the price table.
        estimates: per variant, the expected dollars of one game (before any of its games finished).
        spent: dollars of the games finished (and partly played) so far.
        unit: what is admitted, in words (a command's own calls: "call", `BudgetedClient`).
        kept: what a stop keeps, in words.
    """

    limit_usd: float
    prices: Prices
    estimates: dict[str, float]
    spent: float = 0.0
    unit: str = "game"
    kept: str = "finished games are kept"
    stopped: str | None = None
    measured: dict[str, list[float]] = field(default_factory=dict)
    in_flight: dict[int, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _next: int = 0

    def per_game(self, variant: str) -> float:
        """The dollars one more game of `variant` is expected to cost: its measured mean, else the estimate."""
        found = self.measured.get(variant)
        return sum(found) / len(found) if found else self.estimates.get(variant, 0.0)

    def admit(self, variant: str, cost: float | None = None) -> int | None:
        """A ticket for one more game of `variant` (at `cost`, default its expected cost), or None: it would take
        the run over the limit."""
        with self._lock:
            cost = self.per_game(variant) if cost is None else cost
            ahead = self.spent + sum(self.in_flight.values())
            if self.stopped is not None or ahead + cost > self.limit_usd:
                if self.stopped is None:
                    self.stopped = (f"budget: ${self.limit_usd:,.2f} reached: {_usd(self.spent)} spent, "
                                    f"{_usd(sum(self.in_flight.values()))} in the {self.unit}s still in flight, and "
                                    f"the next {f'{variant} ' if variant else ''}{self.unit} is expected to cost {_usd(cost)}; {self.kept}, "
                                    "rerun with a larger --budget-usd to go on")
                return None
            self._next += 1
            self.in_flight[self._next] = cost
            return self._next

    def settle(self, ticket: int, variant: str, path: Path, finished: bool) -> None:
        """The game of `ticket` ended (finished, or aborted after spending some): count what it cost."""
        self.settle_usd(ticket, variant, game_dollars(path, self.prices), finished)

    def settle_usd(self, ticket: int | None, variant: str, dollars: float, finished: bool = True) -> None:
        """The work of `ticket` (None: work admitted without one) ended having cost `dollars`; finished work's
        cost is `variant`'s measured cost per unit from now on."""
        with self._lock:
            if ticket is not None:
                self.in_flight.pop(ticket, None)
            self.spent += dollars
            if finished:
                self.measured.setdefault(variant, []).append(dollars)

    def count_finished(self, games: Iterable[tuple[str, Path]]) -> None:
        """Count a run's finished games, given as (group, game directory): their dollars are spent, and each
        group's are its measured cost per game from the start."""
        for group, game in games:
            if is_done(game):
                dollars = game_dollars(game, self.prices)
                self.spent += dollars
                self.measured.setdefault(group, []).append(dollars)


def _usd(dollars: float) -> str:
    return f"${dollars:,.2f}" if dollars >= 0.01 or dollars == 0 else f"${dollars:.4f}"


def make_budget(limit_usd: float | None, prices: Prices, estimates: Callable[[], dict[str, float]],
                **kind: str) -> Budget | None:
    """The Budget `--budget-usd` asks for (None: none), with `estimates()` (per group, the expected dollars of one
    unit: a game, a call). Raises ValueError for a limit that is not above 0, or what `estimates` raises (a model
    without a price)."""
    if limit_usd is None:
        return None
    if not limit_usd > 0:  # nan too
        raise ValueError(f"budget-usd: must be more than 0, got {limit_usd:g}")
    return Budget(limit_usd, prices, estimates(), **kind)


class BudgetReached(Exception):
    """The next call would take a command over its --budget-usd (`Budget.stopped` says so): nothing catches it
    but the command, which exits 4, what was done kept (answers cached, games finished)."""


CALL = "model"
"""The budget's group of a command's own calls (`BudgetedClient`: 'the next model call')."""


TOKENIZER_MARGIN = 1.25
"""A call's input tokens as counted here (cl100k_base) times this bounds what a provider counts with its own
tokenizer (`BudgetedClient`'s worst case)."""


class BudgetedClient:
    """An LLM client (llm.client.LLMClient) whose calls are kept within a Budget: a call is made only while the
    dollars spent, those of the calls in flight and its own worst case stay within the limit; otherwise
    BudgetReached. A call's worst case is its input, counted before it is sent (times TOKENIZER_MARGIN), and a
    whole answer of `max_tokens`: the total cannot pass the budget (a client that names no price or no max_tokens
    is admitted at the expected cost: the plan's per call, then the measured mean). Its tracer is tapped: each
    call's dollars are counted as its record is written. Anything else is the client's."""

    def __init__(self, client: Any, budget: Budget) -> None:
        self._budget = budget
        self._client = client.with_tracer(_Tap(client.tracer, budget))

    def with_tracer(self, tracer: Any) -> BudgetedClient:
        return BudgetedClient(self._client.with_tracer(tracer), self._budget)

    def worst(self, messages: Any) -> float | None:
        """The most this request can cost (None: no price or no max_tokens to bound it)."""
        from avalon_agents.llm.tokens import count_tokens
        from avalon_agents.prices import NoPrice

        settings = getattr(self._client, "settings", None)
        if settings is None or not settings.max_tokens:
            return None
        tokens = sum(count_tokens(str(getattr(m, "content", m))) for m in messages) * TOKENIZER_MARGIN
        try:
            return self._budget.prices.dollars(settings.spec or "", tokens, settings.max_tokens)
        except NoPrice:
            return None

    async def call(self, *args: Any, **kwargs: Any) -> str:
        messages = args[0] if args else kwargs.get("messages", ())
        ticket = self._budget.admit(CALL, self.worst(messages))
        if ticket is None:
            raise BudgetReached(self._budget.stopped)
        try:
            return await self._client.call(*args, **kwargs)
        finally:
            self._budget.settle_usd(ticket, CALL, 0.0, finished=False)  # its dollars came with its record

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _Tap:
    """A tracer that counts each LLM call's dollars into a Budget, then hands the record on."""

    def __init__(self, inner: Any, budget: Budget) -> None:
        self._inner, self._budget = inner, budget

    @property
    def step(self) -> int | None:
        return getattr(self._inner, "step", None)

    @step.setter
    def step(self, value: int | None) -> None:
        if self._inner is not None:
            self._inner.step = value

    def trace(self, record: Any) -> None:
        from avalon_agents.records.trace import LLMCall

        if isinstance(record, LLMCall) and not record.replayed:
            spent = self._budget.prices.dollars(record.spec or "", record.input_tokens, record.output_tokens,
                                                record.cached_tokens)
            self._budget.settle_usd(None, CALL, spent)
        if self._inner is not None:
            self._inner.trace(record)

    def __getattr__(self, name: str) -> Any:
        if self._inner is None:
            raise AttributeError(name)
        return getattr(self._inner, name)


def cost_line(variant: str, rows: list[dict[str, Any]]) -> str:
    """One line of a variant's cost for people (a replay's: $0, and the tokens its recording holds)."""
    mine = [r for r in rows if r["variant"] == variant]
    if not mine:
        return f"{variant}: cost: no LLM call"
    models = f"({', '.join(sorted({r['model'] for r in mine}))})"
    replayed = [r for r in mine if r["price_source"] == REPLAYED.source]
    if len(replayed) == len(mine):  # nothing was asked of a model: the tokens were paid when the run was recorded
        return (f"{variant}: cost: replayed: $0, {sum(r['calls'] for r in mine):,} calls and "
                f"{sum(r['input_tokens'] + r['output_tokens'] for r in mine):,} tokens recorded {models}")
    missing = [model_name(r["model"]) for r in mine if r["usd"] is None]
    total = sum(r["usd"] or 0 for r in mine)
    tokens = sum(r["input_tokens"] for r in mine), sum(r["output_tokens"] for r in mine)
    games = mine[0]["games"]
    usd = (f"no price for {', '.join(missing)}" if missing else
           f"${total:,.4f}" + (f" (${total / games:,.4f} per game)" if games else ""))
    cached = sum(r["cached_tokens"] for r in mine)
    saved = sum((r.get("usd_uncached") or 0) - (r["usd"] or 0) for r in mine)
    cached = f" ({cached:,} cached{f', ${saved:,.4f} saved' if saved > 0 else ''})" if cached else ""
    return (f"{variant}: cost: {usd}; {sum(r['calls'] for r in mine):,} calls, {tokens[0]:,} input{cached} and "
            f"{tokens[1]:,} output tokens {models}")


COST_CSV = COST


def write_cost(out: Path, rows: list[dict[str, Any]]) -> Path:
    """OUT/cost.csv: the cost table, one row per variant and model."""
    import csv

    path = Path(out) / COST_CSV
    columns = ["variant", "model", "games", "calls", "input_tokens", "cached_tokens", "output_tokens", "usd",
               "usd_uncached", "usd_per_game", "price", "price_date", "price_source"]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path
