"""Runs, or a run's variants, side by side: the ablation question on one page, as plain JSON.

A side is one variant of one run, named `RUN#VARIANT`; a run named alone is each of its variants, in its config's
order (so `?runs=RUN` compares a run's variants, and `?runs=A,B` two runs of one variant each). The first side is
the reference: every other side's difference is that side minus the reference.

What is compared is what the run pages show, read from the same `Analysis` (run_data.RunPages.analysis): the
headline's win rate per side (good, evil), and each outcome metric table (`metrics.OUTCOMES`), its rows matched
across sides by their group columns other than the variant (agent, role, side, team...). A difference's interval:

- a rate of one yes/no per game on both sides (ci_method "wilson": win rates, the assassination rate): Newcombe's
  interval of the two counts and Fisher's exact p-value (`stats.newcombe`, `stats.fisher_p`, as `metrics.versus`);
- any other rate: the bootstrap resampling each side's games independently (`stats.difference_ci`, with its
  small-sample floors). Its per-game values come from the metric itself, computed once per run change on the run's
  data with each game as its own variant (`per_game`): the same code, not a second definition;
- a table that is not rates (cost, health): each number side by side and their difference, without an interval.

One rule decides a difference (`RULE`): it is flagged (`flagged`) when its 95% interval excludes zero and, where
it has a test (Fisher's, for a yes/no per game), the test agrees (p < 0.05); where the two disagree it is not
flagged and `agree` is False. Each difference is counted once: a difference the page already showed (the same
games seen from the other side, or a role whose games are its side's) carries `same_as` naming where, and is not
flagged again. The tests' p-values are also adjusted for their number (Holm, `p_adjusted`), and `multiple` says how
many distinct differences the page holds. Where the sides differ in players, roles, rules, model, commit or
plugins, or their runs' environments differ (records.environment.differences), or a side's run is unhealthy,
`warnings` says so.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from avalon_agents.analysis.load import RunData
from avalon_agents.analysis.paper import metrics
from avalon_agents.analysis.paper.report import Analysis, coded
from avalon_agents.analysis.stats import METHOD, difference_ci, fisher_p, newcombe, sums_only
from avalon_agents.records.environment import differences
from avalon_agents.records.reader import open_run
from avalon_agents.view.catalog import UnknownRun
from avalon_agents.view.run_data import RunPages

VARIANT = "#"
"""Between a run's id and one of its variants' names: `RUN#VARIANT`."""
RATE = ("value", "ci_low", "ci_high", METHOD, "n", "games", "few_games")
"""The columns of a rate's row (`stats.rate`); the others but `applies` and the variant are its group."""
NOT_GROUP = {*RATE, "applies", "variant"}
BINOMIAL = "wilson"
"""A row's ci_method when it is one yes/no per game (its difference: Newcombe's and Fisher's)."""
ALPHA = 0.05
"""A test agrees with a 95% interval that excludes zero when its p-value is below this."""
RULE = ("flagged where the 95% interval excludes zero and, for a win rate or another yes/no per game, Fisher's "
        "exact test agrees (p < 0.05); where they disagree, not flagged. Each difference counted once; p adjusted "
        "(Holm) over the page's tests.")
"""How the page decides a difference (shown on it, and in its JSON's `rule`)."""


@dataclass
class Side:
    """One variant of one run."""

    run_id: str
    variant: str
    run: Path
    analysis: Analysis
    row: dict[str, Any]
    """The run's index row (catalog.Catalog.row): its commit and health."""

    @property
    def label(self) -> str:
        return f"{self.run_id}{VARIANT}{self.variant}"


def variants(run: Path, analysis: Analysis) -> list[str]:
    """A run's variants with finished games, in its config's order (the first is its reference), then as loaded."""
    found = list(dict.fromkeys(analysis.data.games["variant"]))
    order = open_run(run).variant_order()
    return [v for v in order if v in found] + [v for v in found if v not in order]


