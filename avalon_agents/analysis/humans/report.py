"""The files of `avalon probe-humans` (the probing: `host.human_probes`), under RUN/probes-humans/:

    OUT/answers.jsonl      each answer, keyed by prompt and model settings (a rerun asks only what is missing)
    OUT/calls/<game>.jsonl every call made, as llm_call records
    OUT/probes.csv         one row per probe: the answer, the truth, the stated beliefs, the scores
    OUT/quests.csv         per quest (and all): the rates with 95% intervals (games resampled), the Brier score
    OUT/roles.csv          per role, every valid probe counted
    OUT/report.md          the tables, with what produced them
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from avalon_agents import __version__
from avalon_agents.analysis.humans.games import HumanGame
from avalon_agents.analysis.plots import canned
from avalon_agents.analysis.paper.report import markdown_table
from avalon_agents.prompting import template

if TYPE_CHECKING:
    from avalon_agents.llm.settings import ModelSettings

CSV_DROP = ["raw"]


@dataclass
class HumanProbeResult:
    """What a probe run produced: the games, the scored probes, the tables, the files, its provenance."""

    games: list[HumanGame]
    scored: pd.DataFrame
    quests: pd.DataFrame
    roles: pd.DataFrame
    out: Path
    provenance: str
    asked: int = 0
    files: list[Path] = field(default_factory=list)


def write(result: HumanProbeResult) -> None:
    """Write probes.csv, quests.csv, roles.csv and report.md under `result.out` (listed in `result.files`)."""
    frame = result.scored.drop(columns=CSV_DROP)
    for column in ("p_evil", "stated_sides", "evil_seats"):
        frame[column] = frame[column].map(lambda v: json.dumps(v, sort_keys=True))
    for name, table in {"probes": frame, "quests": result.quests, "roles": result.roles}.items():
        table.to_csv(result.out / f"{name}.csv", index=False)
        result.files.append(result.out / f"{name}.csv")
    (result.out / "report.md").write_text(report_markdown(result))
    result.files.append(result.out / "report.md")


def provenance(run: Path, games: list[HumanGame], settings: ModelSettings, prompt_id: str, budget: int,
               scored: pd.DataFrame) -> str:
    """What produced the figures: model and settings, prompt, games and their source, seats, history budget."""
    prompt = template(prompt_id)
    sources = sorted({g.source for g in games if g.source})
    cut = int(scored["history_cut"].sum()) if not scored.empty else 0
    text = (f"Produced by: model {settings.spec} (temperature {settings.temperature}, max_tokens "
            f"{settings.max_tokens}); prompt {prompt.id} ({prompt.hash[:12]}); {len(games)} imported game(s) of "
            f"{', '.join(sources) or 'unknown source'} in {run}; every seat probed at the end of every quest "
            f"({len(scored)} probes); history budget {budget} tokens ({cut} probe(s) had their oldest lines cut); "
            f"avalon_agents {__version__}; {time.strftime('%Y-%m-%d')}.")
    if canned(settings.spec):
        text += " The scripted model answers at random: a floor, not a judgment."
    return text


def _rate(row: pd.Series, name: str) -> str:
    n = int(row[f"{name}_n"])
    if not n:
        return "n/a"
    return f"{row[name]:.2f} [{row[f'{name}_low']:.2f}, {row[f'{name}_high']:.2f}] (n={n})"


def quest_lines(quests: pd.DataFrame) -> list[str]:
    """The per-quest table as printed lines."""
    lines = [f"{'quest':<6}{'probes':>7}  {'Merlin accuracy':<27}{'evil accuracy':<27}{'Brier':>6}  "
             f"{'agrees with stated Merlin':<27}{'players stated Merlin right':<27}"]
    for _, r in quests.iterrows():
        brier = f"{r['brier']:.3f}" if pd.notna(r["brier"]) else "n/a"
        lines.append(f"{r['quest']:<6}{int(r['probes']):>7}  {_rate(r, 'merlin_accuracy'):<27}"
                     f"{_rate(r, 'evil_accuracy'):<27}{brier:>6}  {_rate(r, 'agree_merlin'):<27}"
                     f"{_rate(r, 'human_merlin_accuracy'):<27}")
    return lines


def report_markdown(result: HumanProbeResult) -> str:
    """report.md: provenance, the per-quest table, the per-role table, how to read them."""
    shown = pd.DataFrame({
        "quest": result.quests["quest"],
        "probes": result.quests["probes"].astype(int),
        "valid": result.quests["valid_rate"].round(3),
        **{label: [_rate(r, name) for _, r in result.quests.iterrows()] for label, name in (
            ("Merlin accuracy", "merlin_accuracy"), ("evil accuracy", "evil_accuracy"))},
        "Brier": result.quests["brier"].round(3),
        **{label: [_rate(r, name) for _, r in result.quests.iterrows()] for label, name in (
            ("agrees with stated Merlin", "agree_merlin"), ("players' stated Merlin right", "human_merlin_accuracy"),
            ("agrees with stated sides", "agree_side"), ("players' stated sides right", "human_side_accuracy"))},
    })
    return "\n\n".join([
        "# Belief probes on human games",
        result.provenance,
        "## Per quest",
        "Each rate with its 95% interval and trials. Merlin accuracy counts every seat but Merlin; evil "
        "accuracy and Brier the good seats other than Merlin (the others know the answer from the night). "
        "\"Agrees with stated\" compares the model with the belief the same player had stated by the end of the "
        "quest (Avalon-NLU `belief` labels); \"players' ... right\" is how often those stated beliefs were true. "
        "Trials of one game are not independent (the same table talk), so the intervals resample whole games, "
        "and with fewer than five games they are widened to cover the Wilson interval of the pooled trials.",
        markdown_table(shown),
        "## Per role (every valid probe)",
        "Merlin knows who is evil and the evil players know each other: high scores here and not above show the "
        "model reads the night information.",
        markdown_table(result.roles),
        "Files: `probes.csv` (one row per probe), `quests.csv`, `roles.csv`, `answers.jsonl` (the cached "
        "answers), `calls/<game>.jsonl` (every call, as llm_call records). See docs/humans.md.",
    ]) + "\n"
