"""A run's LLM calls for the Calls page: every call of its games (trace.jsonl), the behaviour judges' calls about
them (judge.jsonl) and `avalon analyze`'s judges' calls (analysis/judgments/calls.jsonl), filtered and paged.

A run can hold millions of calls, so no call's messages are kept: `CallIndex` keeps, per run, one column per field
a filter or a table needs (which file and at which byte the call's line starts, game, seat, step, module, model,
tokens, latency, dollars, outcome, the decision it served and whether it was a re-ask or ended in a fallback, its
entry in the game's replay), as numpy arrays. A file is read again only when it changed (its size and time), and
a run's columns are joined again only when one of its files changed. A call's prompt and reply are read from its
line only for the page shown, and for a text search (`q`), whose matches are kept for the next pages.

The decision a call served is its seat's next Extraction (or SpeechCheck, for a speech) of the same request kind,
quest and attempt; of the calls of one decision, a purpose's calls after its first are re-asks. A call's place in
the game is its entry in the viewer's timeline (view.game.timeline: the game page's `#e-N`).
"""

from __future__ import annotations

import functools
import math
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args
from urllib.parse import urlencode

import numpy as np

from avalon_agents.prices import Prices
from avalon_agents.records.analysis_dir import analysis_dir, judge_calls
from avalon_agents.records.reader import open_run
from avalon_agents.records.run_dir import (EVENTS, JUDGE_TRACE, TRACE, jsonl_lines, line_dict, lines_at,
                                          read_events)
from avalon_agents.records.run_dir import stamp as file_stamp
from avalon_agents.records.trace import TRACE_ADAPTER, Purpose, Stage
from avalon_agents.view.catalog import Catalog
from avalon_agents.view.confine import Problem, Unreadable
from avalon_agents.web.serving import Refused

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
EXPORT_LIMIT = 500
"""How many calls an exported Calls page holds (the run's first; its filters search those)."""
FILTERS = ("q", "seat", "step", "module", "model", "game", "stage", "flag")
FLAGS = ("reask", "fallback", "retried", "failed")
"""`flag=`: re-asks, calls of decisions that ended in the fallback, calls retried, calls that failed."""
ORDERS = {"": None, "tokens": "tokens", "latency": "latency_s", "usd": "usd"}
"""`sort=`: run order, or the most tokens (in + out), the slowest, the dearest first."""
ENTRY_CACHE = 256
"""How many games' timeline entries are kept (a page's calls come from a few games)."""
TEXT_CACHE = 16
"""How many searches' matches a run keeps (paging through a search reads nothing again)."""

# column -> (numpy dtype, value for None)
COLUMNS: dict[str, tuple[Any, Any]] = {
    "offset": (np.int64, 0), "game": (object, None), "source": (object, None), "seat": (np.int32, -1),
    "step": (np.int32, -1), "quest": (np.int32, -1), "attempt": (np.int32, -1), "stage": (object, None),
    "name": (object, None), "part": (object, None), "request": (object, None), "module": (object, None),
    "model": (object, None), "input_tokens": (np.int64, 0), "output_tokens": (np.int64, 0),
    "cached_tokens": (np.int64, 0), "latency_s": (np.float64, 0.0), "attempts": (np.int32, 1),
    "throttled": (np.int32, 0), "outcome": (object, "ok"), "replayed": (np.bool_, False), "usd": (np.float64, math.nan),
    "decision": (object, None), "method": (object, None), "valid": (np.int8, -1),
    "answers": (np.int32, 0), "reask": (np.bool_, False), "fallback": (np.bool_, False),
}
NONE_INT = -1
STILL_WRITTEN = ("playing", "unfinished")
"""A run in these states (catalog.Catalog.row) may be writing its games' traces: its files are looked at again
on each page (a finished run's only when the catalog sees its files change)."""


@dataclass
class FileCalls:
    """One file's calls, as columns (see COLUMNS), and the stamp (time, size) of the file they were read from."""

    stamp: tuple
    columns: dict[str, np.ndarray]

    @property
    def size(self) -> int:
        return len(self.columns["offset"])


@dataclass
class RunCalls:
    """A run's calls: its files' columns joined (plus `file`, each call's file's number in `files`)."""

    key: tuple
    files: list[Path]
    columns: dict[str, np.ndarray]
    parts: list[FileCalls] = field(default_factory=list)  # the files' own columns (views of the run's)
    starts: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))  # each file's first call
    found: OrderedDict = field(default_factory=OrderedDict)  # a query's filters -> the indices of its matches
    choices: dict[str, Any] | None = None  # what each filter can take (`options`), once

    @property
    def size(self) -> int:
        return len(self.columns["offset"])


