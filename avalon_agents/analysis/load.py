"""Load run directories into pandas: one call turns a game, a series, an experiment (or any folder holding
game directories) into the tables every metric is computed from.

Every row carries the game it belongs to (`game`, the game directory relative to the loaded folder),
`variant`, `series`, `game_index`, and where a row is about a seat, that seat's `seat`, `role`, `side`,
`kind` (agent kind) and `agent` (the experiment's agent name, or the kind outside experiments), and
`quest` and `attempt` where the record has them. Only finished games (with result.json) are loaded.

A game's games, seats and events rows are made here; every other row is declared by the event or trace record
type it comes from (`rows`, core/rows.py), so a new type reaches its table with no edit here. `COLUMNS` gives each
table its first columns (and an empty table its columns).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import sys
import weakref
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from avalon_agents.core.events import EVENT_ADAPTER
from avalon_agents.core.rows import SEAT_COLUMNS, GameRows, Rows
from avalon_agents.core.types import Role
from avalon_agents.records import columns
from avalon_agents.records.reader import open_run
from avalon_agents.records.run_dir import GAME_PREFIX, META, RESULT, GameMeta
from avalon_agents.records.walk import Game

SERIES = re.compile(r"^series-(\d+)$")
GAME = re.compile(r"^game-(\d+)$")


class Tables:
    """A dataclass of DataFrames: `tables()` by name, and a repr with their row counts."""

    def tables(self) -> dict[str, pd.DataFrame]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{k}={len(v)}" for k, v in self.tables().items()) + ")"


@dataclass(repr=False)
class RunData(Tables):
    """The tables of a run. Each is a DataFrame (possibly empty, with its columns).

    Attributes:
        games: one row per game: variant, series, game_index, seed, rules, players, winner, reason,
            merlin_seat, evil_seats, assassin_seat (who carried the assassination: the Assassin, or the role the
            rules name; None without Merlin), assassination_target, quests_played, llm_calls, input/output tokens.
        seats: one row per game and seat: role, side, kind, agent.
        events: every game event (payload fields as columns; `visible_to` kept as recorded).
        speeches: one row per speech: seq, quest, attempt, seat (+ seat columns), text.
        proposals: one row per team put forward: leader (+ seat columns), team, team_size, assigned,
            self_included, clean (no evil player on it), approved, approvals and votes (None when the team
            was assigned, not voted), went (the team went on the quest).
        votes: one row per seat and team vote: vote ("approve"/"reject"), team, leader, leader_role,
            leader_side, clean, approved.
        quests: one row per quest that went out: team, fails, success.
        cards: one row per quest card: seat (+ seat columns), success (False: a fail card), could_fail (the
            rules let this seat fail the quest: an evil seat, or any seat under `good_may_fail`).
        extractions: the extractor's records (method, valid, answers, problems).
        speech_checks: the speech guard's records (records.trace.SpeechCheck): per LLM seat's speech, the words
            of its prompt it copied (`echo` at profiles.ECHO_WORDS), re-asked, trimmed, cut, mid_sentence.
        seat_faults: the protocol errors of program seats and the fallbacks of program and web seats
            (records.trace.SeatFault): problem (`fallback` for a decision the fallback made), detail, request.
        calls: LLM calls without their messages: stage, name, part, request, module (the call's label: the
            module or step it served), spec, prompt id, tokens, latency, outcome, step.
        modules: module outputs (module, slot, text).
        probes: belief probes (see analysis.paper.probes), with the truth: merlin_seat, evil_seats.
        annotations: human labels of imported games (see docs/humans.md): annotation (`persuasion`,
            `deception` or `belief`), label, seat (+ seat columns), seq (the speech labelled, or the event at
            which a belief was stated), quest, attempt, part, message, text, about_seat and about_role (a
            belief's subject and its true role), source.
    """

    games: pd.DataFrame
    seats: pd.DataFrame
    events: pd.DataFrame
    speeches: pd.DataFrame
    proposals: pd.DataFrame
    votes: pd.DataFrame
    quests: pd.DataFrame
    cards: pd.DataFrame
    extractions: pd.DataFrame
    speech_checks: pd.DataFrame
    seat_faults: pd.DataFrame
    calls: pd.DataFrame
    modules: pd.DataFrame
    probes: pd.DataFrame
    annotations: pd.DataFrame


def game_dirs(root: Path) -> list[Path]:
    """Every finished game directory at or under `root`, in path order."""
    return [game.path for game in open_run(root).finished(check=True)]


def _place(game: Game) -> dict[str, Any]:
    """variant, series and game index from the experiment layout <variant>/series-<k>/game-<n> (or the
    `avalon play --out` layout game-<n>, or a lone game directory)."""
    seating = game.seating()
    if seating is not None:
        return {"game": game.name, "variant": seating.variant, "series": seating.series,
                "game_index": seating.game, "_agents": dict(seating.agents)}
    parts = Path(game.name).parts
    series = next((int(m.group(1)) for p in parts if (m := SERIES.match(p))), 1)
    index = int(m.group(1)) if (m := GAME.match(parts[-1])) else 1
    variant = parts[-3] if len(parts) >= 3 and SERIES.match(parts[-2]) else "main"
    return {"game": game.name, "variant": variant, "series": series, "game_index": index, "_agents": {}}


def load_run(path: str | Path, cache: dict | None = None, *, write: bool = True) -> RunData:
    """Load every finished game at or under `path` (a game, a series, an experiment, any folder), found by the
    run's reader (records.reader.open_run: one cached walk; a game of a layout this code does not read is refused).

    The folder keeps a columnar copy of its tables (records.columns, `path/.tables`; not in a game's own folder):
    the games it holds, each unchanged since (its result.json's time and size), are read from it, only the others
    from their files, and their rows are added to it as a new part (so a run's tables are read from its files once,
    by whoever reads it first and may write: the run's own summary at its end, `avalon analyze`). A part written by
    other code (its `SCHEMA`) or for a game rewritten since is not read, and is replaced.

    `cache`: a dict kept between calls (e.g. by `avalon view`) holding, per folder loaded, its tables and each game's
    result.json's time and size (`Loaded`): a call when nothing changed returns the same tables; when games only
    finished since, those are read alone and their rows added to the tables, so a run that grew by one game reads
    one game and builds no table afresh (a game gone or rewritten: the folder is loaded afresh).

    `write=False` reads the copy where it is and never writes or removes a part (`avalon view`: a viewer writes
    nothing into the runs it shows).

    Raises:
        FileNotFoundError: `path` does not exist or holds no finished game.
    """
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such folder")
    games = {game.path: game for game in open_run(root).finished()}  # each game's layout: checked when read
    if not games:
        raise FileNotFoundError(f"{root}: no finished game (a game folder holds meta.json, events.jsonl and "
                                "result.json)")
    stamps = {path: game.file_stamp(RESULT) for path, game in games.items()}
    loaded = cache.get(str(root)) if cache is not None else None
    if loaded is not None and any(stamps.get(d, -1) != t for d, t in loaded.stamps.items()):
        loaded = None  # a game gone or rewritten
    if loaded is None:
        loaded = stored(root, games, stamps, write)
    elif loaded.stamps != stamps:
        loaded = loaded.add(games, stamps, root, write)
    if cache is not None:
        cache[str(root)] = loaded
    return loaded.data


@functools.cache
def schema() -> str:
    """What a part of the columnar copy was built by: the source of this module and of the rows' builders
    (core/rows.py, core/events.py, records/trace.py, records/run_dir.py, records/walk.py), pandas' and numpy's
    versions. A part of
    another schema is not read: a change to how rows are made never meets tables made the old way."""
    digest = hashlib.sha256(f"{pd.__version__} {np.__version__}".encode())
    for name in (__name__, "avalon_agents.core.rows", "avalon_agents.core.events", "avalon_agents.records.trace",
                 "avalon_agents.records.run_dir", "avalon_agents.records.walk"):
        digest.update(Path(sys.modules[name].__file__).read_bytes())
    return digest.hexdigest()[:16]


def keeps_copy(root: Path) -> bool:
    """Whether `root` keeps a columnar copy: any folder loaded but a game's own (its recorder's)."""
    return not (root.name.startswith(GAME_PREFIX) and (root / META).is_file())


CHUNK = 1000
"""Games read from their files at a time (their rows as dicts are the memory's peak), each chunk made into tables
before the next is read."""
BULK = 10_000
"""Games read from their files that are written as one part, then read back from it: a part's tables share each
distinct value's object (a fresh load's hold one per cell), so 100,000 games fit in memory."""
PART_GAMES = 20_000
"""Games a part of the copy holds at most (a merge stops there): a 10,000-game run is one part, read with no
concatenation."""


def stored(root: Path, games: dict[Path, Game], stamps: dict[Path, tuple[int, int] | None],
           write: bool = True) -> Loaded:
    """The tables of `games` (every finished game, in path order, with their `stamps`): from the folder's columnar
    copy where it holds a game unchanged, the other games read from their files (CHUNK at a time) and added to the
    copy (a part of at most BULK games, its tables then read back from it; not with `write` False)."""
    keep = keeps_copy(root)
    by_name = {game.name: d for d, game in games.items()}
    held_stamps = {d: _held_stamp(game) for d, game in games.items()} if keep else {}
    order = pd.Index([games[d].name for d in stamps])
    chosen: list[columns.Part] = []
    dropped: list[columns.Part] = []
    read: list[tuple[columns.Part, dict[str, Any]]] = []
    for _ in range(3 if keep else 0):  # a part merged away by another process while read: list again
        try:
            chosen, dropped = _chosen(columns.parts(root, schema()), by_name, held_stamps)
            read = []
            for part in chosen:
                try:
                    read.append((part, columns.read(part)))
                except columns.Unreadable:
                    dropped.append(part)
            break
        except FileNotFoundError:
            read = []
    found: list[RunData] = []
    for part, tables in read:
        frames = _decoded(tables, {name: str(by_name[name]) for name in part.games})
        if frames is None:
            dropped.append(part)
        else:
            found.append(frames)
    held = {name for part, _ in read if part not in dropped for name in part.games}
    new = [d for d in stamps if games[d].name not in held]
    for start in range(0, len(new), BULK):
        bulk = new[start:start + BULK]
        chunks = [_frames(_read_games([games[d] for d in bulk[at:at + CHUNK]], root))
                  for at in range(0, len(bulk), CHUNK)]
        added = _joined(chunks, order)
        del chunks
        if keep and write:
            part = _keep(root, {games[d].name: held_stamps[d] for d in bulk}, added, order,
                         merge=len(bulk) < BULK // 2)
            with contextlib.suppress(FileNotFoundError, columns.Unreadable):
                again = _decoded(columns.read(part), {games[d].name: str(d) for d in bulk}) if part else None
                added = again if again is not None else added
        found.append(added)
    if write:
        columns.remove(dropped)
    return Loaded(stamps, _joined(found, order))


def _held_stamp(game: Game) -> tuple[int, ...]:
    """What a part holds a game by: its result.json's and meta.json's times and sizes (a game rewritten, or its
    meta.json's layout changed, is read again from its files and its layout checked)."""
    return (*(game.file_stamp(RESULT) or (0, 0)), *(game.file_stamp(META) or (0, 0)))


def _chosen(parts: list[columns.Part], by_name: dict[str, Path],
            stamps: dict[Path, tuple[int, int] | None]) -> tuple[list[columns.Part], list[columns.Part]]:
    """(the parts to read, the parts to remove): newest first, a part whose games are all finished and unchanged
    and held by no newer part; a stale one (another schema, a game gone or rewritten) or one a newer part overlaps
    (a merge's or another process's) is removed once what replaces it is written."""
    chosen, dropped, taken = [], [], set()
    for part in reversed(parts):
        if part.stale or any(g not in by_name or stamps[by_name[g]] != s for g, s in part.games.items()):
            dropped.append(part)
        elif taken & part.games.keys():
            dropped.append(part)
        else:
            chosen.append(part)
            taken |= part.games.keys()
    return chosen, dropped


def _decoded(stored: tuple[dict[str, pd.DataFrame], dict[str, Any] | None], paths: dict[str, str]) -> RunData | None:
    """A part's tables as RunData, the games' `path` put back (a part holds names, so a run moved elsewhere reads
    its copy); None when a table is missing (the part is replaced)."""
    tables, firsts = stored
    if any(f.name not in tables for f in fields(RunData)):
        return None
    games = tables["games"]
    games.insert(COLUMNS["games"].index("path"), "path", pd.Series([paths[g] for g in games["game"]], dtype="str"))
    return _with_firsts(RunData(**{f.name: tables[f.name] for f in fields(RunData)}), firsts)


MAX_PARTS = 8
"""Parts a copy holds at most: more, and the newest are merged (see `_keep`)."""


def _keep(root: Path, games: dict[str, tuple[int, int] | None], data: RunData, order: pd.Index,
          merge: bool = True) -> columns.Part | None:
    """Add the rows of `games` (their `data`) to `root`'s copy as a new part, then (`order`: every finished game's
    name, in path order) merge the newest two parts while the newer holds at least half the games of the one before
    and they hold at most PART_GAMES together (a binary counter: a run grown game by game keeps a few parts, and
    each row is rewritten about log2(PART_GAMES) times at most; not after a bulk read: `merge` False). Returns the
    part written (None: none)."""
    tables = {n: t.drop(columns="path") if n == "games" else t for n, t in data.tables().items()}
    written = columns.write(root, schema(), games, tables, _FIRSTS.get(id(data)))
    while written is not None and merge:
        parts = [p for p in columns.parts(root, schema()) if not p.stale]
        if len(parts) < 2:
            break
        older, newer = parts[-2:]
        if 2 * len(newer.games) < len(older.games) or len(older.games) + len(newer.games) > PART_GAMES:
            break
        try:
            a, b = columns.read(older), columns.read(newer)
        except (FileNotFoundError, columns.Unreadable):
            break  # merged by another process meanwhile, or not readable: the next read replaces it
        names = {g: g for g in [*older.games, *newer.games]}
        first, second = _decoded(a, names), _decoded(b, names)
        if (first is None or second is None or older.games.keys() & newer.games.keys()
                or (order.get_indexer(list(names)) < 0).any()):
            break  # not this reader's to merge: a stale part, removed by the next read
        merged = _joined([first, second], order)
        tables = {n: t.drop(columns="path") if n == "games" else t for n, t in merged.tables().items()}
        if columns.write(root, schema(), {**older.games, **newer.games}, tables,
                         _FIRSTS.get(id(merged))) is None:
            break
        columns.remove([older, newer])
    return written


@dataclass
class Loaded:
    """A folder's tables as loaded (`data`), with each game's result.json's time and size (`stamps`)."""

    stamps: dict[Path, tuple[int, int] | None]
    data: RunData

    def add(self, games: dict[Path, Game], stamps: dict[Path, tuple[int, int] | None],
            root: Path | None = None, write: bool = True) -> Loaded:
        """The tables with the rows of the games finished since (`games`, `stamps`: every finished game's, in path
        order) added, in path order, each column of the type a fresh load gives it; with `root`, those rows added
        to its columnar copy too."""
        new = [d for d in stamps if d not in self.stamps]
        added = _frames(_read_games([games[d] for d in new], root))
        order = pd.Index([games[d].name for d in stamps])
        if root is not None and write and keeps_copy(root):
            _keep(root, {games[d].name: _held_stamp(games[d]) for d in new}, added, order)
        return Loaded(stamps, _joined([self.data, added], order))


def _joined(parts: list[RunData], order: pd.Index) -> RunData:
    """The tables of `parts` (each of other games, its rows in game order) as one, in game order (`order`: the
    games' names in path order): each table's parts put end to end from the one whose first row's game comes first,
    sorted by game (stable: a game's rows keep their order) only where they interleave; the columns after COLUMNS
    in the order of their first row (each part's `firsts`), as a fresh load puts them; each column of the type a
    fresh load gives it."""
    if len(parts) == 1:
        return parts[0]
    frames, firsts = {}, {}
    known = all(id(p) in _FIRSTS for p in parts)
    for f in fields(RunData):
        mine = [(t, _FIRSTS[id(p)][f.name] if known else {}) for p in parts if not (t := getattr(p, f.name)).empty]
        if len(mine) < 2:
            frames[f.name] = mine[0][0] if mine else getattr(parts[0], f.name)
            firsts[f.name] = mine[0][1] if mine else {}
            continue
        spans = [order.get_indexer(t["game"].iloc[[0, -1]]) for t, _ in mine]
        ranked = sorted(range(len(mine)), key=lambda i: spans[i][0])
        both = pd.concat([mine[i][0] for i in ranked], ignore_index=True)
        if any(spans[a][1] > spans[b][0] for a, b in zip(ranked, ranked[1:])):  # they interleave
            both = both.take(np.argsort(order.get_indexer(both["game"]), kind="stable")).reset_index(drop=True)
        for column in both.columns:  # the parts' types differ: a fresh load's type
            if len({str(t[column].dtype) if column in t else None for t, _ in mine}) > 1:
                both[column] = pd.Series(both[column].tolist(), index=both.index, dtype=None)
        if known:
            both, firsts[f.name] = _in_first_order(both, mine, order, f.name)
        frames[f.name] = both
    return _with_firsts(RunData(**frames), firsts if known else None)


def _in_first_order(both: pd.DataFrame, mine: list[tuple[pd.DataFrame, dict[str, int]]], order: pd.Index,
                    name: str) -> tuple[pd.DataFrame, dict[str, int]]:
    """`both` (the parts `mine` joined, in game order) with its columns after COLUMNS in the order of the row where
    each first appears, and those rows."""
    where = order.get_indexer(both["game"])
    found: dict[str, tuple[int, int]] = {}
    for table, rows in mine:
        if not rows:
            continue
        games = order.get_indexer(table["game"])
        for column, row in rows.items():
            start = int(np.searchsorted(where, games[row]))  # where the game starts in `both`
            at = start + row - int(np.searchsorted(games, games[row]))
            if column not in found or at < found[column][0]:
                found[column] = (at, at)
    extra = [c for c in both.columns if c not in COLUMNS[name]]
    if set(extra) != set(found):
        return both, {}
    ranked = sorted(extra, key=lambda c: found[c][0])
    if ranked != extra:
        both = both[[c for c in both.columns if c in COLUMNS[name]] + ranked]
    return both, {c: found[c][0] for c in ranked}


def _read_games(games: list[Game], root: Path | None) -> dict[str, list[dict[str, Any]]]:
    """Every table's rows of `games`, in their order, each game's layout checked first (under `root`, the folder
    loaded: records.run_dir.LayoutError). Raises ValueError naming a game that cannot be read."""
    rows: dict[str, list[dict[str, Any]]] = {f.name: [] for f in fields(RunData)}
    for game in games if root is not None else ():
        game.check_layout(root)
    for game in games:
        try:
            _load_game(game, rows)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # pydantic's errors included
            problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"run-dir: {game.path} cannot be read ({type(exc).__name__}: {problem})") from None
    return rows


def _load_game(found: Game, rows: dict[str, list[dict[str, Any]]]) -> None:
    """A game's rows, added to `rows`: its games and seats rows, each event's row of the events table, and the rows
    each event and trace record declares (core/rows.py)."""
    place = _place(found)
    agents = place.pop("_agents")
    meta = found.meta()
    result = found.result()
    roles = {int(s): Role(r) for s, r in result.roles.items()}
    kinds = meta.seats
    game = GameRows(place, {s: {"role": r.value, "side": r.side.value, "kind": kinds.get(s, "unknown"),
                                "agent": agents.get(s, kinds.get(s, "unknown"))} for s, r in roles.items()},
                    meta.rules)
    for s, info in game.seats.items():
        rows["seats"].append({**place, "seat": s, **info})
    for event in found.events():
        rows["events"].append({**place, **EVENT_ADAPTER.dump_python(event, mode="json")})
        _add(rows, event.rows(game), "event", event.type)
    calls = len(rows["calls"])
    for record in found.trace():
        _add(rows, record.rows(game), "trace record", record.type)
    calls_rows = rows["calls"][calls:]
    rows["games"].append({
        **place, "path": str(found.path), "seed": meta.seed, "rules": meta.rules.get("name"),
        "players": len(roles), "winner": result.winner.value, "reason": result.reason.value,
        "models": "+".join(sorted({m.get("spec") for m in meta.models() if m.get("spec")})) or None,
        "cards": meta.cards, "extractor": meta.extractor(),
        "merlin_seat": game.merlin, "evil_seats": game.evil,
        "assassin_seat": result.assassin if result.assassin is not None else _holder(meta, roles),
        "assassination_target": result.assassination_target, "quests_played": len(result.quests),
        "proposals": result.proposals, "llm_calls": len(calls_rows),
        "input_tokens": sum(r["input_tokens"] for r in calls_rows),
        "output_tokens": sum(r["output_tokens"] for r in calls_rows),
        "good_agents": "+".join(sorted({i["agent"] for i in game.seats.values() if i["side"] == "good"})),
        "evil_agents": "+".join(sorted({i["agent"] for i in game.seats.values() if i["side"] == "evil"})),
    })


class RowsError(RuntimeError):
    """An event or trace record type gives rows to a table this module does not make (one line)."""


def _add(rows: dict[str, list[dict[str, Any]]], given: Rows, what: str, name: str) -> None:
    for table, added in given.items():
        if table not in rows:
            raise RowsError(f"{what} type {name} gives rows to table {table!r}, which analysis.load does not make "
                            f"(its tables: {', '.join(rows)})")
        rows[table] += added


def _holder(meta: GameMeta, roles: dict[int, Role]) -> int | None:
    """The seat that carried the assassination, for games recorded before result.json named it: the rules'
    `assassin` role (the Assassin by default), in games with Merlin."""
    if Role.MERLIN not in roles.values():
        return None
    token = meta.rules.get("assassin") or Role.ASSASSIN.value
    return next((s for s, r in roles.items() if r.value == token), None)


BASE = ["game", "variant", "series", "game_index"]
COLUMNS = {
    "games": [*BASE, "path", "seed", "rules", "models", "cards", "extractor", "players", "winner", "reason",
              "merlin_seat", "evil_seats", "assassin_seat", "assassination_target", "quests_played", "proposals",
              "llm_calls", "input_tokens", "output_tokens", "good_agents", "evil_agents"],
    "seats": [*BASE, "seat", *SEAT_COLUMNS],
    "events": [*BASE, "seq", "type", "quest", "attempt", "visible_to"],
    "speeches": [*BASE, "seq", "quest", "attempt", "seat", *SEAT_COLUMNS, "text"],
    "proposals": [*BASE, "seq", "quest", "attempt", "seat", *SEAT_COLUMNS, "leader", "team", "team_size",
                  "assigned", "self_included", "clean", "approved", "approvals", "votes", "went"],
    "votes": [*BASE, "seq", "quest", "attempt", "seat", *SEAT_COLUMNS, "vote", "team", "leader", "leader_role",
              "leader_side", "leader_agent", "clean", "approved"],
    "quests": [*BASE, "seq", "quest", "attempt", "team", "fails", "success"],
    "cards": [*BASE, "seq", "quest", "attempt", "seat", *SEAT_COLUMNS, "success", "could_fail"],
    "extractions": [*BASE, "seat", *SEAT_COLUMNS, "request", "quest", "attempt", "method", "valid"],
    "speech_checks": [*BASE, "seat", *SEAT_COLUMNS, "quest", "attempt", "profile", "copied", "echo", "reasked",
                      "trimmed", "cut", "words", "mid_sentence"],
    "seat_faults": [*BASE, "seat", *SEAT_COLUMNS, "problem", "detail", "request", "quest", "attempt"],
    "calls": [*BASE, "seat", *SEAT_COLUMNS, "stage", "name", "part", "request", "module", "spec", "quest",
              "attempt", "input_tokens", "output_tokens", "latency_s", "outcome", "step"],
    "modules": [*BASE, "seat", *SEAT_COLUMNS, "module", "slot", "quest", "attempt", "text"],
    "probes": [*BASE, "seat", *SEAT_COLUMNS, "quest", "valid", "merlin_guess", "p_evil", "merlin_seat",
               "evil_seats"],
    "annotations": [*BASE, "seq", "quest", "attempt", "seat", *SEAT_COLUMNS, "annotation", "label", "about_seat",
                    "about_role", "part", "message", "text", "source"],
}


def _frames(rows: dict[str, list[dict[str, Any]]]) -> RunData:
    frames, firsts = {}, {}
    for name, records in rows.items():
        frame = pd.DataFrame(records)
        for column in COLUMNS[name]:
            if column not in frame:
                frame[column] = pd.Series(dtype=object)
        first = [c for c in COLUMNS[name] if c in frame]
        frames[name] = frame[first + [c for c in frame.columns if c not in first]]
        firsts[name] = _first_rows(records, [c for c in frame.columns if c not in first])
    return _with_firsts(RunData(**frames), firsts)


_FIRSTS: dict[int, dict[str, dict[str, int]]] = {}
"""Per RunData this module made (by id, while it lives): the row where each column after COLUMNS first appears in
each table, what `_joined` orders the columns of several parts by (kept apart: RunData's fields are its tables)."""


def _with_firsts(data: RunData, firsts: dict[str, dict[str, int]] | None) -> RunData:
    if firsts is not None:
        _FIRSTS[id(data)] = firsts
        weakref.finalize(data, _FIRSTS.pop, id(data), None)
    return data


def _first_rows(records: list[dict[str, Any]], wanted: list[str]) -> dict[str, int]:
    """The row where each of `wanted` first appears as a key of `records` (what orders a fresh load's columns
    after COLUMNS: `_joined` puts the columns of several parts in that order)."""
    found: dict[str, int] = {}
    missing = set(wanted)
    for i, record in enumerate(records):
        if not missing:
            break
        for key in missing & record.keys():
            found[key] = i
        missing -= found.keys()
    return found


def origin(run_dir: Path, finished: int | None = None) -> str | None:
    """From a run directory's experiment.json: the experiment, its config file and fingerprint, the commit
    and framework version, each variant's pipeline, and games (`finished` of) planned and aborted (None: not
    a run of `avalon run`)."""
    run = open_run(run_dir)
    meta = run.experiment()
    if meta is None:
        return None
    fingerprint = hashlib.sha256(json.dumps(meta.get("fingerprint"), sort_keys=True).encode()).hexdigest()[:12]
    planned = sum(v.get("series", 1) * v.get("games_per_series", 1) for v in meta.get("variants", {}).values())
    aborted = len(run.aborted())
    return (f"experiment {meta.get('name')} (config {meta.get('config_file')}, fingerprint {fingerprint}, commit "
            f"{meta.get('commit') or 'unknown'}, framework {meta.get('version')}); "
            + "".join(f"{part}; " for part in _pipelines(meta.get("pipelines", {})))
            + (f"{finished} of {planned} planned games finished" if finished is not None
               else f"{planned} game(s) planned") + f", {aborted} aborted (replayed on resume)")


def _pipelines(per_variant: dict[str, dict[str, str]]) -> list[str]:
    """'decisions: ...' and each agent's pipeline; where the variants differ, each variant's, by name."""
    parts = []
    for key in dict.fromkeys(k for p in per_variant.values() for k in p):
        seen = {variant: p[key] for variant, p in per_variant.items() if key in p}
        if len(set(seen.values())) == 1:
            parts.append(f"{key}: {next(iter(seen.values()))}")
        else:
            parts.append(f"{key}: " + ", ".join(f"{v} in {variant}" for variant, v in seen.items()))
    return parts
