"""The results table of a run directory, in the paper's shape (Tables 2, 6-8): win rate per variant and
side with a 95% CI and the games behind it, its difference from the reference variant (Newcombe's interval,
Fisher's exact p), QER and FVR of each evil role in play (the paper's: Morgana and the Assassin), mean LLM calls
and tokens per game, and the paper's own figure where the config gives it; shown in the one format of formats.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from avalon_agents.agents.registry import needs_llm
from avalon_agents.analysis.load import game_dirs, load_run, origin
from avalon_agents.analysis.paper import metrics
from avalon_agents.analysis.paper.metrics import paper_table, references
from avalon_agents.analysis.paper.reference import figure_table
from avalon_agents.experiments.config import Experiment
from avalon_agents.experiments.spend import streamed_usage
from avalon_agents.formats import count, difference_text, interval_text, percent, provenance_text
from avalon_agents.prices import Prices, cost_rows
from avalon_agents.records.health import HealthLimits, health_line
from avalon_agents.records.run_dir import read_experiment, read_meta, variant_order


def results_table(out: Path) -> pd.DataFrame:
    """One row per variant and side (empty when no game has finished)."""
    try:
        data = load_run(out)
    except FileNotFoundError:
        return pd.DataFrame()
    variants = (read_experiment(out) or {}).get("variants") or {}
    table = paper_table(data, order=list(variants))
    usage = data.games.groupby("variant")[["llm_calls", "input_tokens", "output_tokens"]].mean()
    usage.columns = ["calls_per_game", "input_tokens_per_game", "output_tokens_per_game"]
    table = table.merge(usage.reset_index(), on="variant")
    health = metrics.health(data)[["variant", "llm_calls", "failed_calls", "failed_share", "decisions", "reasks",
                                   "fallbacks", "fallback_share", "valid_response_rate"]]
    table = table.merge(health, on="variant", how="left")
    table.insert(table.columns.get_loc("win_rate"), "wins", (table["win_rate"] * table["n"]).round().astype(int))
    limits = {v: HealthLimits.model_validate((variants.get(v) or {}).get("health") or {}) for v in table["variant"]}
    table["healthy"] = [row.failed_share <= limits[row.variant].max_failed_calls
                        and row.fallback_share <= limits[row.variant].max_fallbacks for row in table.itertuples()]
    paper = [(variants.get(v) or {}).get("paper") or {} for v in table["variant"]]
    table["paper_win_rate"] = [p.get(f"{side}_win_rate", float("nan")) for p, side in zip(paper, table["side"])]
    for name in ("qer", "fvr"):
        for role in evil_columns(table):
            table[f"paper_{name}_{role}"] = [p.get(f"{name}_{role.lower()}", float("nan")) if side == "evil"
                                             else float("nan") for p, side in zip(paper, table["side"])]
    order = {v: i for i, v in enumerate(variants)}
    return table.sort_values(["variant", "side"], key=lambda c: c.map(order) if c.name == "variant" else c,
                             ignore_index=True).rename(columns={"n": "games_n"})


def evil_columns(table: pd.DataFrame) -> list[str]:
    """The evil roles in play as the table's column suffixes (`qer_ROLE`), in the role cards' order."""
    return [c.removeprefix("qer_") for c in table.columns if c.startswith("qer_")]


def _rates(r, prefix: str, roles: list[str]) -> str:
    """One rate per evil role in play, e.g. '40%/67%' (blank when none is measured)."""
    values = [getattr(r, f"{prefix}{role}") for role in roles]
    return "" if all(v != v for v in values) else "/".join(percent(v, "") for v in values)


def _usd(r) -> str:
    """Dollars per game ('no price' for a model without one; blank where the table has no cost column)."""
    usd = getattr(r, "usd", float("nan"))
    if usd is None:
        return "no price"
    return "" if usd != usd else f"${r.usd_per_game:,.4f}"


def _diff(r) -> str:
    """The difference from the reference variant: '+20% [-15%, +51%] p=0.63', or 'reference'."""
    if r.diff != r.diff:
        return "reference" if r.vs_variant == r.variant else ""
    return f"{difference_text(r.diff, r.diff_ci_low, r.diff_ci_high)} p={r.diff_p_value:.2f}"


def format_table(table: pd.DataFrame) -> str:
    if table.empty:
        return "no finished games yet"
    roles = evil_columns(table)
    short = "/".join(role[:3] for role in roles)
    lines = [f"{'variant':<22}{'side':<6}{'agents':<22}{'win rate':>9}  {'95% CI':<13}{'games':>6}"
             f"  {'diff vs reference, 95% CI, p':<31}"
             f"{'QER ' + short:>13}{'FVR ' + short:>13}{'calls/game':>12}{'tokens in/game':>16}{'paper WR':>10}"
             f"{'paper QER':>11}{'paper FVR':>11}{'failed/fallbacks':>18}{'USD/game':>11}"]
    for r in table.itertuples():
        health = f"{percent(r.failed_share)}/{percent(r.fallback_share)}" + ("" if r.healthy else " !")
        evil = r.side == "evil"
        qer, fvr = (_rates(r, "qer_", roles), _rates(r, "fvr_", roles)) if evil else ("", "")
        lines.append(f"{r.variant:<22}{r.side:<6}{r.agents:<22}{percent(r.win_rate):>9}  "
                     f"{interval_text(r.ci_low, r.ci_high):<13}{count(r.games):>6}  {_diff(r):<31}"
                     f"{qer:>13}{fvr:>13}{r.calls_per_game:>12.0f}{r.input_tokens_per_game:>16,.0f}"
                     f"{percent(r.paper_win_rate, ''):>10}{_rates(r, 'paper_qer_', roles):>11}"
                     f"{_rates(r, 'paper_fvr_', roles):>11}{health:>18}{_usd(r):>11}")
    if table["diff"].notna().any():
        refs = ", ".join(sorted(set(table["vs_variant"].dropna())))
        lines.append(f"diff: win rate minus the reference variant's ({refs}: the first with the same agents on each "
                     "side), Newcombe's 95% interval, Fisher's exact p")
    if table["paper_win_rate"].notna().any():
        lines.append("paper WR, QER, FVR: the paper's own figures (GPT-3.5), for comparison; ours are measured "
                     f"above (QER, FVR: {'/'.join(role.replace('_', ' ') for role in roles)})")
    elif roles:
        lines.append(f"QER, FVR: {'/'.join(role.replace('_', ' ') for role in roles)}, the evil roles in play")
    if not table["healthy"].all():
        lines.append("! over the variant's health limits (failed calls / fallbacks): not a result")
    return "\n".join(lines)


def figures_table(out: Path) -> pd.DataFrame:
    """The paper's Figures 2-6 as its text states them beside ours, for the reference variants (the full
    agent: the paper's figures come from it) where the run has the measure (see analysis.reference)."""
    try:
        data = load_run(out)
    except FileNotFoundError:
        return pd.DataFrame()
    order = variant_order(out)
    table = figure_table(data, variants=list(dict.fromkeys(references(data, order).values())))
    return table[table["value"].notna()].reset_index(drop=True)