class Comparer:
    """Comparisons over the run pages' analyses (`runs`), keeping each run's per-game tables until it changes."""

    def __init__(self, runs: RunPages) -> None:
        self.runs = runs
        self._games: dict[Path, tuple[Analysis, dict[tuple[str, str], dict]]] = {}

    def sides(self, names: list[str]) -> list[Side]:
        """The sides `names` stand for (see the module's docstring), each once, in order. Raises UnknownRun for a
        run or variant not found, ValueError for fewer than two sides."""
        found: list[Side] = []
        for name in dict.fromkeys(n.strip() for n in names if n.strip()):  # a big run's metrics are counted in a
            with contextlib.suppress(UnknownRun):                          # thread: every side's at once
                self.runs.start(self._run(name)[2])
        for name in dict.fromkeys(n.strip() for n in names if n.strip()):
            run_id, variant, run = self._run(name)
            analysis = self.runs.analysis(run)
            if analysis is None:
                raise UnknownRun(f"run {run_id!r} has no finished game to compare yet")
            known = variants(run, analysis)
            if variant is not None and variant not in known:
                raise UnknownRun(f"run {run_id!r} has no variant {variant!r} (it has {', '.join(known)})")
            for v in [variant] if variant is not None else known:
                side = Side(run_id, v, run, analysis, self.runs.catalog.row(run))
                if side.label not in {s.label for s in found}:
                    found.append(side)
        if len(found) < 2:
            raise ValueError("runs: name two runs or variants or more (RUN, or RUN#VARIANT; a run alone is each of "
                             f"its variants), comma-separated; got {', '.join(s.label for s in found) or 'none'}")
        return found

    def _run(self, name: str) -> tuple[str, str | None, Path]:
        """(run id, variant or None, run folder) of a side's name: a run's id, else RUN#VARIANT with the longest
        run id found before a '#' (a run's or a variant's name may hold '#'). Raises UnknownRun."""
        try:
            return name, None, self.runs.catalog.path(name)
        except UnknownRun:
            if VARIANT not in name:
                raise
        parts = name.split(VARIANT)
        for cut in range(len(parts) - 1, 0, -1):
            run_id = VARIANT.join(parts[:cut])
            try:
                return run_id, VARIANT.join(parts[cut:]), self.runs.catalog.path(run_id)
            except UnknownRun:
                continue
        raise UnknownRun(f"no run {name.rsplit(VARIANT, 1)[0]!r} under {', '.join(map(str, self.runs.catalog.roots))}")

    def compare(self, names: list[str]) -> dict[str, Any]:
        """The comparison of the sides `names` stand for: `sides`, `reference`, `warnings`, `headline` (win rate
        per side), `metrics` (name -> {`groups`, `rows`}). Raises as `sides`."""
        sides = self.sides(names)
        headline = compare_rows([_headline(s) for s in sides], ["side"], None)
        found = {name: self._metric(name, sides) for name in metrics.OUTCOMES}
        described = [describe(s) for s in sides]
        return {
            "sides": described,
            "reference": sides[0].label,
            "warnings": warnings(sides, described),
            "rule": RULE,
            "multiple": once([("headline", headline), *((n, m["rows"]) for n, m in found.items())]),
            "headline": headline,
            "metrics": found,
        }

    def _metric(self, name: str, sides: list[Side]) -> dict[str, Any]:
        tables = [_of_variant(s.analysis.tables.get(name), s.variant) for s in sides]
        columns = list(dict.fromkeys(c for t in tables for c in t.columns))
        if "value" in columns and "ci_low" in columns:
            groups = [c for c in columns if c not in NOT_GROUP]
            need = any((t[METHOD].dropna() != BINOMIAL).any() for t in tables if METHOD in t)
            per_game = [self.per_game(s, name, groups) for s in sides] if need else None
            return {"kind": "rate", "groups": groups, "rows": compare_rows(tables, groups, per_game)}
        groups = [c for c in columns if c != "variant" and not any(
            pd.api.types.is_numeric_dtype(t[c]) and not pd.api.types.is_bool_dtype(t[c]) for t in tables if c in t)]
        measures = [c for c in columns if c != "variant" and c not in groups]
        return {"kind": "numbers", "groups": [*groups, "measure"], "rows": number_rows(tables, groups, measures)}

    def per_game(self, side: Side, name: str, groups: list[str]) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
        """A rate metric's (num, den) per game of each group of `side`, for the bootstrap: the registered metric
        itself on the side's games, each game its own variant (`per_game`); kept until the run changes."""
        kept = self._games.get(side.run)
        if kept is None or kept[0] is not side.analysis:
            kept = self._games[side.run] = (side.analysis, {})
        key = (side.variant, name)
        if key not in kept[1]:
            codes = side.analysis.codes if side.analysis.codes is not None else coded(side.analysis.data)
            each = kept[1].get(side.variant) or kept[1].setdefault(side.variant, each_game(codes, side.variant))
            kept[1][key] = per_game(side.analysis.data, side.variant, metrics.OUTCOMES[name], groups, each)
        return kept[1][key]


