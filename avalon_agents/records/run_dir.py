"""The run-directory layout: every file of a game directory and of a run, named here and nowhere else.

A game directory holds seating.json (who sits where, and the game's place in its run), meta.json (the layout,
the rules, the seats' kinds, the model settings), events.jsonl, trace.jsonl, health.json and, last, result.json.
A game directory without result.json is not done. Only the recorder (records.recorder) writes one; JSON files
are written atomically (temp file, then rename); events.jsonl and trace.jsonl (LLM calls, extractions, faults:
for analysis, never shown to an agent) grow line by line as the game goes and are started afresh when a game
restarts (the interrupted attempt's trace kept as attempt-<n>.jsonl until the game finishes).

**Layouts.** meta.json's `layout` says which layout wrote the game: `LAYOUT` is this code's. Layout 1 is every
game written before the number was kept (no `layout` key): the same files, read the same way. Layout 2 adds the
key and the attempt files. Every reader of a run (records.walk.finished_games, records.reader) and every command that
resumes one (experiments.guard) refuses a directory holding a game of a layout this code does not read (a newer one), in
one line naming the directory and both numbers (`LayoutError`).

The games of a run are found by its walk (records.walk); this module names and reads the files.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from avalon_agents import logs
from avalon_agents.core.events import EVENT_ADAPTER, GameEvent, GameResult
from avalon_agents.records.trace import Record, TraceRecord, from_line, read_lines, to_line

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


T = TypeVar("T")

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


def read_run_file(out: Path, name: str) -> dict[str, Any] | None:
    """One of a run directory's own JSON records (`EXPERIMENT`, `STUDY`) as written; None: none."""
    file = Path(out) / name
    return json.loads(file.read_text()) if file.is_file() else None


def read_experiment(out: Path) -> dict[str, Any] | None:
    """An experiment run's experiment.json (its variants' configs, provenance and fingerprint); None: none."""
    return read_run_file(out, EXPERIMENT)


def variant_order(out: Path) -> list[str]:
    """An experiment run's variants in their config's order (none for a run without experiment.json)."""
    return list((read_experiment(out) or {}).get("variants") or {})


def judge_tracer(game: Path) -> JsonlTracer:
    """Where the behaviour judges' calls about a game go (beside its trace: judge.jsonl)."""
    return JsonlTracer(Path(game) / JUDGE_TRACE)


def read_judge_trace(game: Path) -> list[TraceRecord]:
    """The behaviour judges' calls about a game (empty if none were made)."""
    return read_lines(Path(game) / JUDGE_TRACE)


def read_progress(out: Path) -> dict[str, Any] | None:
    """A study's progress.json (None: none, or unreadable while it is replaced)."""
    try:
        data = json.loads((Path(out) / PROGRESS).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# A game's growing files: a tail for live readers, their lines unparsed


class Tail(Generic[T]):
    """The whole lines appended to a growing JSONL file (events.jsonl, trace.jsonl) since the last `read`, parsed;
    a line still being written is read next time, and a file started again (a new attempt's: another file, or one
    that shrank) is read from its start (`restarted` says so after that read). `offset`: how far it has read."""

    def __init__(self, path: Path, parse: Callable[[str], T], offset: int = 0) -> None:
        self.path, self.parse, self.offset = Path(path), parse, offset
        self.restarted = False
        self._file: int | None = None  # the inode read from

    @classmethod
    def of(cls, game: Path, name: str = TRACE, offset: int = 0) -> Tail:
        """The tail of one of a game directory's growing files (TRACE, EVENTS, JUDGE_TRACE)."""
        return cls(Path(game) / name, PARSERS[name], offset)

    def read(self, keep: Callable[[str], bool] | None = None) -> list[T]:
        """The new records (`keep`: a cheap test of a line, before it is parsed)."""
        self.restarted = False
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                if st.st_size < self.offset or (self._file is not None and st.st_ino != self._file):
                    self.offset, self.restarted = 0, True
                self._file = st.st_ino
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        whole = data[: data.rfind(b"\n") + 1]
        self.offset += len(whole)
        lines = (raw.decode("utf-8", "replace") for raw in whole.split(b"\n"))  # not splitlines: U+2028 is text
        return [self.parse(line) for line in lines if line.strip() and (keep is None or keep(line))]


def _event(line: str) -> GameEvent:
    return EVENT_ADAPTER.validate_json(line)


PARSERS: dict[str, Callable[[str], Any]] = {EVENTS: _event, TRACE: from_line, JUDGE_TRACE: from_line}
"""How each of a game's growing files is read, line by line (a tail's)."""


def jsonl_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Each non-blank line of a JSONL file of a run (a game's trace, events or judge trace, the analysis's calls)
    with the byte it starts at, unparsed: a reader of millions of calls parses only what it needs."""
    offset = 0
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                yield offset, line
            offset += len(line)


def jsonl_dicts(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each whole record of a JSONL file of a run as a plain dict, with the byte its line starts at (a line still
    being written is left out): the fast untyped reading an index of millions of calls needs (`line_dict`)."""
    for offset, line in jsonl_lines(path):
        try:
            yield offset, line_dict(line)
        except ValueError:
            continue


def line_dict(line: bytes) -> dict[str, Any]:
    """One JSONL line of a run's file (as `jsonl_lines` or `lines_at` gave it) as a plain dict. Raises ValueError."""
    import orjson

    found = orjson.loads(line)
    if not isinstance(found, dict):
        raise ValueError("not a record")
    return found


def lines_at(places: Iterable[tuple[Path, int]]) -> Iterator[bytes]:
    """The line starting at each (file, byte) of `places` (as `jsonl_lines` gave them), each file opened once while
    its places follow each other."""
    handle, open_file = None, None
    try:
        for path, offset in places:
            if path != open_file:
                if handle is not None:
                    handle.close()
                handle, open_file = open(path, "rb"), path
            handle.seek(offset)
            yield handle.readline()
    finally:
        if handle is not None:
            handle.close()


def stamp(path: Path) -> tuple[int, int] | None:
    """(time in ns, size) of a file, None when it is not there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