class CallIndex:
    """Each run's calls, read once per change of its files (see the module's docstring)."""

    def __init__(self, catalog: Catalog, prices: Prices | None = None) -> None:
        self.catalog = catalog
        self.prices = prices or catalog.prices
        self._files: dict[Path, FileCalls] = {}
        self._runs: dict[Path, RunCalls] = {}
        self._price_of: dict[str, Any] = {}
        self._entries: OrderedDict = OrderedDict()  # a game's trace -> (its stamp, its calls' entries)
        self._lock = threading.Lock()  # guards _entries (each run's own caches are its pages' alone)

    def entry(self, calls: RunCalls, i: int) -> int | None:
        """Call `i`'s entry in its game's replay (None: a judge's call, or a game that cannot be read)."""
        file = int(calls.columns["file"][i])
        path = calls.files[file]
        if calls.columns["source"][i] != "game":
            return None
        stamp = (file_stamp(path), file_stamp(path.parent / EVENTS))
        known = self._entries.get(path)
        if known is None or known[0] != stamp:
            try:
                known = (stamp, entries(path.parent))
            except (OSError, ValueError):
                known = (stamp, [])
        with self._lock:  # two runs' pages may ask at once
            self._entries[path] = known
            self._entries.move_to_end(path)
            while len(self._entries) > ENTRY_CACHE:
                self._entries.popitem(last=False)
        at = i - int(calls.starts[file])
        return known[1][at] if at < len(known[1]) and known[1][at] else None

    def run(self, run: Path) -> RunCalls:
        """The run's calls, read again only where a file changed."""
        row = self.catalog.row(run)
        cached = self.catalog._rows.get(run)
        key = (cached.signature if cached else None, row["state"], file_stamp(judge_calls(analysis_dir(run))))
        known = self._runs.get(run)
        if known is not None and known.key == key and row["state"] not in STILL_WRITTEN:
            return known
        files: list[tuple[Path, str | None, str]] = []
        for game in open_run(run).games():
            name = sys.intern(game.name)
            files += [(game.path / TRACE, name, "game"), (game.path / JUDGE_TRACE, name, "judge")]
        files.append((judge_calls(analysis_dir(run)), None, "analysis"))
        parts = [(path, self._file(path, game, source, run)) for path, game, source in files]
        parts = [(path, p) for path, p in parts if p is not None and p.size]
        if known is not None and len(parts) == len(known.parts) and all(
                p is q for (_, p), q in zip(parts, known.parts)):
            known.key = key  # no file changed
            return known
        columns = {name: np.concatenate([p.columns[name] for _, p in parts]) if parts
                   else np.empty(0, dtype=COLUMNS[name][0]) for name in COLUMNS}
        columns["file"] = (np.concatenate([np.full(p.size, i, dtype=np.int32) for i, (_, p) in enumerate(parts)])
                           if parts else np.empty(0, dtype=np.int32))
        start = 0
        for _, p in parts:  # each file's columns become views of the run's: one copy in memory
            p.columns = {name: columns[name][start:start + p.size] for name in COLUMNS}
            start += p.size
        found = RunCalls(key, [path for path, _ in parts], columns, [p for _, p in parts],
                         np.cumsum([0] + [p.size for _, p in parts]))
        self._runs[run] = found
        return found

    def _file(self, path: Path, game: str | None, source: str, run: Path) -> FileCalls | None:
        """A file's calls, read again when it changed. Raises Unreadable (422) naming a line of it that is not a
        record (a whole line: the last, unended, may be being written)."""
        stamp = file_stamp(path)
        if stamp is None:
            self._files.pop(path, None)
            return None
        known = self._files.get(path)
        if known is not None and known.stamp == stamp:
            return known
        try:
            rows = read_calls(path, game, source)
        except CorruptLine as exc:
            raise Unreadable(Problem(422, f"{path.relative_to(run).as_posix()} is corrupt: the line at byte "
                                          f"{exc.offset} is not a JSON record")) from None
        for r in rows:
            r["usd"] = self._dollars(r)
        made = FileCalls(stamp, {name: np.array([_or(r.get(name), none) for r in rows], dtype=dtype)
                                 for name, (dtype, none) in COLUMNS.items()})
        self._files[path] = made
        return made

    def _dollars(self, r: dict[str, Any]) -> float:
        spec = r.get("model")
        if spec not in self._price_of:
            self._price_of[spec] = None if spec is None else self.prices.price(spec)
        price = self._price_of[spec]
        if price is None:
            return math.nan
        return price.dollars(r["input_tokens"], r["output_tokens"], r["cached_tokens"])


