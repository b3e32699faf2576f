"""How numbers are shown to people, in one place: every command's text (`avalon run`, `analyze`, `play`, the
studies' reports) and report.md. A share is a whole percentage, its 95% interval in brackets, and the count it
is over an integer: '33% [16%, 56%] n=18'; a difference of shares signed, '+20% [-15%, +51%]'; any other number
`number`'s way ('88,700', '12.35', '0.049'); a p-value 'p=0.087'. `avalon view` shows them the same way (view.js's
pct, signed, number, pText mirror these), the notebooks through `frame`. JSON keeps the numbers (NaN as null) and
never goes through here."""

from __future__ import annotations

import os
import re
from pathlib import Path

COMMIT = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{28}\b")
ABSOLUTE = re.compile(r"(?<![\w.~:/…-])(/[^\s;,()\[\]'\"]+)")


def percent(value: float | None, nan: str = "n/a", signed: bool = False) -> str:
    """A share as a whole percentage ('42%', `nan` for NaN or None); `signed`: a difference of shares in
    percentage points with one decimal ('+4.2', '-0.5', '+0.0')."""
    if value is None or value != value:
        return nan
    if signed:
        return f"{100 * value:+.1f}" if value < 0 or value > 0 else "+0.0"
    return f"{value:.0%}"


def interval_text(low: float | None, high: float | None) -> str:
    """An interval as whole percentages, '[16%, 56%]' ('' where there is none)."""
    if low is None or high is None or low != low or high != high:
        return ""
    return f"[{percent(low)}, {percent(high)}]"


def count(value: float | None) -> str:
    """A count as an integer ('5', never '5.0'; '' for none)."""
    if value is None or value != value:
        return ""
    return f"{int(round(value)):,}" if float(value).is_integer() else f"{value:,.2f}"


def rate_text(value: float | None, low: float | None = None, high: float | None = None, n: float | None = None,
              nan: str = "n/a") -> str:
    """A rate as every command and report.md show it: '33% [16%, 56%] n=18' (the interval and n where given)."""
    parts = [percent(value, nan), interval_text(low, high), f"n={count(n)}" if n is not None and n == n else ""]
    return " ".join(p for p in parts if p)


def short_commits(text: str) -> str:
    """`text` with every full git commit (40 hex digits) cut to its first 12 ('+dirty' stays)."""
    return COMMIT.sub(r"\1", text)


def relative_paths(text: str, root: str | Path | None = None, outside: bool = True) -> str:
    """`text` with every absolute path made relative: to `root` (e.g. the run folder) or else the working
    directory when the path lies under it, else its last two parts after "…/" (`outside` False: else as it is)."""
    bases = [Path(b).resolve() for b in (root, os.getcwd()) if b is not None]

    def relative(match: re.Match[str]) -> str:
        path = Path(match.group(1))
        for base in bases:
            try:
                found = path.resolve().relative_to(base)
            except (ValueError, OSError):
                continue
            return str(found) if str(found) != "." else (base.name or ".")
        return "…/" + "/".join(path.parts[-2:]) if outside else str(path)

    return ABSOLUTE.sub(relative, str(text))


def provenance_text(text: str) -> str:
    """A provenance line as printed: paths relative to the working directory where they lie under it, commits
    short."""
    return short_commits(relative_paths(text, outside=False))


def difference_text(diff: float | None, low: float | None = None, high: float | None = None) -> str:
    """A difference of two rates with its interval, signed whole percentages: '+20% [-15%, +51%]' ('' for none)."""
    if diff is None or diff != diff:
        return ""
    shown = f"{diff:+.0%}"
    return shown if low is None or high is None or low != low or high != high else f"{shown} [{low:+.0%}, {high:+.0%}]"


def number(value: float | None) -> str:
    """Any other number as people read it: an integer with thousands' commas ('88,700'), from 100 on no decimals,
    from 1 two ('12.35'), below 1 three ('0.049'); '' for none. view.js's `number` is the same."""
    if value is None or value != value or isinstance(value, bool):
        return "" if value is None or value != value else str(value)
    if float(value).is_integer() or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3f}"


def p_text(p: float | None) -> str:
    """A p-value: 'p=0.087', 'p<0.001' ('' for none)."""
    if p is None or p != p:
        return ""
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


RATE_COLUMNS = ("value", "ci_low", "ci_high")


def frame(table, rates: tuple[str, ...] = (), percents: tuple[str, ...] = ()):
    """A pandas table as every other output shows it (the notebooks' tables): a rate's columns (value, ci_low,
    ci_high) as one 'value [95% CI]' column '33% [16%, 56%]', the columns named in `rates` or `percents` as
    whole percentages, counts as integers, other numbers `number`'s way, NaN blank. Returns a new table of text."""
    import pandas as pd

    out = table.copy()
    if all(c in out for c in RATE_COLUMNS):
        shown = [rate_text(v, lo, hi) for v, lo, hi in zip(out["value"], out["ci_low"], out["ci_high"])]
        at = list(out.columns).index("value")
        out = out.drop(columns=list(RATE_COLUMNS))
        out.insert(at, "value [95% CI]", shown)
    for column in out.columns:
        values = out[column]
        if column in (*rates, *percents):
            out[column] = [percent(v, nan="") for v in values]
        elif pd.api.types.is_bool_dtype(values):
            continue
        elif pd.api.types.is_numeric_dtype(values):
            out[column] = [number(v) for v in values]
    return out