def each_game(data: RunData, variant: str) -> RunData:
    """`variant`'s rows of `data`, each game its own variant (its variant column the game column: no new label)."""
    frames = {}
    for table, frame in data.tables().items():
        if "variant" in frame and "game" in frame:
            mine = frame["variant"] == variant
            frame = frame if mine.all() else frame[mine]
            frame = frame.assign(variant=frame["game"])
        frames[table] = frame
    return type(data)(**frames)


def per_game(data: RunData, variant: str, metric: Callable[[RunData], pd.DataFrame],
             groups: list[str], each: RunData | None = None) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
    """`metric` on `variant`'s games with each game as its own variant (`each`: `each_game`'s, when kept): per group
    (the values of `groups`), one (num, den) per game the group has rows in, num = value x n: summed over games, the
    rate the metric gives."""
    with sums_only():  # each game's sums: its own interval would be thrown away
        table = metric(each if each is not None else each_game(data, variant))
    table = table[table["games"].fillna(0).astype(bool)] if len(table) else table
    table = table.assign(**{g: None for g in groups if g not in table})  # a group another side's table has
    dens = table["n"].astype(float).to_numpy() if len(table) else np.zeros(0)
    values = pd.to_numeric(table["value"], errors="coerce").to_numpy(dtype=float) if len(table) else dens
    nums = np.round(np.where((dens == 0) | np.isnan(values), 0.0, values * dens), 9)  # value x n: the sum again
    rows = table.groupby(groups, dropna=False, sort=False).indices.items() if groups else [((), range(len(table)))]
    found = {}
    for key, at in rows:
        key = key if isinstance(key, tuple) else (key,)
        found[tuple(None if _missing(k) else _plain(k) for k in key)] = (nums[at], dens[at])
    return found


def compare_rows(tables: list[pd.DataFrame], groups: list[str],
                 per_game: list[dict[tuple, tuple[np.ndarray, np.ndarray]]] | None) -> list[dict[str, Any]]:
    """One row per group found on any side: its key, each side's rate (None where absent) and each side's
    difference from the first (None for the first, or where either has no interval)."""
    indexed = [{_key(r, groups): r for r in t.to_dict(orient="records")} for t in tables]
    keys = list(dict.fromkeys(k for rows in indexed for k in rows))
    out = []
    for key in keys:
        values = [_rate(rows.get(key)) for rows in indexed]
        diffs: list[dict[str, Any] | None] = [None]
        for i in range(1, len(tables)):
            games = None if per_game is None else (per_game[i].get(key), per_game[0].get(key))
            diffs.append(difference(values[i], values[0], games))
        out.append({"key": dict(zip(groups, key)), "values": values, "differences": diffs})
    return out


def difference(a: dict[str, Any] | None, b: dict[str, Any] | None,
               games: tuple[Any, Any] | None) -> dict[str, Any] | None:
    """a's rate minus b's with its interval (see the module's docstring); None where either has no interval."""
    if a is None or b is None or a["ci_low"] is None or b["ci_low"] is None or not a["n"] or not b["n"]:
        return None
    p_value = None
    if a[METHOD] == BINOMIAL and b[METHOD] == BINOMIAL:
        xa, xb = round(a["value"] * a["n"]), round(b["value"] * b["n"])
        (low, high), method = newcombe(xa, a["n"], xb, b["n"]), "newcombe"
        diff, p_value = xa / a["n"] - xb / b["n"], fisher_p(xa, a["n"], xb, b["n"])
    elif games is None or games[0] is None or games[1] is None:
        return None
    else:
        (num_a, den_a), (num_b, den_b) = games
        low, high, method = difference_ci(num_a, den_a, num_b, den_b)
        diff = a["value"] - b["value"]
    low, high, p_value = _number(low), _number(high), _number(p_value)
    excludes = low is not None and high is not None and (low > 0 or high < 0)
    agree = p_value is None or excludes == (p_value < ALPHA)
    return {"diff": _number(diff), "ci_low": low, "ci_high": high, "method": method, "p_value": p_value,
            "excludes_zero": excludes, "agree": agree, "flagged": excludes and agree, "p_adjusted": None,
            "same_as": None}