def _or(value: Any, none: Any) -> Any:
    return none if value is None else value


@functools.lru_cache(maxsize=4096)
def label(stage: str | None, name: str, part: str | None) -> str:
    """A call's module as analysis.load names it (records.trace.Purpose.label)."""
    return Purpose.model_construct(stage=stage, name=name, part=part).label


def call_row(d: dict[str, Any], offset: int, game: str | None, source: str) -> dict[str, Any]:
    """An LLM call's line as its index row (no messages, no reply; its words interned: a run's millions of calls
    share a few dozen strings)."""
    row = {"offset": offset, "game": game, "source": source, "seat": d.get("seat"), "step": d.get("step"),
           "quest": d.get("quest"), "attempt": d.get("attempt"), "input_tokens": d.get("input_tokens") or 0,
           "output_tokens": d.get("output_tokens") or 0, "cached_tokens": d.get("cached_tokens") or 0,
           "latency_s": d.get("latency_s") or 0.0, "attempts": d.get("attempts") or 1,
           "throttled": d.get("throttled") or 0, "replayed": bool(d.get("replayed")),
           "module": label(d.get("stage"), d.get("name") or "", d.get("part")),
           "model": _word((d.get("settings") or {}).get("spec")), "outcome": _word(d.get("outcome") or "ok")}
    for key in ("stage", "name", "part", "request"):
        row[key] = _word(d.get(key))
    return row


def _word(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) else value


class CorruptLine(ValueError):
    """A whole line of a calls file that is not a JSON record (at byte `offset`)."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"the line at byte {offset} is not a JSON record")
        self.offset = offset


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each record of a JSONL file with the byte its line starts at; CorruptLine for a whole line that is none (the
    last line, not ended, is being written: left out)."""
    for offset, line in jsonl_lines(path):
        try:
            yield offset, line_dict(line)
        except ValueError:
            if line.endswith(b"\n"):
                raise CorruptLine(offset) from None


def read_calls(path: Path, game: str | None, source: str) -> list[dict[str, Any]]:
    """The index rows of a file's LLM calls. A game's trace also links each call to the decision it served;
    analyze's judges' calls name their game in `about`. Raises CorruptLine."""
    rows: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []  # a game's calls (their row) and decisions, in trace order
    for offset, d in _records(path):
        if d.get("type") != "llm_call":
            if source == "game" and d.get("type") in ("extraction", "speech_check"):
                records.append(d)
            continue
        about = d.get("about") or {}
        row = call_row(d, offset, game if source != "analysis" else _word(about.get("game")), source)
        if source == "game":
            records.append({"type": "llm_call", "_row": len(rows)})
        rows.append(row)
    if source == "game" and rows:
        _link(records, rows)
    return rows


def entries(game: Path) -> list[int]:
    """The entry (from 1) in the game page's timeline (view.game.timeline, as the page draws it: `#e-N`) of each of
    the game's LLM calls, in trace order."""
    from avalon_agents.core.events import EVENT_ADAPTER
    from avalon_agents.view.game.timeline import timeline

    events = [EVENT_ADAPTER.dump_python(e, mode="json") for e in read_events(game)]
    records, calls = [], 0
    for _, line in jsonl_lines(game / TRACE):
        try:
            record = TRACE_ADAPTER.validate_json(line)
        except ValueError:
            continue  # a line being written
        if record.type == "llm_call":
            records.append({"type": "llm_call", "seat": record.seat, "_call": calls})
            calls += 1
        else:
            records.append(record.model_dump(mode="json"))
    found = [0] * calls
    for i, item in enumerate(timeline(events, records)):
        if "_call" in item:
            found[item["_call"]] = i + 1
    return found


