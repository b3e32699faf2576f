"""`avalon analyze`: every metric of a run as CSV and JSON, the figures as PNG, and report.md showing each
figure with the numbers behind it, in the analysis folder (its files, manifest and readers: records/analysis_dir.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd

from avalon_agents import __version__, formats
from avalon_agents.formats import shown_table  # noqa: F401 (moved to formats: the notebooks show tables with it)
from avalon_agents.analysis import figure_text, plots
from avalon_agents.analysis.humans import players
from avalon_agents.analysis.judges.registry import JUDGES
from avalon_agents.analysis.judges.run import Judgments, Progress, judge_run
from avalon_agents.analysis.judges.spec import JudgeFigure
from avalon_agents.analysis.load import RunData, load_run, origin
from avalon_agents.analysis.paper.metrics import outcome_metrics, paper_table
from avalon_agents.analysis.paper.probes import score_probes
from avalon_agents.analysis.paper.reference import figure_table, statements
from avalon_agents.analysis.stats import METHODS
from avalon_agents.records import analysis_dir as folder
from avalon_agents.records.health import not_data
from avalon_agents.records.run_dir import JsonlTracer, read_experiment
from avalon_agents.records.run_dir import variant_order as run_dir_variants

if TYPE_CHECKING:  # a judge is passed in; the analysis builds no model client itself
    from avalon_agents.llm.client import LLMClient

OUTCOME_FIGURES = {
    "win_rate": ("Winning rate per variant and side", ["win_rate"]),
    "qer_fvr": ("Quest engagement and failure vote rates by role (paper Fig. 2)", ["quest_engagement",
                                                                                    "failure_votes"]),
    "leader_approval": ("Leader approval rate by the leader's role (paper Fig. 3a)", ["leader_approval"]),
    "leader_self_inclusion": ("Leaders' proposals that include themselves, and how often they went",
                              ["leader_self_inclusion"]),
}
PROBES_FIGURE = ("Belief probes: accuracy and Brier score over the quests", ["probe_scores"])
JUDGED_ORDER = ("self_recommendation", "camouflage", "teamwork", "sharing", "vacillation")
"""The report's order of the judges' figures (each declared in its judge's spec); others follow them."""


def judged_figures() -> list[tuple[str, JudgeFigure]]:
    """(judge, figure) of every figure the judges asked about a run declare, in the report's order."""
    found = [(spec.name, f) for spec in JUDGES.values() if spec.analyze for f in spec.figures]
    place = {name: i for i, name in enumerate(JUDGED_ORDER)}
    return sorted(found, key=lambda pair: place.get(pair[1].name, len(place)))


def sections() -> dict[str, tuple[str, list[str]]]:
    """Each figure's report section: name -> (title, the tables shown under it), in the report's order."""
    judged = {f.name: (f.title, [f.table]) for _, f in judged_figures()}
    return {**OUTCOME_FIGURES, **judged, "probes": PROBES_FIGURE}


FIGURES = sections()
"""The report's figures (those of the judges registered when this module was loaded)."""


@dataclass
class Analysis:
    """What `analyze` computed and wrote."""

    data: RunData
    tables: dict[str, pd.DataFrame]
    headline: pd.DataFrame
    judgments: Judgments | None
    out: Path
    files: list[Path] = field(default_factory=list)
    run_dir: Path = Path(".")
    judge_spec: str | None = None
    codes: RunData | None = None
    """`data` with its games as codes (`coded`), as the metrics were counted from it."""
    whole: bool = True
    """False: the headline, outcome and judged tables alone (`compute(whole=False)`), until `complete`."""
    reference: Literal["auto", "human", "none"] = "auto"


def behavior_tables(judgments: Judgments, data: RunData) -> dict[str, pd.DataFrame]:
    """The summary table of each judge's figure (`JudgeFigure.summary` of its judged table)."""
    judged = judgments.tables()
    return {f.table: f.summary(judged[name], data) for name, f in judged_figures() if name in judged}


def figures(tables: dict[str, pd.DataFrame]) -> dict[str, plots.Figure]:
    """The report's figures from its tables (those whose tables exist)."""
    people = tables.get("human_reference")

    def beside(name: str, measure: str) -> pd.DataFrame:  # the human figure of each role, as markers
        if people is None or people.empty:
            return tables[name]
        figures = people[people["measure"] == measure][["role", "humans"]].drop_duplicates("role")
        return tables[name].merge(figures, on="role", how="left")

    out = {
        "win_rate": plots.win_rate_plot(tables["win_rate"]),
        "qer_fvr": plots.qer_fvr_plot(beside("quest_engagement", "quest_engagement"),
                                      beside("failure_votes", "failure_vote_rate")),
        "leader_approval": plots.leader_approval_plot(beside("leader_approval", "leader_approval")),
        "leader_self_inclusion": plots.self_recommendation_plot(tables["leader_self_inclusion"]),
    }
    for _, f in judged_figures():
        if f.table in tables:
            out[f.name] = f.draw(tables[f.table])
    if "probe_scores" in tables and not tables["probe_scores"].empty:
        out["probes"] = plots.curves(tables["probe_scores"], "quest", "merlin_accuracy", ["role"],
                                     "Belief probes: who is Merlin? (accuracy)", "accuracy", n="probes")
    return out


def analyze(run_dir: str | Path, out: str | Path | None = None, judge: LLMClient | None = None,
            progress: Progress | None = None, reference: Literal["auto", "human", "none"] = "auto") -> Analysis:
    """Load a run, compute every metric (behavior metrics only with a `judge`), write the files.

    Args:
        run_dir: a game, a series, an experiment, or any folder of game directories.
        out: where to write (default: <run_dir>/analysis).
        judge: the judge model's client; None skips the LLM-judged behavior metrics.
        progress: called with (done, total) after each judgment.
        reference: "human": the human figures beside ours (analysis.humans.players); "auto": so when every game has the
            paper's six roles (the human figures' role set); "none": not.
    """
    run_dir = Path(run_dir)
    out = Path(out) if out else folder.analysis_dir(run_dir)
    folder.read_manifest(out)  # a folder of a newer layout is refused, in one line, before anything is written
    return write(compute(load_run(run_dir), run_dir, out, judge, progress, reference))


def compute(data: RunData, run_dir: Path, out: Path, judge: LLMClient | None = None, progress: Progress | None = None,
            reference: Literal["auto", "human", "none"] = "auto", whole: bool = True) -> Analysis:
    """Every metric of a loaded run, as `analyze` computes them (its arguments), writing nothing but the judges'
    cache and calls under `out` (only with a `judge`): what `avalon view` shows is computed here too. `whole` False:
    the headline, the outcome metrics and the judged tables alone (what a comparison reads), `complete` adds the rest."""
    codes = coded(data)  # the metrics group by the games' codes; the analysis keeps `data` as loaded
    tables = outcome_metrics(codes)
    judgments = None
    if judge is not None:
        client = judge.with_tracer(JsonlTracer(folder.judge_calls(out)))  # every judge call, recorded
        judgments = judge_run(data, client=client, cache_dir=folder.judgments_dir(out), progress=progress)
        tables.update(behavior_tables(judgments, data))
    headline = paper_table(codes, order=variant_order(run_dir))
    result = Analysis(data=data, tables={"headline": headline, **tables}, headline=headline, judgments=judgments,
                      out=out, run_dir=run_dir, judge_spec=judge.settings.spec if judge is not None else None,
                      codes=codes, whole=False, reference=reference)
    return complete(result) if whole else result


def complete(result: Analysis) -> Analysis:
    """`result` with the tables a comparison does not read added (once): the belief probes' scores, the paper's
    figures beside ours and, with the human reference (`reference`), the human figures beside ours."""
    if result.whole:
        return result
    data = result.codes if result.codes is not None else result.data
    tables = {}
    if not data.probes.empty:
        tables["probe_scores"] = score_probes(data.probes)
    tables["paper_figures"] = figure_table(data, result.judgments)
    if result.reference == "human" or (result.reference == "auto" and players.paper_six(data)):
        tables["human_reference"] = players.human_table(data)
    result.tables.update(tables)
    result.whole = True
    return result


def coded(data: RunData) -> RunData:
    """`data` with every table's game column categorical over the run's games (its games table's, sorted as a string
    column sorts): the same values and groups, which the metrics' groupbys (every rate groups by game) take from the
    codes rather than hashing each game's name again (10,000 names a table and metric in a big run). As loaded where
    a table names a game the games table does not, or the names do not sort together."""
    try:
        games = pd.CategoricalDtype(sorted(data.games["game"].dropna().unique()))
    except (TypeError, KeyError):
        return data
    tables = {}
    for name, table in data.tables().items():
        if "game" in table and len(table):
            codes = games.categories.get_indexer(table["game"])
            if ((codes < 0) & table["game"].notna().to_numpy()).any():  # a game the games table does not hold
                return data
            table = table.assign(game=pd.Categorical.from_codes(codes, dtype=games))
        tables[name] = table
    return type(data)(**tables)


def write(result: Analysis) -> Analysis:
    """Write an analysis's files under its `out` (records/analysis_dir.py): metrics/*.csv, metrics.json,
    figures/*.png, report.md and, last, the manifest (what wrote the folder, when, the games it counted)."""
    out, tables, judgments = result.out, result.tables, result.judgments
    folder.metrics_dir(out).mkdir(parents=True, exist_ok=True)
    csvs = {folder.metrics_file(out, name): table for name, table in tables.items()}
    if judgments is not None:
        csvs.update({folder.judged_file(out, name): table for name, table in judgments.tables().items()})
    for file, table in csvs.items():
        table.to_csv(file, index=False)
        result.files.append(file)
    result.files.append(folder.write_metrics(out, {n: json.loads(t.to_json(orient="records"))
                                                   for n, t in tables.items()}))
    caption = footer(result)
    pngs = {name: plots.save(plots.caption(fig, caption, result.judge_spec, root=result.run_dir),
                             folder.figure_file(out, name))
            for name, fig in figures(tables).items()}
    result.files += list(pngs.values())
    report = folder.report_file(out)
    report.write_text(report_markdown(result, pngs))
    result.files.append(report)
    result.files.append(folder.write_manifest(out, folder.Manifest(
        version=__version__, written=folder.now(), run=str(result.run_dir), games=list(result.data.games["game"]),
        judge=result.judge_spec, tables=list(tables))))
    return result


def markdown_table(table: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured markdown table, shown as people read it (`shown_table`)."""
    if table.empty:
        return "_no rows_"
    shown = shown_table(table, digits)
    lines = ["| " + " | ".join(map(str, shown.columns)) + " |", "|" + "---|" * len(shown.columns)]
    lines += ["| " + " | ".join(row) + " |" for row in shown.itertuples(index=False)]
    return "\n".join(lines)


def variant_order(run_dir: Path) -> list[str]:
    """The experiment's variants in its config's order (the first is the reference), or [] outside one."""
    return run_dir_variants(run_dir)


def headline_text(headline: pd.DataFrame) -> str:
    """The headline as plain text (what `avalon analyze` prints)."""
    columns = ["variant", "side", "agents", "win_rate", "ci_low", "ci_high", "games", "vs_variant", "diff",
               "diff_ci_low", "diff_ci_high", "diff_p_value"]
    columns += [c for c in headline if c.startswith(("qer_", "fvr_"))]  # the evil roles in play
    return shown_table(headline[[c for c in columns if c in headline]]).to_string(index=False)


def _named(what: str, column: pd.Series | None) -> str:
    """`what` and the distinct values of a games column, as a provenance clause ("" when none is recorded)."""
    values = sorted(map(str, column.dropna().unique())) if column is not None else []
    return f"{what} {', '.join(values)}; " if values else ""


def models_text(result: Analysis) -> str:
    """The models that played, or who played without one: "none (people)", "none (bots)", "none (people, bots)"."""
    found = ", ".join(map(str, result.data.games["models"].dropna().unique()))
    if found:
        return found
    kinds = set(result.data.seats["kind"].dropna()) if "kind" in result.data.seats else set()
    who = [w for w, here in (("people", "human" in kinds), ("bots", bool(kinds - {"human"}) or not kinds)) if here]
    return f"none ({', '.join(who)})"


def provenance(result: Analysis) -> str:
    """What produced these numbers: models, judge, rules, games, and the run's commit and config fingerprint
    (paths relative to the working directory where they lie under it, the commit short)."""
    games = result.data.games
    judge = result.judge_spec or "none (the judged behaviour metrics are left out)"
    if plots.canned(result.judge_spec):
        judge += ": canned labels, not a real judgment"
    text = (f"Produced by: models {models_text(result)}; "
            f"judge {judge}; rules {', '.join(map(str, games['rules'].dropna().unique()))}; "
            f"{_named('role cards', games.get('cards'))}{_named('extractor', games.get('extractor'))}"
            f"{len(games)} finished game(s)")
    told = origin(Path(result.run_dir))
    return formats.provenance_text(text + (f"; {told}" if told else "") + ".")


def _shown_path(path: str | Path | None, root: Path | None = None) -> str | None:
    """A path as a figure may print it: relative to `root` or the working directory (never absolute)."""
    if not path:
        return None
    return figure_text.relative_paths(str(Path(path).resolve()) if Path(path).is_absolute() else str(path), root)


def footer(result: Analysis) -> str:
    """The figures' one-line provenance: the run folder (relative to the working directory), games, models, judge,
    the experiment's commit, rules and config (relative); the whole provenance is `provenance`, in report.md."""
    games = result.data.games
    run = Path(result.run_dir)
    judge = result.judge_spec or "none"
    if plots.canned(result.judge_spec):
        judge += " (not a real judgment)"
    parts = [f"run {figure_text.relative_paths(str(run.resolve()))}", f"{len(games)} games",
             f"models {models_text(result)}", f"judge {judge}"]
    meta = read_experiment(run) or {}
    parts += [f"commit {str(meta['commit'])[:8]}"] if meta.get("commit") else []
    parts.append(f"rules {', '.join(map(str, games['rules'].dropna().unique()))}")
    config = _shown_path(meta.get("config_file"))
    parts += [f"config {config}"] if config else []
    return " · ".join(parts) + " · provenance: report.md"


def paper_parts(section: str, figures: pd.DataFrame) -> list[str]:
    """What the paper's text states about the figure of a report section, its numbers beside ours."""
    said = statements(section)
    if not said:
        return []
    parts = ["**Paper** (its text about the figure; GPT-3.5, its full agent against the baseline; "
             "`metrics/paper_figures.csv`):"]
    numbered = figures[figures["label"].isin({f.label for f in said if f.value is not None})]
    if not numbered.empty:
        parts.append(markdown_table(numbered.drop(columns=["paper"]).rename(columns={
            "paper_shown": "paper", "value": "ours"})))
    parts += [f"- Fig. {f.figure}, {f.label}: \"{f.text}\"" for f in said if f.value is None]
    return parts


def report_markdown(result: Analysis, pngs: dict[str, Path]) -> str:
    data = result.data
    games = data.games
    parts = [
        f"# Analysis of {games['game'].nunique()} game(s)",
        provenance(result),
        f"Variants: {', '.join(map(str, games['variant'].unique()))}; series: {games['series'].nunique()}; "
        f"rules: {', '.join(map(str, games['rules'].dropna().unique()))}; "
        f"LLM calls per game: {games['llm_calls'].mean():.0f}, input tokens per game: "
        f"{games['input_tokens'].mean():,.0f}.",
        "## Headline",
        "Win rate per variant and side with Wilson's 95% interval over games, its difference from the reference "
        "variant `vs_variant` (the first variant with the same "
        "agents on each side: `diff`, Newcombe's 95% interval `diff_ci_low`-`diff_ci_high`, Fisher's exact "
        "two-sided `diff_p_value`), and the quest engagement (QER) and failure vote (FVR) rates of each evil role in "
        "play (the paper's: Morgana and the Assassin), as in the paper's tables.",
        markdown_table(result.headline),
        "## Health",
        "Failed LLM calls (after their retries), re-asks and the paper's fallbacks per variant: a variant with many "
        "of them is not a result (`avalon run` marks those over its `health:` limits). `echo_rate`: the LLM seats' "
        "speeches whose first answer repeated 8 or more consecutive words of its instructions (the rules, the role "
        "card, the host's wording; not other players' speeches); `placeholders`: those that are not their own "
        "words (the placeholder said when nothing of a speech's own was left, or empty; over half of them: the "
        "speeches are not data); `mid_sentence_rate`: those spoken that stop mid-sentence.",
        markdown_table(result.tables["health"]),
        *(f"**{row.variant}: {note}.**" for row in result.tables["health"].itertuples(index=False)
          if (note := not_data(row.speeches, row.placeholders))),
    ]
    parts += ["## Intervals",
              "Every interval is 95%. A win rate (one yes/no per game) has Wilson's interval over games; every other "
              "rate, the judged behaviors included, resamples whole games (2,000 seeded bootstrap resamples): the "
              "speeches, votes and cards of one game are not independent trials. Below 20 games the interval is "
              "never narrower than Wilson's interval of the pooled counts; from fewer than 5 games "
              "(`few_games` True, `*` on the figures), or where the resamples show no spread, it is "
              "widened to cover the Wilson interval of the pooled counts taken as one trial a game: read it as "
              "\"too few games\", not a measurement. `n` is the rows behind a value, `games` the games they come "
              "from. A failure vote rate with `applies` False is fixed by the rules (good players cannot fail a "
              "quest): no interval, n/a on the figure. See docs/analysis.md#intervals. `ci_method` says which "
              "method gave each interval:",
              "\n".join(f"- `{name}`: {meaning}" for name, meaning in METHODS.items())]
    few = sorted({name for name, t in result.tables.items()
                  if "few_games" in t and t["few_games"].astype("boolean").fillna(False).any()})
    if few:
        parts.append(f"_Fewer than 5 games behind some rows of: {', '.join(few)}._")
    if result.judgments is None:
        parts.append("_Behavior metrics judged by an LLM (camouflage, teamwork/confrontation, sharing, "
                     "vacillation) were not computed: run `avalon analyze RUN --judge-model SPEC`._")
    shown_at = sections()
    for name, png in pngs.items():
        title, table_names = shown_at[name]
        parts += [f"## {title}", f"![{name}]({folder.FIGURES}/{png.name})"]
        parts += [f"`metrics/{t}.csv`\n\n" + markdown_table(result.tables[t]) for t in table_names]
        parts += paper_parts(name, result.tables["paper_figures"])
    if "human_reference" in result.tables:
        parts += ["## Beside human players",
                  f"Each role's measures beside the same measures over {players.SOURCE} (`humans`; aggregate figures "
                  "only: the logs are not redistributed; their Assassin is a Minion carrying the token). Ours: "
                  "value with its 95% CI per variant and agent. `metrics/human_reference.csv`",
                  markdown_table(result.tables["human_reference"].drop(columns="source"))]
    shown = {t for _, ts in shown_at.values() for t in ts} | {"headline", "health", "paper_figures", "human_reference"}
    rest = [n for n in result.tables if n not in shown]
    for name in rest:
        parts += [f"## {name.replace('_', ' ').capitalize()}", f"`metrics/{name}.csv`\n\n"
                  + markdown_table(result.tables[name])]
    return "\n\n".join(parts) + "\n"