def once(tables: list[tuple[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """Each difference counted once over the page's `tables` (name, rows): a difference equal to one shown before in
    the same column (the same games: the other side's win rate mirrored, a role's rows that are its side's) gets
    `same_as` naming it and is not flagged; the distinct tests' p-values are adjusted together (Holm). Returns what
    the page says of them: `differences` (distinct ones with an interval), `tests`, `flagged`."""
    seen: dict[tuple, str] = {}
    distinct = []
    for name, rows in tables:
        for row in rows:
            for column, d in enumerate(row["differences"]):
                if d is None or d["ci_low"] is None:
                    continue
                ns = (row["values"][column]["n"], row["values"][0]["n"])
                mark = (column, *ns, *sorted(abs(round(v, 9)) for v in (d["diff"], d["ci_low"], d["ci_high"])))
                where = f"{name} " + ", ".join(f"{k}={v}" for k, v in row["key"].items() if v is not None)
                if mark in seen and d["method"] == "newcombe":  # counts: a yes/no per game
                    d.update(same_as=seen[mark], flagged=False)
                else:
                    seen[mark] = where
                    distinct.append(d)
    tested = [d for d in distinct if d["p_value"] is not None]
    if tested:
        for d, adjusted in zip(tested, holm([d["p_value"] for d in tested])):
            d["p_adjusted"] = adjusted
    return {"differences": len(distinct), "tests": len(tested), "flagged": sum(d["flagged"] for d in distinct),
            "by_chance": len(distinct) * ALPHA}


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment of `p_values` (in their order): the k-th smallest times (m - k + 1), kept
    non-decreasing, at most 1 (statsmodels' multipletests(method="holm") without the dependency)."""
    order = sorted(range(len(p_values)), key=p_values.__getitem__)
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def number_rows(tables: list[pd.DataFrame], groups: list[str], measures: list[str]) -> list[dict[str, Any]]:
    """A table that is not rates: one row per group and measure, each side's number and its difference from the
    first side's (no interval)."""
    indexed = [{_key(r, groups): r for r in t.to_dict(orient="records")} for t in tables]
    out = []
    for key in dict.fromkeys(k for rows in indexed for k in rows):
        for measure in measures:
            values = [_number(rows[key].get(measure)) if key in rows else None for rows in indexed]
            if all(v is None for v in values):
                continue
            diffs = [None] + [None if v is None or values[0] is None else
                              {"diff": v - values[0], "ci_low": None, "ci_high": None, "method": None,
                               "p_value": None, "excludes_zero": False, "agree": True, "flagged": False,
                               "p_adjusted": None, "same_as": None} for v in values[1:]]
            out.append({"key": {**dict(zip(groups, key)), "measure": measure}, "values": values, "differences": diffs})
    return out


def describe(side: Side) -> dict[str, Any]:
    """What a side is: its label, run, variant, games, agents by side, players, roles, models, rules, commit and
    plugins."""
    games = side.analysis.data.games
    mine = games[games["variant"] == side.variant]
    plugins = [Path(p.key).name for p in open_run(side.run).record.plugins]
    return {"label": side.label, "run": side.run_id, "variant": side.variant, "games": len(mine),
            "good_agents": _values(mine["good_agents"]), "evil_agents": _values(mine["evil_agents"]),
            "players": _values(mine["players"]), "roles": _roles(side),
            "models": _values(mine["models"]) or ["no LLM"], "rules": _values(mine["rules"]),
            "commit": side.row.get("commit"), "plugins": sorted(plugins) or ["none"]}


def warnings(sides: list[Side], described: list[dict[str, Any]] | None = None) -> list[str]:
    """Where the sides differ in players, roles, rules, model, commit or plugins (a difference may be theirs), and
    each unhealthy run (`described`: the sides' `describe`, when made)."""
    described = described or [describe(s) for s in sides]
    out = []
    for field, what in SETUP:
        seen = {d["label"]: ", ".join(d[field]) if isinstance(d[field], list) else _commit(d[field])
                for d in described}
        if len(set(seen.values())) > 1:
            out.append(f"The sides differ in {what}: " + "; ".join(f"{k}: {v}" for k, v in seen.items())
                       + ". A difference below may be theirs, not the variants'.")
    out += environment_warnings(sides)
    for side in {s.run_id: s for s in reversed(sides)}.values():
        if side.row["health"]["problems"]:
            out.append(f"Run {side.run_id} is unhealthy, not a result: {'; '.join(side.row['health']['problems'])}.")
    return out


SETUP = (("players", "players"), ("roles", "roles"), ("rules", "rules"), ("models", "model"), ("commit", "commit"),
         ("plugins", "plugins"))
"""What a side's setup is, as `describe` names it and as the warnings say it: a difference in any is warned of."""
NOT_COMPARED = ("commit", "started")
"""Environment keys the warnings leave out (the commit has its own warning)."""


def environment_warnings(sides: list[Side]) -> list[str]:
    """Where another run's environment (records.environment, as its run record keeps it) differs from the reference
    side's run: Python, a package, the CPU, the BLAS kernel, numpy's SIMD paths (a run without a record: not
    compared)."""
    runs = list({s.run_id: s.run for s in sides}.items())
    reference_id, reference = runs[0]
    mine = open_run(reference).record.environment
    out = []
    for run_id, run in runs[1:]:
        theirs = open_run(run).record.environment
        if not mine or not theirs:
            continue
        found = [d for d in differences(mine, theirs) if d.split(":")[0] not in NOT_COMPARED]
        if found:
            out.append(f"Run {run_id} was made in another environment than {reference_id}: {'; '.join(found)}. "
                       "A difference below may be the machine's.")
    return out


def _headline(side: Side) -> pd.DataFrame:
    table = _of_variant(side.analysis.headline, side.variant)
    table = table.rename(columns={"win_rate": "value"})
    return table[[c for c in ("side", *RATE, "agents") if c in table]]


def _of_variant(table: pd.DataFrame | None, variant: str) -> pd.DataFrame:
    if table is None:
        return pd.DataFrame()
    return table[table["variant"] == variant] if "variant" in table else table


def _rate(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None or _missing(row.get("value")) and not row.get("n"):
        return None
    rate = {k: _number(row.get(k)) for k in ("value", "ci_low", "ci_high", "n", "games")}
    rate[METHOD] = row.get(METHOD) if isinstance(row.get(METHOD), str) else None
    rate["few_games"] = bool(row.get("few_games"))
    if "agents" in row:
        rate["agents"] = row["agents"]
    return rate


def _key(row: dict[str, Any], groups: list[str]) -> tuple:
    return tuple(None if _missing(row.get(g)) else _plain(row.get(g)) for g in groups)


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _number(value: Any) -> float | int | None:
    if _missing(value):
        return None
    value = _plain(value)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _roles(side: Side) -> list[str]:
    """The role sets `side`'s games were dealt, each as its roles with their counts ('Merlin, 2 Loyal Servant')."""
    seats = side.analysis.data.seats
    seats = seats[seats["variant"] == side.variant]
    dealt = seats.groupby([seats["game"], seats["role"].astype(str)]).size().unstack(fill_value=0)  # game x role
    counted = dealt[sorted(dealt.columns)].drop_duplicates().to_dict(orient="records")
    return sorted({", ".join(f"{n} {r}" if n > 1 else r for r, n in c.items() if n) for c in counted})


def _values(column: pd.Series) -> list[str]:
    return sorted({str(v) for v in column if not _missing(v)})


def _commit(commit: str | None) -> str:
    """A commit as people compare it: 12 hex digits, and whether its tree had changes."""
    if not commit:
        return "unknown"
    return commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")