def format_figures(table: pd.DataFrame) -> str:
    """The figures table as text ('' when there is nothing to compare)."""
    if table.empty:
        return ""
    lines = ["the paper's Figures 2-6 as its text states them (GPT-3.5, its full agent against the baseline), "
             "beside ours for the reference variant(s):",
             f"{'figure':<8}{'measure':<40}{'agent':<11}{'paper':>9}  {'variant':<22}{'ours':>7}  {'95% CI':<13}"
             f"{'n':>6}{'games':>7}"]
    for r in table.itertuples():
        lines.append(f"{'Fig. ' + r.figure:<8}{r.label:<40}{r.kind:<11}{r.paper_shown:>9}  {r.variant:<22}"
                     f"{percent(r.value):>7}  {interval_text(r.ci_low, r.ci_high):<13}{count(r.n):>6}"
                     f"{count(r.games):>7}")
    return "\n".join(lines)


def measure_run(out: Path, variants: dict[str, Experiment], prices: Prices) -> dict[str, Any]:
    """What `avalon run` reports: the results table with each variant's dollars per game, the paper's figures
    beside ours, each variant's usage and cost rows, and the run's provenance."""
    table, figures = results_table(out), figures_table(out)
    usages = variant_usage(out, variants)
    games = {name: len(game_dirs(out / name)) for name in usages}
    costs = cost_rows(usages, prices, games)
    if not table.empty:
        usd = {name: (None if any(r["usd"] is None for r in costs if r["variant"] == name) else
                      sum(r["usd"] for r in costs if r["variant"] == name)) for name in games}
        table["usd"] = table["variant"].map(usd)
        table["usd_per_game"] = [u / games[v] if u is not None and games.get(v) else None
                                 for v, u in zip(table["variant"], table["usd"])]
    return {"table": table, "figures": figures, "usages": usages, "costs": costs, "provenance": provenance(out)}


def variant_usage(out: Path, variants: dict[str, Experiment]) -> dict[str, dict[str, Any] | None]:
    """Per variant with finished games: the usage of its finished games' traces, read one game at a time (the
    memory stays flat in the number of games). None for a variant without a trace record (bots only)."""
    found = {}
    for name in variants:
        folder = Path(out) / name
        if folder.is_dir():
            games = game_dirs(folder)
            if games:
                found[name] = streamed_usage(games)
    return found


def variant_health(out: Path, variants: dict[str, Experiment],
                   usages: dict[str, dict[str, Any] | None] | None = None) -> dict[str, tuple[str, list[str]]]:
    """Per variant with finished games: its health line and what is over its limits (empty: healthy)."""
    usages = variant_usage(out, variants) if usages is None else usages
    return {name: (health_line(u), variants[name].health.problems(u)) for name, u in usages.items() if u is not None}


def provenance(out: Path) -> str:
    """What produced a run's results: its models and rules, then `analysis.load.origin` (config,
    fingerprint, commit, pipelines, games planned and aborted), and the games finished."""
    meta = read_experiment(out)
    if meta is None:
        return f"produced by: unknown (no experiment.json in {out})"
    override = (meta.get("model_override") or {}).get("spec")
    specs, rules = set(), set()
    for config in meta["variants"].values():
        rules.add(config.get("rules"))
        if not any(needs_llm(a.get("kind", '')) for a in config.get("agents", {}).values()):
            specs.add("none (bots)")
            continue
        specs.add(override or (config.get("model") or {}).get("spec") or "default")
        for agent in config.get("agents", {}).values():
            if not override and (agent.get("model") or {}).get("spec"):
                specs.add(agent["model"]["spec"])
    games = game_dirs(Path(out))
    cards, extractors = set(), set()
    for game in games:
        played = read_meta(game)
        cards.add(played.cards)
        extractors.add(played.extractor())
    told = "".join(f"{what} {', '.join(sorted(v for v in values if v))}; "
                   for what, values in (("role cards", cards), ("extractor", extractors)) if any(values))
    return provenance_text(f"produced by: models {', '.join(sorted(specs))}; rules "
                           f"{', '.join(sorted(map(str, rules)))}; {told}{origin(Path(out), len(games))}")
