"""What a model's tokens cost: a price table shipped as data (`avalon_agents/data/prices.yaml`), overridable.

A `Prices` table maps a model to its `Price` (USD per 1M input, cached input and output tokens, with the date
and the source of the figure). Overrides come from an experiment's `prices:` or `--prices FILE` (the same
shape). The embedded and scripted models cost nothing, nor does a replay (`replay:RUN_DIR` answers from a recorded
run: its tokens were paid when the run was recorded); a model without a price has none, and every figure
that needs it says "no price for MODEL" instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from avalon_agents.errors import field_error, load_yaml, parse_yaml
from avalon_agents.registry import Registry


@dataclass(frozen=True)
class Cost:
    """LLM calls and tokens (of one seat, game or run): what a module, an agent kind or a probe declares it
    spends (`avalon bench cost` measures it), what `avalon run --check` adds up and prices."""

    calls: float = 0.0
    input_tokens: float = 0.0
    output_tokens: float = 0.0
    cached_tokens: float = 0.0
    """Of the input tokens, those a prompt cache serves (`avalon bench cost`'s cacheable tokens, llm.prefix_cache)."""

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.calls + other.calls, self.input_tokens + other.input_tokens,
                    self.output_tokens + other.output_tokens, self.cached_tokens + other.cached_tokens)

    def __mul__(self, k: float) -> Cost:
        return Cost(self.calls * k, self.input_tokens * k, self.output_tokens * k, self.cached_tokens * k)


class Price(BaseModel):
    """USD per 1M tokens (cached input: a prompt prefix the provider served from its cache; unset: as input)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(None, ge=0)
    date: str | None = None
    source: str | None = None

    def dollars(self, input_tokens: float, output_tokens: float, cached_tokens: float = 0) -> float:
        """The cost of these tokens (`cached_tokens` are part of `input_tokens`)."""
        cached = min(cached_tokens, input_tokens)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return ((input_tokens - cached) * self.input + cached * cached_rate + output_tokens * self.output) / 1e6


FREE = Price(input=0, output=0, source="runs on this machine")
REPLAYED = Price(input=0, output=0, source="answered from a recorded run")
FREE_PROVIDERS: Registry[Price] = Registry("free provider", [("local", FREE), ("scripted", FREE), ("replay", REPLAYED)],
                                           follows="provider")
"""Providers whose calls cost nothing (they run on this machine, or answer from a recorded run), by name: every
provider registered as `free` (llm.registry.Provider) is added here when it registers. The built-in ones are named
here as well, so a run is priced without loading the model layer; tests/llm/test_registry.py holds the two equal."""


def model_name(spec: str) -> str:
    """The model part of a spec: `openai:gpt-4o-mini` and `openai-compatible:gpt-4o-mini@URL` -> gpt-4o-mini."""
    provider, _, rest = spec.partition(":")
    if provider == "openai-compatible":
        rest = rest.rpartition("@")[0] or rest
    return rest or spec


class NoPrice(ValueError):
    """A model without a price (one line: "no price for MODEL")."""


class Prices:
    """The shipped price table with overrides laid over it (`over`, a mapping of the same shape)."""

    def __init__(self, table: dict[str, Price]) -> None:
        self.table = table

    @classmethod
    def shipped(cls) -> Prices:
        text = resources.files("avalon_agents").joinpath("data/prices.yaml").read_text()
        return cls(read_table(parse_yaml(text, "prices.yaml")[0], "prices.yaml"))

    def over(self, overrides: dict[str, Any] | None) -> Prices:
        """This table with `overrides` (MODEL -> {input, output, cached_input, date, source}) laid over it."""
        if not overrides:
            return self
        return Prices({**self.table, **read_table(overrides, "prices")})

    def price(self, spec: str) -> Price | None:
        """The price of a spec's model (None: none known)."""
        free = FREE_PROVIDERS.get(spec.partition(":")[0])
        if free is not None:
            return free
        return self.table.get(spec) or self.table.get(model_name(spec))

    def dollars(self, spec: str, input_tokens: float, output_tokens: float, cached_tokens: float = 0) -> float:
        """What these tokens of this model cost. Raises NoPrice."""
        price = self.price(spec)
        if price is None:
            raise NoPrice(f"no price for {model_name(spec)} (give one with prices: or --prices FILE; see "
                          "docs/providers.md)")
        return price.dollars(input_tokens, output_tokens, cached_tokens)


def read_table(data: Any, where: str) -> dict[str, Price]:
    """A price table from YAML data; raises ValueError naming the bad entry's field."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping of MODEL: {{input: ..., output: ...}}")
    table = {}
    for model, entry in data.items():
        try:
            table[str(model)] = Price.model_validate(entry)
        except ValidationError as exc:
            raise ValueError(field_error(exc, (where, model))) from None
    return table


def load_prices(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Prices:
    """The shipped table, then a `--prices FILE`, then a config's `prices:` laid over it."""
    prices = Prices.shipped()
    if path is not None:
        prices = prices.over(load_yaml(Path(path), "prices"))
    return prices.over(overrides)


def cost_rows(usages: dict[str, dict[str, Any] | None], prices: Prices, games: dict[str, int]) -> list[dict[str, Any]]:
    """Per variant and model: calls, tokens and dollars (None and `price` "no price" for a model without
    one; `usd_uncached`: had no input been served from the provider's prompt cache), with the price used and its
    date and source."""
    rows = []
    for variant, u in usages.items():
        for spec, t in ((u or {}).get("by_model") or {}).items():
            price = prices.price(spec)
            try:
                usd = prices.dollars(spec, t["input_tokens"], t["output_tokens"], t["cached_tokens"])
                uncached = prices.dollars(spec, t["input_tokens"], t["output_tokens"])
            except NoPrice:
                usd = uncached = None
            rows.append({"variant": variant, "model": spec, "games": games.get(variant, 0), "calls": t["calls"],
                         "input_tokens": t["input_tokens"], "cached_tokens": t["cached_tokens"],
                         "output_tokens": t["output_tokens"], "usd": None if usd is None else round(usd, 6),
                         "usd_uncached": None if uncached is None else round(uncached, 6),
                         "usd_per_game": None if usd is None or not games.get(variant) else
                         round(usd / games[variant], 6),
                         "price": "no price" if price is None else
                         f"{price.input:g}/{price.cached_input if price.cached_input is not None else price.input:g}/"
                         f"{price.output:g} USD per 1M input/cached/output",
                         "price_date": price.date if price else None, "price_source": price.source if price else None})
    return rows