def _link(records: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """Each call with a request -> the decision it served: its seat's next extraction (a speech: speech check) of
    the same kind, quest and attempt; the calls of a purpose after its first one for a decision are re-asks."""
    waiting: dict[Any, list[int]] = {}
    for r in records:
        if r["type"] == "llm_call":
            row = rows[r["_row"]]
            if row["request"] is not None:
                waiting.setdefault(row["seat"], []).append(r["_row"])
            continue
        kind = _word(r.get("kind")) if r["type"] == "extraction" else "speak"
        seat, quest, attempt = r.get("seat"), r.get("quest"), r.get("attempt")
        mine, rest = [], []
        for k in waiting.get(seat, []):
            row = rows[k]
            same = row["request"] == kind and row["quest"] in (None, quest) and row["attempt"] in (None, attempt)
            (mine if same else rest).append(k)
        waiting[seat] = rest
        seen: set[tuple] = set()
        for k in mine:
            row = rows[k]
            purpose = (row["stage"], row["name"], row["part"])
            row.update(decision=kind, reask=purpose in seen)
            seen.add(purpose)
            if r["type"] == "extraction":
                row.update(method=_word(r.get("method")), valid=int(bool(r.get("valid"))),
                           answers=r.get("answers") or 1, fallback=r.get("method") == "fallback")
            else:
                row.update(valid=int(not r.get("echo")), answers=2 if r.get("reasked") else 1)


# the query


@dataclass
class Query:
    """What a Calls page asks: its filters, paging and order."""

    filters: dict[str, Any]
    offset: int = 0
    limit: int = DEFAULT_LIMIT
    sort: str = ""

    def params(self) -> dict[str, Any]:
        """The address's parameters (the defaults left out)."""
        out = {k: v for k, v in self.filters.items() if v not in (None, "")}
        if self.offset:
            out["offset"] = self.offset
        if self.limit != DEFAULT_LIMIT:
            out["limit"] = self.limit
        if self.sort:
            out["sort"] = self.sort
        return out


def parse_query(query: dict[str, Any], limit: int = DEFAULT_LIMIT) -> Query:
    """A page's query parameters. Raises Refused (400) naming the bad parameter."""
    known = set(FILTERS) | {"offset", "limit", "sort", "token"}
    unknown = sorted(set(query) - known)
    if unknown:
        takes = ", ".join(sorted(known - {"token"}))
        raise Refused(400, f"{unknown[0]}: no such parameter (the Calls page takes {takes})")
    filters: dict[str, Any] = {}
    for name in FILTERS:
        value = str(query.get(name, "")).strip()
        if name in ("seat", "step"):
            filters[name] = _int(name, value, 0) if value else None
        else:
            filters[name] = value
    if filters["flag"] and filters["flag"] not in FLAGS:
        raise Refused(400, f"flag: {filters['flag']!r} is none of {', '.join(FLAGS)}")
    if filters["stage"] and filters["stage"] not in get_args(Stage):
        raise Refused(400, f"stage: {filters['stage']!r} is none of {', '.join(get_args(Stage))}")
    sort = str(query.get("sort", "")).strip()
    if sort not in ORDERS:
        raise Refused(400, f"sort: {sort!r} is none of run order (empty), {', '.join(o for o in ORDERS if o)}")
    offset = _int("offset", str(query.get("offset", "0")).strip() or "0", 0)
    size = _int("limit", str(query.get("limit", limit)).strip() or str(limit), 1)
    if size > max(MAX_LIMIT, limit):
        raise Refused(400, f"limit: {size} is over {MAX_LIMIT}")
    return Query(filters, offset, size, sort)


def _int(name: str, value: str, least: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise Refused(400, f"{name}: {value[:40]!r} is not a whole number") from None
    if number < least:
        raise Refused(400, f"{name}: {number} is below {least}")
    return number


def matches(calls: RunCalls, query: Query) -> np.ndarray:
    """The indices of the run's calls the query's filters keep, in its order (kept for the next pages)."""
    key = (tuple(sorted(query.filters.items())), query.sort)
    if key in calls.found:
        calls.found.move_to_end(key)
        return calls.found[key]
    c, f = calls.columns, query.filters
    mask = np.ones(calls.size, dtype=bool)
    for name in ("seat", "step"):
        if f[name] is not None:
            mask &= c[name] == f[name]
    for name in ("module", "model", "game", "stage"):
        if f[name]:
            mask &= c[name] == f[name]
    if f["flag"] in ("reask", "fallback"):
        mask &= c[f["flag"]]
    elif f["flag"]:
        mask &= c["outcome"] == f["flag"]
    found = np.flatnonzero(mask)
    if f["q"]:
        found = search(calls, found, f["q"])
    if query.sort:
        column = ORDERS[query.sort]
        values = (c["input_tokens"] + c["output_tokens"] if column == "tokens" else np.nan_to_num(c[column], nan=-1))
        found = found[np.argsort(-values[found], kind="stable")]
    calls.found[key] = found
    while len(calls.found) > TEXT_CACHE:
        calls.found.popitem(last=False)
    return found


def call_lines(calls: RunCalls, indices) -> Any:
    """(index, whole record: its messages and reply) of each of the run's calls `indices` (ascending: each file is
    opened once and read forward)."""
    indices = [int(i) for i in indices]
    places = ((calls.files[int(calls.columns["file"][i])], int(calls.columns["offset"][i])) for i in indices)
    yield from zip(indices, lines_at(places))


def search(calls: RunCalls, found: np.ndarray, q: str) -> np.ndarray:
    """Of the calls `found`, those whose messages, reply or error hold `q` (any case)."""
    q = q.lower()
    literal = q.isascii() and not any(ch in q for ch in '"\\/') and q.isprintable()
    raw = q.encode() if literal else None  # then a line without it (any ASCII case) cannot hold it
    keep = []
    for i, line in call_lines(calls, found):
        if raw is not None and raw not in line.lower():
            continue
        d = line_dict(line)
        texts = [m.get("content") or "" for m in d.get("messages") or ()] + [d.get("reply") or "", d.get("error") or ""]
        if any(q in t.lower() for t in texts):
            keep.append(i)
    return np.array(keep, dtype=np.int64)


def page(calls: RunCalls, query: Query, link, entry) -> dict[str, Any]:
    """The page's calls (`entry(i)`: call i's entry in its game's replay; `link(game, entry)` its address there) with
    their texts: each distinct message content once in `texts` (a system prompt goes with every call of its seat),
    messages naming theirs; and the tokens, seconds and dollars of all the calls the filters keep."""
    found = matches(calls, query)
    shown = found[query.offset:query.offset + query.limit]
    c = calls.columns
    texts: dict[str, int] = {}
    out = {}
    for i, line in call_lines(calls, sorted(int(i) for i in shown)):
        d = line_dict(line)
        row = {name: _plain(name, c[name][i]) for name in COLUMNS if name != "offset"}
        at = entry(i)
        row.update(n=i + 1, entry=at, error=d.get("error"), reply=d.get("reply"),
                   messages=[{"role": m.get("role"), "text": texts.setdefault(m.get("content") or "", len(texts))}
                             for m in d.get("messages") or ()],
                   link=link(row["game"], at) if row["game"] else None)
        out[i] = row
    usd = c["usd"][found]
    return {"total": int(len(found)), "offset": query.offset, "limit": query.limit,
            "calls": [out[int(i)] for i in shown],
            "texts": list(texts),
            "sums": {"input_tokens": int(c["input_tokens"][found].sum()),
                     "output_tokens": int(c["output_tokens"][found].sum()),
                     "latency_s": round(float(c["latency_s"][found].sum()), 3),
                     "usd": float(np.nansum(usd)), "unpriced": int(np.isnan(usd).sum())}}


NULLS = {"seat": NONE_INT, "step": NONE_INT, "quest": NONE_INT, "attempt": NONE_INT, "valid": NONE_INT, "answers": 0}
"""The columns whose value stands for None."""


def _plain(name: str, value: Any) -> Any:
    value = value.item() if isinstance(value, np.generic) else value
    if name in NULLS:
        return None if value == NULLS[name] else (bool(value) if name == "valid" else value)
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def options(calls: RunCalls, prices: Prices) -> dict[str, Any]:
    """What each filter can take in this run (seats, steps: least and most, modules, models, games, stages, flags,
    orders) and the models without a price (their calls' dollars are unknown). Computed once per change."""
    if calls.choices is None:
        c = calls.columns

        def distinct(name: str) -> list:
            return sorted(v for v in set(c[name].tolist()) if v is not None)

        steps = c["step"][c["step"] != NONE_INT]
        models = distinct("model")
        calls.choices = {
            "seats": [int(s) for s in np.unique(c["seat"]) if s != NONE_INT],
            "steps": [int(steps.min()), int(steps.max())] if len(steps) else [], "modules": distinct("module"),
            "models": models, "games": distinct("game"), "stages": distinct("stage"), "flags": list(FLAGS),
            "sorts": [o for o in ORDERS if o], "unpriced_models": [m for m in models if prices.price(m) is None]}
    return calls.choices


def api_address(base: str | None, query: Query) -> str | None:
    """The page's JSON address with its query (None in an export)."""
    if base is None:
        return None
    params = query.params()
    return base + (("&" if "?" in base else "?") + urlencode(params) if params else "")
