"""Judges against people: the project's judges on the chat messages of an imported Avalon-NLU run, compared
with the labels the players gave them (`annotation` records, see docs/humans.md).

The unit is one chat message, the unit the humans labelled (an imported speech joins a seat's messages of a
discussion; each annotation keeps its message's text). Every registered judge whose spec says how it is held to
people's labels (`JudgeSpec.humans`) is compared; the built-in four:

- persuasion: the persuasion judge's label against the message's persuasion label (eight classes).
- deception: the deception judge's label against the message's deception label, "none" where it has none.
- camouflage (mapped): the camouflage judge on first-quest messages (the only ones it judges in a game),
  "camouflage" read as a lie, "self_disclosure" and "withholding" as honest; against any deception label (lie)
  or none (honest).
- teamwork (mapped): the teamwork judge's attitudes to the other players; any "distrust" reads as
  critique/opposition, else any "trust" as agreement, else other; against the persuasion label collapsed the
  same way (agreement, critique/opposition, everything else: other).

A plugin judge with `humans` is compared likewise; judges without are named in one line by `avalon calibrate`.
Judgments go through the judges' cache (`judges.cache`) and every call is recorded (`calls.jsonl`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from avalon_agents.aio import run_sync
from avalon_agents.analysis.humans.agreement import Agreement, agreement
from avalon_agents.analysis.judges.context import night_info
from avalon_agents.analysis.judges.labels import NO_LIE
from avalon_agents.analysis.judges.registry import JUDGES, judge_spec
from avalon_agents.analysis.judges.run import Judge, JudgeTask, Progress
from avalon_agents.analysis.judges.spec import Speech
from avalon_agents.analysis.load import RunData
from avalon_agents.core.types import seat_name
from avalon_agents.narrate import quote

if TYPE_CHECKING:
    from avalon_agents.llm.client import LLMClient

def held_judges() -> list[str]:
    """The judges `avalon calibrate` holds to people's labels: every registered judge with `humans`, in the
    registry's order."""
    return [name for name, spec in JUDGES.items() if spec.humans is not None]


def unheld_judges() -> list[str]:
    """The registered judges with no human labels to be held to (`avalon calibrate` says so in one line)."""
    return [name for name, spec in JUDGES.items() if spec.humans is None]


MESSAGE_COLUMNS = ["game", "message", "seq", "part", "quest", "attempt", "seat", "role", "side", "text",
                   "persuasion", "deception"]


def messages(data: RunData) -> pd.DataFrame:
    """The labelled chat messages of a run: one row per message with a persuasion label, its deception label
    ("none" where it has none), in (game, seq, part) order.

    Raises:
        ValueError: the run holds no persuasion labels (not an imported Avalon-NLU run).
    """
    a = data.annotations
    if a.empty or not (a["annotation"] == "persuasion").any():
        raise ValueError("run: holds no human labels (no persuasion annotations): calibrate reads a run made by "
                         "`avalon import avalon-nlu DATASET --out RUN`")
    persuasion = a[a["annotation"] == "persuasion"].rename(columns={"label": "persuasion"})
    deception = a[a["annotation"] == "deception"][["game", "message", "label"]].rename(columns={"label": "deception"})
    out = persuasion.merge(deception.drop_duplicates(["game", "message"]), on=["game", "message"], how="left")
    out["deception"] = out["deception"].fillna(NO_LIE)
    out["part"] = out["part"].astype(int)
    return out.sort_values(["game", "seq", "part"], kind="stable")[MESSAGE_COLUMNS].reset_index(drop=True)


def sample(frame: pd.DataFrame, n: int | None, seed: int = 0) -> pd.DataFrame:
    """A fixed sample of `n` messages, stratified by (persuasion, deception) label: each pair gets its share of
    `n` (largest remainders round), drawn from a permutation seeded by `seed`. None: every message.

    Raises:
        ValueError: n is below 1 or above the number of messages.
    """
    if n is None:
        return frame
    if not 1 <= n <= len(frame):
        raise ValueError(f"sample: must be between 1 and {len(frame)} (the labelled messages), got {n}")
    strata = frame.groupby(["persuasion", "deception"], sort=True).groups
    sizes = pd.Series({k: len(v) for k, v in strata.items()})
    exact = sizes / sizes.sum() * n
    take = np.floor(exact).astype(int)
    order = (exact - take).sort_values(ascending=False, kind="stable").index
    take[order[: n - int(take.sum())]] += 1
    rng = np.random.default_rng(seed)
    picked = [idx for key, idx in strata.items() for idx in rng.permutation(np.asarray(idx))[: take[key]]]
    return frame.loc[sorted(picked)].reset_index(drop=True)


def _guess(task: JudgeTask, raw: str | None) -> tuple[str | None, bool]:
    """(the judge's answer as one of its `humans.classes`, or None; valid)."""
    if raw is None:
        return None, False
    parsed = task.parse(raw)
    if not parsed["valid"]:
        return None, False
    guess = judge_spec(task.judge).humans.guess(parsed)
    return guess, guess is not None


