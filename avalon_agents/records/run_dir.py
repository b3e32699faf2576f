"""The run-directory layout: every file of a game directory and of a run, named here and nowhere else.

A game directory holds seating.json (who sits where, and the game's place in its run), meta.json (the layout,
the rules, the seats' kinds, the model settings), events.jsonl, trace.jsonl, health.json and, last, result.json.
A game directory without result.json is not done. Only the recorder (records.recorder) writes one; JSON files
are written atomically (temp file, then rename); events.jsonl and trace.jsonl (LLM calls, extractions, faults:
for analysis, never shown to an agent) grow line by line as the game goes and are started afresh when a game
restarts (the interrupted attempt's trace kept as attempt-<n>.jsonl until the game finishes).

**Layouts.** meta.json's `layout` says which layout wrote the game: `LAYOUT` is this code's. Layout 1 is every
game written before the number was kept (no `layout` key): the same files, read the same way. Layout 2 adds the
key and the attempt files. Every reader of a run (`finished_games`) and every command that resumes one
(experiments.guard) refuses a directory holding a game of a layout this code does not read (a newer one), in
one line naming the directory and both numbers (`LayoutError`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from avalon_agents import logs
from avalon_agents.core.events import EVENT_ADAPTER, GameEvent, GameResult
from avalon_agents.records.trace import Record, TraceRecord, read_lines, to_line

EVENTS = "events.jsonl"
TRACE = "trace.jsonl"
META = "meta.json"
RESULT = "result.json"
HEALTH = "health.json"
"""A finished game's health: its calls, failed calls by cause, re-asks, fallbacks (records.usage)."""
ABORTED = "aborted.json"
"""Written instead of result.json when a game is aborted (the watchdog, too many failed calls): the reason and the
step (the game is replayed on resume)."""
SEATING = "seating.json"
"""Who sits where (the agent name at each seat) and the game's place in its run (variant, series, game, seed)."""
ATTEMPT = "attempt-{}.jsonl"
"""An interrupted attempt's trace (attempt-1.jsonl, ...), kept until the game finishes: the answers a new attempt
replays (records.recorder)."""
JUDGE_TRACE = "judge.jsonl"
"""The LLM calls the behaviour judges made about this game (the red team's judged goals)."""

# A run directory's own files (beside its games)
LOCK = ".lock"
"""Held (flock) by the process writing the run; says who holds it."""
EXPERIMENT = "experiment.json"
"""An experiment run's config, provenance and fingerprint (`avalon run`)."""
STUDY = "study.json"
"""A study's (red team, order bias, `avalon play --out`) name and fingerprint: a resume under another config is
refused."""
IMPORT_REPORT = "import.json"
"""An import's report (`avalon import`: each game imported, each file skipped and why)."""
RUN_LOG = logs.RUN_LOG
"""The run's diagnostic log (logs.run_log)."""
COST = "cost.csv"
"""An experiment run's cost table, one row per variant and model (experiments.spend)."""
PROGRESS = "progress.json"
"""A study's progress, rewritten as it plays (experiments.scheduler): its command and name, the games planned and
finished, the games aborted, `state` (playing, done, stopped), the playing process's id and the time of the last
change. What `avalon view` reads to show a run that is still playing."""


LAYOUT = 2
"""The game-directory layout this code writes (meta.json's `layout`)."""
READS = range(1, LAYOUT + 1)
"""The layouts this code reads: 1 (no `layout` key: games written before it was kept) up to its own."""


class LayoutError(ValueError):
    """A run directory holds a game of a layout this code does not read (one line)."""


GAME_PREFIX = "game-"
"""Every game directory's name starts so (`game_dir`): a reader can tell a game's folder by its name alone."""


def game_dir(parent: Path, index: int) -> Path:
    """The directory of game `index` (1-based) under `parent`: game-00001, ..."""
    return Path(parent) / f"{GAME_PREFIX}{index:05d}"


def series_dir(out: Path, variant: str, series: int) -> Path:
    """An experiment's series: OUT/<variant>/series-<k>."""
    return Path(out) / variant / f"series-{series}"


class Seating(BaseModel):
    """seating.json: the agent name at each seat and where the game stands in its run."""

    model_config = ConfigDict(extra="allow")

    agents: dict[int, str]
    series: int = 1
    game: int = 1
    variant: str = "main"
    seed: int | None = None
    schedule: str | None = None


class GameMeta(BaseModel):
    """meta.json: what made the game (its rules, seats, the models the seats and the extractor used)."""

    model_config = ConfigDict(extra="allow")

    layout: int = 1
    """The layout the game was written in (none recorded: 1)."""
    version: str | None = None
    seed: int | None = None
    rules: dict[str, Any] = {}
    seats: dict[int, str] = {}
    model: dict[str, Any] | None = None
    extractor_model: dict[str, Any] | None = None
    agent_config: dict[str, Any] | None = None
    cards: str | None = None
    """The set of role cards the seats' system prompts started from (prompts/cards/)."""
    seat_models: dict[int, dict[str, Any]] | None = None
    probes: bool = False
    orders: dict[str, Any] | None = None
    source: dict[str, Any] | str | None = None
    """Where an imported game came from (its format, file, ...)."""

    def extractor(self) -> str | None:
        """The LLM extractor's model as a short label ("local:smollm2 at T=0"), None without an LLM stage."""
        settings = self.extractor_model or {}
        if not settings.get("spec"):
            return None
        temperature = settings.get("temperature")
        return settings["spec"] + (f" at T={temperature:g}" if temperature is not None else "")

    def models(self) -> list[dict[str, Any]]:
        """The model settings of the game's agents (per seat where seats differ), never empty entries."""
        found = [self.model or {}] + [m.get("model") or {} for m in (self.seat_models or {}).values()]
        return [m for m in found if isinstance(m, dict)]


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to `path` so that readers see either the old file or the whole new one."""
    text = data.model_dump_json(indent=2) if isinstance(data, BaseModel) else json.dumps(data, indent=2, default=str)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # readable by colleagues on a shared filesystem (mkstemp makes it 0600)
        with os.fdopen(fd, "w") as f:
            f.write(text + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class JsonlTracer:
    """Appends trace records to one JSONL file (LLM calls made outside a game, e.g. by the analysis judges)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.step: int | None = None

    def trace(self, record: Record) -> None:
        with open(self.path, "a") as f:
            f.write(to_line(record) + "\n")


