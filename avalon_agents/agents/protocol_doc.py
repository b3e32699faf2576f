"""The parts of docs/seats.md written from the code, so the documentation of the seat protocol cannot drift from it:
every event type's fields (from the event union of core/events.py, as its TypeAdapter serializes them), the fields
of `start`'s `setup` (from core/rules.RuleSet and agents.protocol.setup), of `end`'s `result` (core/events.GameResult
and its quests') and an example `start` message.

Each part is a block between `<!-- BEGIN name -->` and `<!-- END name -->` lines; `python -m
avalon_agents.agents.protocol_doc [docs/seats.md]` writes them, and a test fails while the file holds another text.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from avalon_agents.agents import protocol
from avalon_agents.core.events import EVENT_ADAPTER, GameEvent, GameResult, GameStarted, QuestOutcome, RoleAssigned
from avalon_agents.core.rules import RuleSet, make_rules
from avalon_agents.core.types import Role

IN_START = {GameStarted: "`start` carries it: `setup` (the rules), `players`", RoleAssigned: "`start` carries it: "
            "`role`"}
"""The events a program never gets as `event` messages: its `start` says what they say."""


def attribute_docs(cls: type) -> dict[str, str]:
    """The docstring under each annotated attribute of a class and its bases (`name: type` then a string)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__ == "builtins" or klass.__module__.startswith("pydantic"):
            continue
        try:
            body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        except (OSError, TypeError):
            continue
        for node, after in zip(body, body[1:]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
                docs[node.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return docs


def type_of(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    """A JSON schema's type in words: `integer`, `list of integer`, `"a" or "b"`, ..."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        found = defs[name]
        return type_of(found, defs) if "enum" in found else f"object ({name})"
    if "const" in schema:
        return f'`"{schema["const"]}"`'
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(type_of(s, defs) for s in schema["anyOf"])
    kind = schema.get("type")
    if kind == "array" and "prefixItems" in schema:  # a tuple of a fixed length
        items = {type_of(s, defs) for s in schema["prefixItems"]}
        return _list(items.pop(), len(schema["prefixItems"])) if len(items) == 1 else "list"
    if kind == "array":
        return _list(type_of(schema.get("items", {}), defs))
    if kind == "object" and "additionalProperties" in schema:
        return f"object: seat number (as a string) → {type_of(schema['additionalProperties'], defs)}"
    return kind or "any"


def _list(item: str, length: int | None = None) -> str:
    count = f"{length} " if length else ""
    return f"list of {count}{item}s" if item.isalpha() else f"list of {count}items, each {item}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(rows: list[tuple[str, str, str]]) -> list[str]:
    return ["| field | type | meaning |", "|---|---|---|",
            *(f"| `{name}` | {_cell(kind)} | {_cell(meaning)} |" for name, kind, meaning in rows)]


def events_markdown() -> str:
    """Every event type of the event union, in its order: its `type`, what it is, and its own fields; the fields
    every event has first."""
    schema = EVENT_ADAPTER.json_schema(mode="serialization")
    defs = schema["$defs"]
    types = _union_members()
    props = {t: defs[t.__name__]["properties"] for t in types}
    common = [name for name in props[types[0]] if all(name in p for p in props.values()) and name != "type"]
    docs = attribute_docs(types[0])
    lines = ["Every event has these fields, and `type`, which names it:", "",
             *_table([(name, type_of(props[types[0]][name], defs), docs.get(name, "")) for name in common])]
    for t in types:
        own = [name for name in props[t] if name not in common and name != "type"]
        docs = attribute_docs(t)
        lines += ["", f"#### `{props[t]['type']['const']}`", ""]
        if t.__doc__ and not t.__doc__.startswith(f"{t.__name__}("):  # not the dataclass's own signature
            lines += [" ".join(inspect.cleandoc(t.__doc__).split()), ""]
        if t in IN_START:
            lines += [f"Never sent to a program as an event: {IN_START[t]}.", ""]
        lines += _table([(name, type_of(props[t][name], defs), docs.get(name, "")) for name in own])
    return "\n".join(lines)


def _union_members() -> list[type]:
    """The event classes of the GameEvent union, in its order."""
    return list(get_args(get_args(GameEvent)[0]))


def setup_markdown() -> str:
    """Each field of `start`'s `setup`: the RuleSet's as meta.json records them, and those the protocol resolves."""
    schema = RuleSet.model_json_schema(mode="serialization")
    defs, props, docs = schema.get("$defs", {}), schema["properties"], attribute_docs(RuleSet)
    rows = []
    for name in protocol.setup(make_rules("official", 7)):
        if name in protocol.SETUP_RESOLVED:
            rows.append((name, *protocol.SETUP_RESOLVED[name]))
        elif name in docs:
            rows.append((name, type_of(props[name], defs), docs[name]))
        else:
            raise ValueError(f"RuleSet.{name} has no docstring: say under the field what it means (docs/seats.md)")
    return "\n".join(_table(rows))


def result_markdown() -> str:
    """Each field of `end`'s `result` (result.json's object), then each field of an item of its `quests`."""
    schema = GameResult.model_json_schema(mode="serialization")
    defs = schema.get("$defs", {})
    lines = _fields(GameResult, schema["properties"], defs)
    lines += ["", "Each item of `quests`:", "", *_fields(QuestOutcome, defs["QuestOutcome"]["properties"], defs)]
    return "\n".join(lines)


def _fields(cls: type, props: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    """The field table of a model; ValueError naming a field with no docstring."""
    docs = attribute_docs(cls)
    missing = [name for name in props if name not in docs]
    if missing:
        raise ValueError(f"{cls.__name__}.{missing[0]} has no docstring: say under the field what it means "
                         "(docs/seats.md)")
    return _table([(name, type_of(props[name], defs), docs[name]) for name in props])


def start_example() -> str:
    """A `start` message, as a program reads it (spread over lines here; the system prompt cut short)."""
    message = protocol.start("3f9a2c1b7d4e/main/series-1/game-00001", 3, Role.PERCIVAL, make_rules("official", 6),
                             "You are playing Avalon ... (the rules and the seat's role card)")
    setup = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in message.pop("setup").items())
    head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in message.items() if k != "system")
    return (f"```json\n{{\n{head},\n  \"setup\": {{\n{setup}\n  }},\n  \"system\": "
            f"{json.dumps(message['system'])}\n}}\n```")


BLOCKS: dict[str, Callable[[], str]] = {"events": events_markdown, "setup": setup_markdown, "end": result_markdown,
                                        "start-example": start_example}
"""Each block of docs/seats.md written from the code, by name."""


def _block(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- BEGIN {re.escape(name)} [^\n]*-->\n)(?:.*?\n)?(<!-- END {re.escape(name)} -->)", re.S)


def written(text: str) -> str:
    """`text` with every block written afresh; ValueError naming a block whose markers are missing."""
    for name, make in BLOCKS.items():
        pattern = _block(name)
        if not pattern.search(text):
            raise ValueError(f"no <!-- BEGIN {name} ... --> ... <!-- END {name} --> block")
        text = pattern.sub(lambda m, body=make(): f"{m.group(1)}{body}\n{m.group(2)}", text)
    return text


def main(argv: list[str]) -> str:
    """Write the generated blocks into the doc (default docs/seats.md); what was done, in words."""
    path = Path(argv[0] if argv else "docs/seats.md")
    text = path.read_text()
    new = written(text)
    if new == text:
        return f"{path}: up to date"
    path.write_text(new)
    return f"{path}: written"


if __name__ == "__main__":
    print(main(sys.argv[1:]))