def tasks(judge: Judge, data: RunData, frame: pd.DataFrame) -> list[JudgeTask]:
    """Every judgment of the messages: persuasion, deception, teamwork for each; camouflage for the first
    quest's. Each task's row is the message's (MESSAGE_COLUMNS)."""
    seats = {g: dict(zip(f["seat"].astype(int), f["role"])) for g, f in data.seats.groupby("game")}
    night = night_info(data.events)
    out: list[JudgeTask] = []
    for m in frame.to_dict("records"):
        game, seat = m["game"], int(m["seat"])
        row = {**m, "seat": seat, "seq": int(m["seq"])}
        message = Speech(row=row, speaker=seat_name(seat), text=quote(str(m["text"])), roles=seats.get(game, {}),
                         night=night.get((game, seat), []))
        for name in held_judges():
            if (ask := judge_spec(name).ask(message)) is not None:
                out.append(judge.task(name, {**row, **ask.row}, ask.subjects, **ask.values))
    return out


@dataclass
class Calibration:
    """The judgments and each judge's agreement with the humans."""

    run: Path
    judge_spec: str
    sample: int | None
    seed: int
    messages: int
    """The run's labelled messages (the sample is drawn from them)."""
    rows: pd.DataFrame
    """One row per judgment: MESSAGE_COLUMNS, judge, truth, guess, valid, cached, raw."""
    agreements: dict[str, Agreement] = field(default_factory=dict)


async def _judge(data: RunData, frame: pd.DataFrame, client: LLMClient, cache_dir: Path | None,
                 progress: Progress | None, concurrency: int) -> pd.DataFrame:
    judge = Judge(client=client, cache_dir=cache_dir, concurrency=concurrency)
    work = tasks(judge, data, frame)
    answers = await judge.answers(work, progress)
    rows = []
    for task, (raw, cached) in zip(work, answers):
        guess, valid = _guess(task, raw)
        rows.append({**{c: task.row[c] for c in MESSAGE_COLUMNS}, "judge": task.judge,
                     "truth": judge_spec(task.judge).humans.truth(task.row), "guess": guess, "valid": valid, "cached": cached,
                     "raw": raw})
    return pd.DataFrame(rows, columns=[*MESSAGE_COLUMNS, "judge", "truth", "guess", "valid", "cached", "raw"])


def calibrate(data: RunData, run: Path, *, client: LLMClient, cache_dir: Path | None, n: int | None = None,
              seed: int = 0, progress: Progress | None = None, concurrency: int = 4) -> Calibration:
    """Judge the labelled messages of an imported run (all, or a stratified sample of `n`) and measure each
    judge's agreement with the human labels; invalid answers are left out of the agreement (and counted).

    Args:
        data: the loaded run (`load_run(run)`).
        run: its folder (for the provenance).
        client: the judge model's client.
        cache_dir: the judgments' cache folder; None keeps none.
        n: the sample size (see `sample`); None judges every labelled message.
        seed: seeds the sample and the bootstrap.
        progress: called with (0, total), then (done, total) after each judgment.
        concurrency: judge calls in flight at once.
    """
    everything = messages(data)
    frame = sample(everything, n, seed)
    rows = run_sync(_judge(data, frame, client, cache_dir, progress, concurrency))
    found = Calibration(run=Path(run), judge_spec=client.settings.spec,
                        sample=n, seed=seed, messages=len(everything), rows=rows)
    for judge in held_judges():
        valid = rows[(rows["judge"] == judge) & rows["valid"]]
        found.agreements[judge] = agreement(valid, judge_spec(judge).humans.classes, seed=seed)
    return found


def summary(found: Calibration) -> pd.DataFrame:
    """One row per judge: what it is compared with, items judged, invalid answers, games, kappa and accuracy
    with their 95% CIs."""
    rows = []
    for judge, a in found.agreements.items():
        mine = found.rows[found.rows["judge"] == judge]
        rows.append({"judge": judge, "against": judge_spec(judge).humans.against, "n": a.n, "invalid": int((~mine["valid"]).sum()),
                     "games": a.games, "kappa": a.kappa, "kappa_low": a.kappa_ci[0], "kappa_high": a.kappa_ci[1],
                     "accuracy": a.accuracy, "accuracy_low": a.accuracy_ci[0], "accuracy_high": a.accuracy_ci[1]})
    return pd.DataFrame(rows)


def per_class_table(found: Calibration) -> pd.DataFrame:
    """judge, label, precision, recall, support, predicted: every judge's classes."""
    return pd.concat([a.per_class.assign(judge=j) for j, a in found.agreements.items()], ignore_index=True)[
        ["judge", "label", "precision", "recall", "support", "predicted"]]


def confusion_table(found: Calibration) -> pd.DataFrame:
    """judge, human, judged, count: every cell of every confusion matrix (long form)."""
    parts = []
    for judge, a in found.agreements.items():
        long = a.confusion.stack().rename("count").reset_index()
        parts.append(long.rename(columns={"judge": "judged"}).assign(judge=judge))
    return pd.concat(parts, ignore_index=True)[["judge", "human", "judged", "count"]]