def is_done(path: Path) -> bool:
    """True if the game directory holds a finished game."""
    return (Path(path) / RESULT).is_file()


def read_events(path: Path) -> list[GameEvent]:
    """The game events of a game directory, in order."""
    with open(Path(path) / EVENTS) as f:
        return [EVENT_ADAPTER.validate_json(line) for line in f if line.strip()]


def read_trace(path: Path) -> list[TraceRecord]:
    """The typed trace records of a game directory, in order."""
    return read_lines(Path(path) / TRACE)


def read_result(path: Path) -> GameResult:
    return GameResult.model_validate_json((Path(path) / RESULT).read_text())


def read_meta(path: Path) -> GameMeta:
    return GameMeta.model_validate_json((Path(path) / META).read_text())


def read_seating(path: Path) -> Seating | None:
    """The game's seating.json (None: a game played without one, e.g. `avalon play` before it wrote one)."""
    file = Path(path) / SEATING
    return Seating.model_validate_json(file.read_text()) if file.is_file() else None


def has_trace(path: Path) -> bool:
    return (Path(path) / TRACE).is_file()


def attempt_files(path: Path) -> list[Path]:
    """A game's interrupted attempts' traces, oldest first."""
    prefix, suffix = ATTEMPT.split("{}")
    numbered = {int(n): p for p in Path(path).glob(ATTEMPT.format("*"))
                if (n := p.name.removeprefix(prefix).removesuffix(suffix)).isdigit()}
    return [numbered[n] for n in sorted(numbered)]


def finished_games(root: Path) -> list[Path]:
    """Every finished game directory at or under `root` (a game, a series, a run, any folder), in path order.

    Raises:
        LayoutError: one of them is of a layout this code does not read.
    """
    root = Path(root)
    if (root / META).is_file():
        found = [root] if is_done(root) else []
    else:
        found = sorted(p.parent for p in root.rglob(META) if (p.parent / EVENTS).is_file() and is_done(p.parent))
    check_layout(root, found)
    return found


def games_in(root: Path) -> list[Path]:
    """Every game directory at or under `root`, finished or not, in path order."""
    return sorted(p.parent for p in Path(root).rglob(META)) if Path(root).is_dir() else []


def layout_of(game: Path) -> Any:
    """The layout of a game directory, as its meta.json says (1 without a `layout`; None: unreadable)."""
    try:
        meta = json.loads((Path(game) / META).read_text())
    except (OSError, ValueError):
        return None  # the readers say what is wrong with it, naming the game
    return meta.get("layout", 1) if isinstance(meta, dict) else None


def check_layout(root: Path, games: Iterable[Path]) -> None:
    """Refuse `root` if any of `games` (under it) is of a layout this code does not read: one line naming the
    directory, the game's layout and this code's."""
    for game in games:
        layout = layout_of(game)
        if layout is None or (isinstance(layout, int) and not isinstance(layout, bool) and layout in READS):
            continue
        where = "" if Path(game) == Path(root) else f" ({Path(game).relative_to(root)})"
        named = layout if isinstance(layout, int) else repr(layout)
        raise LayoutError(f"run-dir: {root} holds a game of layout {named}{where}; this version of avalon_agents "
                          f"reads layouts 1 to {LAYOUT}: open it with the version that wrote it")


def read_experiment(out: Path) -> dict[str, Any] | None:
    """An experiment run's experiment.json (its variants' configs, provenance and fingerprint); None: none."""
    file = Path(out) / EXPERIMENT
    return json.loads(file.read_text()) if file.is_file() else None


def variant_order(out: Path) -> list[str]:
    """An experiment run's variants in their config's order (none for a run without experiment.json)."""
    return list((read_experiment(out) or {}).get("variants") or {})


def aborted_games(root: Path) -> list[Path]:
    """Every game directory at or under `root` whose last attempt was aborted (no result; replayed on resume)."""
    return [game for game in games_in(root) if (game / ABORTED).is_file() and not is_done(game)]


def judge_tracer(game: Path) -> JsonlTracer:
    """Where the behaviour judges' calls about a game go (beside its trace: judge.jsonl)."""
    return JsonlTracer(Path(game) / JUDGE_TRACE)


def read_judge_trace(game: Path) -> list[TraceRecord]:
    """The behaviour judges' calls about a game (empty if none were made)."""
    return read_lines(Path(game) / JUDGE_TRACE)


def holds_games(out: Path) -> bool:
    """True if `out` holds any game directory, finished or not."""
    return Path(out).is_dir() and any(Path(out).rglob(META))


def read_progress(out: Path) -> dict[str, Any] | None:
    """A study's progress.json (None: none, or unreadable while it is replaced)."""
    try:
        data = json.loads((Path(out) / PROGRESS).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
