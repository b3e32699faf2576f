"""User mistakes as one line: the pydantic-error formatter and the YAML reader every config uses (with limits:
no duplicate keys, bounded depth and aliases)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticCustomError


class Unusable(RuntimeError):
    """A run that cannot go on, though nothing in its input is wrong (a model that answers nothing usable, a dead
    worker): the command says so in one line and exits 3."""


def near(name: object, known: Iterable[object], cutoff: float = 0.75) -> str | None:
    """The one of `known` that `name` is a near spelling of (another case, a letter off or swapped), or None."""
    spelled = {str(k).lower(): str(k) for k in known}
    match = difflib.get_close_matches(str(name).lower(), spelled, n=1, cutoff=cutoff)
    return spelled[match[0]] if match else None


def did_you_mean(name: object, known: Iterable[object]) -> str:
    """" (did you mean X?)" when `name` is a near spelling of X in `known`, else ""."""
    match = near(name, known)
    return f" (did you mean {match}?)" if match is not None else ""


UNKNOWN_KEY = "unknown_key"
"""The pydantic error type of `unknown_key` (field_error names the key as the field)."""


def unknown_key(key: object, known: Iterable[object]) -> PydanticCustomError:
    """The error for a mapping's `key` that none of `known` is, naming the near spelling if there is one: raise it
    in a validator (field_error prints "path.key: unknown key (did you mean known?)")."""
    return PydanticCustomError(UNKNOWN_KEY, "{key}: unknown key{hint}", {"key": str(key),
                                                                           "hint": did_you_mean(key, known)})


def field_path(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc)


def error_path(err: Any) -> tuple[Any, ...]:
    """A pydantic error's `loc` as the path in the user's input: without the members of a union pydantic names
    ("list[str-enum[Role]]", "function-after[...]"), which are no key of it."""
    return tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p and p.endswith("]") and p != "[key]"))


def field_error(exc: ValidationError, prefix: tuple[Any, ...] = ()) -> str:
    """The first error of `exc` as "field.path: message" (validators' own messages keep the field they name)."""
    err = exc.errors()[0]
    loc = error_path(err)
    if err["type"] == UNKNOWN_KEY:  # a mapping's key no field has: the key is the field
        return f"{field_path(prefix + loc + (err['ctx']['key'],))}: unknown key{err['ctx']['hint']}"
    if loc[-1:] == ("[key]",):  # a mapping's key is refused: the mapping is the field, the message quotes the key
        loc = loc[:-2]
    field = field_path(prefix + loc)
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = "unknown key"
    if err["type"] == "missing":
        message = "required, not given"
    if not field or message.split(":")[0].split(".")[0] == field.split(".")[0] and ":" in message:
        return message
    return f"{field}: {message}"


MAX_DEPTH = 64
"""The deepest nesting of lists and mappings a YAML file may have (aliases counted where they are used)."""
MAX_ALIASES = 1_000
"""The most aliases (`*name`) a YAML file may use."""
MAX_VALUES = 100_000
"""The most values a YAML file may hold once its aliases are expanded (a "billion laughs" file holds billions)."""


def _limits_loader() -> type:
    """A SafeLoader that refuses duplicate keys, nesting deeper than MAX_DEPTH and more than MAX_ALIASES aliases
    (PyYAML has no such limits: a deep file ends in a RecursionError, an alias bomb expands downstream)."""
    import yaml
    from yaml.nodes import ScalarNode

    class Refused(yaml.MarkedYAMLError):
        pass

    class Loader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.depth = 0
            self.aliases = 0

        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > MAX_ALIASES:
                    raise Refused(None, None, f"more than {MAX_ALIASES:,} aliases", event.start_mark)
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise Refused(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def compose_mapping_node(self, anchor):
            node = super().compose_mapping_node(anchor)
            first: dict[Any, int] = {}
            for key, _ in node.value:
                if not isinstance(key, ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                    continue
                try:
                    value = self.construct_object(key)
                    seen = first.get(value)
                except TypeError:  # an unhashable key: the constructor names it
                    continue
                if seen is not None:
                    raise Refused(None, None, f"duplicate key {value!r}, first on line {seen}", key.start_mark)
                first[value] = key.start_mark.line + 1
            return node

        def get_single_node(self):
            node = super().get_single_node()
            if node is not None:
                _expanded(node, Refused)
            return node

    return Loader


def _expanded(root: Any, refused: type) -> None:
    """Raise `refused` if the node graph, aliases expanded, is deeper than MAX_DEPTH, holds more than MAX_VALUES
    values, or contains itself (a recursive alias)."""
    from yaml.nodes import MappingNode, SequenceNode

    sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (values, height), aliases expanded
    active: set[int] = set()

    def walk(node: Any, depth: int) -> tuple[int, int]:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in active or depth > MAX_DEPTH:
            problem = "an alias that contains itself" if id(node) in active else \
                f"nested deeper than {MAX_DEPTH} levels once its aliases are expanded"
            raise refused(None, None, problem, node.start_mark)
        if isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, SequenceNode):
            children = list(node.value)
        else:
            children = []
        active.add(id(node))
        values, height = 1, 1
        for child in children:
            v, h = walk(child, depth + 1)
            values, height = values + v, max(height, h + 1)
            if values > MAX_VALUES:
                raise refused(None, None, f"more than {MAX_VALUES:,} values once its aliases are expanded",
                              node.start_mark)
        active.discard(id(node))
        sizes[id(node)] = (values, height)
        return values, height

    walk(root, 1)


def parse_yaml(text: str, source: str) -> tuple[Any, Any]:
    """The YAML document in `text` and its node (for line numbers; None for an empty document), read safely:
    duplicate keys, nesting deeper than MAX_DEPTH, more than MAX_ALIASES aliases or MAX_VALUES values once
    expanded are errors. Raises ValueError "SOURCE:LINE: not valid YAML (problem)". Every YAML the user gives
    is read here."""
    import yaml

    loader = _limits_loader()(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        raise ValueError(f"{where}: not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    except RecursionError:  # a construct PyYAML recurses on beyond the limits above
        raise ValueError(f"{source}: not valid YAML (nested too deeply)") from None
    finally:
        loader.dispose()
    return data, node


def load_yaml(path: Path, what: str) -> Any:
    """The YAML at `path` (read by parse_yaml). Raises ValueError naming `what` and the file (and the line of a
    syntax error or of a refused construct)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ValueError(f"{what}: cannot read {path} ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{what}: {path} is not text (UTF-8)") from None
    try:
        return parse_yaml(text, str(path))[0]
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
