"""A run's tables, columnar: the copy `analysis.load` keeps of the tables it built, so a big run reads in seconds.

    FOLDER/.tables/part-00000003-1a2b3c4d.npz    # one part: some games' rows of every table

A part is one numpy archive (`np.savez`, uncompressed; read with `allow_pickle=False`: a run from elsewhere cannot
run code): `manifest` (JSON: VERSION, the reader's `schema`, each game's name and stamp (its files' times and sizes),
each table's columns with their dtypes and each object column's distinct values) and one array per column. A
number or bool column is its numpy array; a `str` or object column is codes into its distinct values (stored in
the manifest as tagged JSON that keeps each value's Python type: a tuple stays a tuple, True is not 1, None is not
NaN), so a column of 1.2 million cells holding a few dozen values reads as one `take`. A value of another type
(a numpy scalar in an object column, a set...) is not stored: `write` returns None and the caller reads the games.

Who writes: `analysis.load.load_run`, when it has read games that no part holds (a first read, games finished
since): one new part of those games. Several processes may read and write one run at once (`avalon view`'s threads,
`avalon analyze`, the run itself): a part is written to a temporary file and renamed into place, so a reader sees
a whole part or none (a temporary file a killed writer left is removed by a later write, after ABANDONED); a part
that vanishes while read (merged by another process) raises FileNotFoundError and the loader lists again; of two
parts holding one game (a merge and what it merged, or two readers' parts), the newer (`seq`) is read. A part of
another VERSION or schema is refused (`parts` lists it as `stale`; the loader removes it after writing what
replaces it), and so is one `read` cannot decode (Unreadable).

Nothing outside records/ names these files (`FOLDER` and the part names are here alone).
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FOLDER = ".tables"
"""A loaded folder's columnar copy (a dot folder: the run's walk does not look into it)."""
VERSION = 1
"""The parts' format; a part of another version is not read (it is replaced)."""
MANIFEST = "manifest"
_PART = re.compile(r"^part-(\d{8})-([0-9a-f]{8})\.npz$")
_NUMBERS = {"int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "float64", "float32", "bool"}


class Unstorable(ValueError):
    """A cell of a type the parts do not hold (the games are read instead)."""


class Unreadable(ValueError):
    """A part that is not one this code wrote (damaged, or of an unknown shape): replaced like a stale one."""


@dataclass(frozen=True)
class Part:
    """One part on disk: its file, order (`seq`, newer is larger), games (name -> the stamp the writer gave it: the
    loader's, its files' times and sizes) and whether it is of this VERSION and the reader's schema (`stale`: not)."""

    path: Path
    seq: int
    games: dict[str, tuple[int, ...] | None]
    stale: bool


def folder(root: Path) -> Path:
    return Path(root) / FOLDER


def parts(root: Path, schema: str) -> list[Part]:
    """The parts of `root`'s copy, oldest first (an unreadable one: stale). A part gone while listed is left out."""
    found = []
    try:
        names = sorted(os.listdir(folder(root)))
    except OSError:
        return []
    for name in names:
        m = _PART.match(name)
        if not m:
            continue
        path = folder(root) / name
        try:
            manifest = _manifest(path)
        except FileNotFoundError:
            continue
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            manifest = None
        fresh = manifest is not None and manifest.get("version") == VERSION and manifest.get("schema") == schema
        games = {g: (tuple(s) if s is not None else None) for g, s in manifest["games"]} if fresh else {}
        found.append(Part(path, int(m.group(1)), games, not fresh))
    return sorted(found, key=lambda p: (p.seq, p.path.name))


def _manifest(path: Path) -> dict[str, Any]:
    with np.load(path, allow_pickle=False) as archive:
        return json.loads(archive[MANIFEST].tobytes().decode())


def read(part: Part) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A part's tables ({table: DataFrame}) and the `firsts` written with them (None: none). Each column of its
    dtype as written (a `str` column a pandas string array, an object column's cells Python objects), built block by
    block without copying a column. Raises FileNotFoundError when the part is gone (merged by another process),
    Unreadable when it cannot be read."""
    try:
        return _read(part)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, IndexError, TypeError, zipfile.BadZipFile) as exc:
        raise Unreadable(f"{part.path}: {type(exc).__name__}: {exc}") from None


def _read(part: Part) -> tuple[dict[str, Any], dict[str, Any] | None]:
    import pandas as pd
    from pandas.api.internals import create_dataframe_from_blocks

    with np.load(part.path, allow_pickle=False) as archive:
        manifest = json.loads(archive[MANIFEST].tobytes().decode())
        tables = {}
        for t, (name, table) in enumerate(manifest["tables"].items()):
            rows, dtypes, values = table["rows"], table["dtypes"], table["values"]
            objects = [c for c, dtype in enumerate(dtypes) if dtype == "object"]
            blocks: list[tuple[Any, np.ndarray]] = []
            if objects:  # every object column in one block, each filled in place
                block = np.empty((len(objects), rows), dtype=object)
                for row, c in enumerate(objects):
                    np.take(_uniques(values[c]), archive[f"{t}.{c}"], out=block[row], mode="clip")
                blocks.append((block, np.array(objects)))
            for c, dtype in enumerate(dtypes):
                if dtype == "object":
                    continue
                data = archive[f"{t}.{c}"]
                if values[c] is None:
                    blocks.append((data.reshape(1, -1), np.array([c])))
                else:
                    blocks.append((_strings(_uniques(values[c]).take(data), dtype), np.array([c])))
            tables[name] = create_dataframe_from_blocks(blocks, index=pd.RangeIndex(rows),
                                                        columns=pd.Index(table["columns"]))
    return tables, manifest.get("firsts")


def _uniques(values: list) -> np.ndarray:
    uniques = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        uniques[i] = _decode(v)
    return uniques


def _strings(cells: np.ndarray, dtype: str) -> Any:
    """A pandas string array of `cells` (str or NaN, as its distinct values were written: checked then, so the
    array of pandas' own Python storage takes them as they are)."""
    import pandas as pd

    kind = pd.api.types.pandas_dtype(dtype)
    if getattr(kind, "storage", None) == "python" and kind.construct_array_type() is pd.arrays.StringArray:
        return pd.arrays.StringArray._simple_new(cells, kind)
    return pd.array(cells, dtype=kind)


def write(root: Path, schema: str, games: dict[str, tuple[int, ...] | None], tables: dict[str, Any],
          firsts: dict[str, Any] | None = None) -> Part | None:
    """A new part of `games` (name -> its stamp) holding `tables` (name -> DataFrame, a RangeIndex each) and the
    writer's `firsts` (JSON, given back by `read`), written whole or not at all. None (nothing written) when a cell
    cannot be stored (Unstorable) or the folder is not writable."""
    import pandas as pd

    try:
        manifest: dict[str, Any] = {"version": VERSION, "schema": schema,
                                    "games": [[g, list(s) if s is not None else None] for g, s in games.items()],
                                    "firsts": firsts, "tables": {}}
        arrays: dict[str, np.ndarray] = {}
        for t, (name, frame) in enumerate(tables.items()):
            described = manifest["tables"][name] = {"rows": len(frame), "columns": [], "dtypes": [], "values": []}
            if not frame.index.equals(pd.RangeIndex(len(frame))):
                raise Unstorable("an index other than 0 to n")
            for c, column in enumerate(frame.columns):
                dtype = str(frame[column].dtype)
                values, data = _encoded(frame[column], dtype)
                described["columns"].append(str(column))
                described["dtypes"].append(dtype)
                described["values"].append(values)
                arrays[f"{t}.{c}"] = data
    except Unstorable:
        return None
    text = json.dumps(manifest, allow_nan=True)
    try:
        target = folder(root)
        target.mkdir(exist_ok=True)
        seq = max((p.seq for p in parts(root, schema)), default=0) + 1
        path = target / f"part-{seq:08d}-{secrets.token_hex(4)}.npz"
        tmp = target / f".part-{secrets.token_hex(8)}.tmp"  # opened as any new file: the umask's permissions
        try:
            with open(tmp, "xb") as f:
                np.savez(f, **{MANIFEST: np.frombuffer(text.encode(), dtype=np.uint8)}, **arrays)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _sweep(target)
    except OSError:
        return None
    return Part(path, seq, dict(games), False)


ABANDONED = 3600
"""Seconds after which a temporary part is a killed writer's, removed by the next write."""


def _sweep(target: Path) -> None:
    """Remove the temporary files of writers killed mid-write (older than ABANDONED)."""
    now = time.time()
    for leftover in target.glob(".part-*.tmp"):
        try:
            if now - leftover.stat().st_mtime > ABANDONED:
                leftover.unlink()
        except OSError:
            continue


def remove(gone: list[Part]) -> None:
    """Delete parts (one already gone, or not deletable, is left)."""
    for part in gone:
        try:
            part.path.unlink(missing_ok=True)
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------- cells


def _encoded(series: Any, dtype: str) -> tuple[list | None, np.ndarray]:
    """(distinct values as tagged JSON, codes) of a str or object column; (None, the array) of a number column."""
    import pandas as pd

    if dtype in _NUMBERS:
        return None, series.to_numpy()
    if dtype not in ("str", "object"):
        raise Unstorable(dtype)
    cells = series.to_numpy(dtype=object)
    if dtype == "str":  # strings and NaN: hashed by pandas
        codes, uniques = pd.factorize(cells, use_na_sentinel=False)
        return [_encode(u) for u in uniques], _narrow(codes, len(uniques))
    missing = pd.isna(cells)
    index: dict[Any, int] = {}
    values: list = []
    codes = np.empty(len(cells), dtype=np.int64)

    def code(k: Any, v: Any) -> int:
        found = index.get(k)
        if found is None:
            found = index[k] = len(values)
            values.append(_encode(v))
        return found

    gaps = np.flatnonzero(missing)
    nones = np.asarray(cells[gaps] == None, dtype=bool)  # noqa: E711 (each cell compared)
    if not set(map(type, cells[gaps[~nones]])) <= {float}:
        raise Unstorable("a missing value that is neither None nor NaN")
    if nones.any():
        codes[gaps[nones]] = code(("NoneType", None), None)
    if not nones.all():
        codes[gaps[~nones]] = code(("float", "nan"), float("nan"))
    rest = np.flatnonzero(~missing)
    codes[rest] = [code(_key(v), v) for v in cells[rest].tolist()]
    return values, _narrow(codes, len(values))


def _narrow(codes: np.ndarray, count: int) -> np.ndarray:
    return codes.astype(np.uint8 if count <= 2**8 else np.uint16 if count <= 2**16 else np.uint32)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _key(v: Any) -> Any:
    """A hashable key telling apart what == does not: True and 1, 1 and 1.0, a list and a tuple; NaN is NaN."""
    t = type(v)
    if t is str:
        return v
    if t is float:
        return ("float", "nan") if math.isnan(v) else ("float", v.hex())  # -0.0 is not 0.0
    if t in (int, bool) or v is None:
        return (t.__name__, v)
    if t is list or t is tuple:
        types = tuple(map(type, v))
        if _SCALARS.issuperset(types):  # a list of seats: its items and their types
            return (t.__name__, tuple(v), types)
    return ("json", json.dumps(_encode(v), allow_nan=True))


def _encode(v: Any) -> Any:
    """A cell as JSON that decodes to the same Python value and type (containers tagged: {"t": tuple},
    {"d": [[key, value], ...]}; a list is a JSON array). Raises Unstorable for another type."""
    t = type(v)
    if v is None or t in (str, int, float, bool):
        return v
    if t is list:
        return [_encode(x) for x in v]
    if t is tuple:
        return {"t": [_encode(x) for x in v]}
    if t is dict:
        return {"d": [[_encode(k), _encode(x)] for k, x in v.items()]}
    raise Unstorable(t.__name__)


def _decode(v: Any) -> Any:
    if type(v) is list:
        return [_decode(x) for x in v]
    if type(v) is dict:
        if "t" in v:
            return tuple(_decode(x) for x in v["t"])
        return {_decode(k): _decode(x) for k, x in v["d"]}
    return v
