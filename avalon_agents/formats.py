"""How numbers are shown to people, in one place: every command's text (`avalon run`, `analyze`, `play`, the
studies' reports) and report.md. A share is a whole percentage, its 95% interval in brackets, and the count it
is over an integer: '33% [16%, 56%] n=18'; a difference of shares signed, '+20% [-15%, +51%]'; any other number
`number`'s way ('88,700', '12.35', '0.049'); a p-value 'p=0.087'; dollars '$0.42'. `avalon view` shows them the
same way (view.js's pct, signed, number, pText, usd mirror these), the notebooks' tables through `shown_table`. JSON
keeps the numbers (NaN as null) and never goes through here."""

from __future__ import annotations

import os
import re
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

COMMIT = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{28}\b")
ABSOLUTE = re.compile(r"(?<![\w.~:/…-])(/[^\s;,()\[\]'\"]+)")


def percent(value: float | None, nan: str = "n/a", signed: bool = False) -> str:
    """A share as a whole percentage ('42%', `nan` for NaN or None); `signed`: a difference of shares, signed
    ('+4%', '-12%', '+0%')."""
    if value is None or value != value:
        return nan
    shown = f"{value:+.0%}" if signed else f"{value:.0%}"
    return "+0%" if shown == "-0%" else shown


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
    shown = percent(diff, signed=True)
    if low is None or high is None or low != low or high != high:
        return shown
    return f"{shown} [{percent(low, signed=True)}, {percent(high, signed=True)}]"


def number(value: float | None) -> str:
    """Any other number as people read it: an integer with thousands' commas ('88,700'), from 100 on no decimals,
    from 1 two ('12.35'), below 1 three ('0.049'); '' for none. view.js's `number` is the same."""
    if value is None or value != value or isinstance(value, bool):
        return "" if value is None or value != value else str(value)
    if float(value).is_integer() or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3f}"


def dollars(usd: float | None) -> str:
    """Dollars: cents from a cent up ('$12.35', '$0.00'), four decimals below ('$0.0042'); 'no price' for none
    (experiments/spend.py's and plan.py's way; view.js's `usd` is the same)."""
    if usd is None or usd != usd:
        return "no price"
    return f"${usd:,.2f}" if usd >= 0.01 or usd == 0 else f"${usd:.4f}"


def p_text(p: float | None, label: str = "p") -> str:
    """A p-value: 'p=0.087', 'p<0.001' ('' for none); `label` '' in a column of them: '0.087', '<0.001'."""
    if p is None or p != p:
        return ""
    return f"{label}<0.001" if p < 0.001 else f"{label}{'=' if label else ''}{p:.3f}"


RATE = re.compile(r"(^|_)(rate|share)$|^(paper_)?(qer|fvr)_|^(value|ours)$")
"""The columns that hold a share (shown as a whole percentage)."""
P_VALUE = re.compile(r"(^|_)(p|q)(_value)?$")
"""The columns that hold a p-value (or an adjusted one, q): '0.087', '<0.001'."""


def _bounds(columns: list[str], i: int) -> tuple[str, str] | None:
    """The interval columns of the rate in columns[i]: the ci_low, ci_high right after it, or its own
    `<name>_low`, `<name>_high` (diff: diff_ci_low, diff_ci_high)."""
    name = columns[i]
    for low, high in ((f"{name}_low", f"{name}_high"), (f"{name}_ci_low", f"{name}_ci_high")):
        if low in columns and high in columns:
            return low, high
    if columns[i + 1:i + 3] == ["ci_low", "ci_high"]:
        return "ci_low", "ci_high"
    return None


def shown_table(table: pd.DataFrame, digits: int = 3) -> pd.DataFrame:  # digits: kept for callers
    """A table as people read it (report.md, `avalon analyze`'s text, the notebooks' tables): each share with its
    interval in one cell as whole percentages ('33% [16%, 56%]', a difference signed), other shares as percentages,
    p-values '0.087', counts as integers, other numbers `number`'s way, blanks for none; the CSVs and JSON keep the
    numbers."""
    import pandas as pd

    columns, shown, done = list(table.columns), {}, set()
    for i, name in enumerate(columns):
        if name in done:
            continue
        values, bounds = table[name], _bounds(columns, i)
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if bounds and numeric:
            done.update(bounds)
            text = difference_text if name == "diff" else partial(rate_text, nan="")
            shown[name] = [text(v, lo, hi) for v, lo, hi in zip(values, table[bounds[0]], table[bounds[1]])]
        elif numeric and P_VALUE.search(name):
            shown[name] = [p_text(v, "") for v in values]
        elif numeric and RATE.search(name):
            shown[name] = [percent(v, "") for v in values]
        elif numeric and values.dropna().map(lambda v: float(v).is_integer()).all():
            shown[name] = [count(v) for v in values]
        elif pd.api.types.is_float_dtype(values):
            shown[name] = [number(v) for v in values]
        else:
            shown[name] = ["" if v is None or v != v else str(v) for v in values]
    return pd.DataFrame(shown, index=table.index)
