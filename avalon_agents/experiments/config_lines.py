"""Where in a config file a value is written: the line of a field (under a variant's own entry before the base's),
and a config's error in one line, "PATH:LINE (variant V): field: message" (`config_error`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from avalon_agents.errors import UNKNOWN_KEY, error_path, field_error


def _entry(node: yaml.Node | None, key: Any) -> tuple[int, yaml.Node] | None:
    """(line, node) of `key` in a mapping (on its key's line: a block mapping's value starts on the next one) or
    of item `key` of a list; None where there is none."""
    if isinstance(node, yaml.MappingNode):
        return next(((k.start_mark.line + 1, v) for k, v in node.value
                     if isinstance(k, yaml.ScalarNode) and k.value == str(key)), None)
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
        return node.value[key].start_mark.line + 1, node.value[key]
    return None


def _reach(node: yaml.Node | None, loc: tuple) -> tuple[int | None, int]:
    """(line, keys of `loc` found) of the deepest node along `loc`."""
    line, found = (node.start_mark.line + 1 if node else None), 0
    for key in loc:
        entry = _entry(node, key)
        if entry is None:
            break
        (line, node), found = entry, found + 1
    return line, found


def _node_at(node: yaml.Node | None, path: tuple) -> yaml.Node | None:
    for key in path:
        entry = _entry(node, key)
        node = entry[1] if entry else None
    return node


Root = tuple[tuple, tuple]
"""Where part of the merged config is written in the file: (its path in the file, the config path it sets)."""
BASE: tuple[Root, ...] = (((), ()),)


def line_of(node: yaml.Node | None, loc: tuple, roots: tuple[Root, ...] = BASE) -> int | None:
    """The 1-based line of `loc` (or of its nearest parent that exists), under whichever of `roots` holds the
    deepest part of it (a variant's entry, a grid's key, the base), the first on a tie."""
    best: tuple[int | None, int] = (node.start_mark.line + 1 if node else None, -1)
    for in_file, sets in roots:
        if tuple(map(str, loc[:len(sets)])) != tuple(map(str, sets)):
            continue
        under = _node_at(node, in_file)
        line, found = _reach(under, loc[len(sets):])
        counts = found or sets or not in_file  # a variant's entry only where it sets part of `loc`
        if under is not None and counts and found + len(sets) > best[1]:
            best = (line, found + len(sets))
    return best[0]


def error_loc(exc: ValidationError) -> tuple:
    """Where a config's first error is: the field path pydantic gives, the unknown key itself, and below it, for
    a check across fields, the field its message names ("sides.evil: no agent named ...", "modules: agent kind
    'llm' has no modules"; the line is the deepest of them the file has)."""
    err = exc.errors()[0]
    loc = error_path(err)
    if err["type"] == UNKNOWN_KEY:
        return loc + (err["ctx"]["key"],)
    if loc[-1:] == ("[key]",):
        return loc[:-2]
    if err["type"] == "value_error":
        named = err["msg"].removeprefix("Value error, ").split(":")[0]
        if named and " " not in named:
            loc += tuple(int(p) if p.isdigit() else p for p in named.split("."))
    return loc


def config_error(exc: Exception, path: Path, node: yaml.Node | None, variant: str | None = None,
                 roots: tuple[Root, ...] = BASE) -> ValueError:
    """`exc` (a config's ValidationError or ValueError) in one line: "PATH:LINE (variant V): field: message", the
    line the field's (looked for under `roots`: a variant's own entry before the base's; a missing key's: the
    mapping that lacks it, none for the file's top)."""
    missing = isinstance(exc, ValidationError) and exc.errors()[0]["type"] == "missing"
    if isinstance(exc, ValidationError):
        loc, message = error_loc(exc), field_error(exc)
    else:
        message = str(exc)
        named = message.split(":")[0]
        loc = getattr(exc, "loc", None) or (tuple(named.split(".")) if " " not in named else ())
    if missing:  # on the line of the mapping that lacks the key; the file's top is no place of it
        line = line_of(node, loc[:-1], roots) if loc[:-1] else None
    else:
        line = line_of(node, loc, roots)
    where = f"{path}:{line}" if line else str(path)
    return ValueError(f"{where}{f' (variant {variant})' if variant else ''}: {message}")
