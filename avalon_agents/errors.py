"""User mistakes as one line: the pydantic-error formatter and the YAML reader every config uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError


class Unusable(RuntimeError):
    """A run that cannot go on, though nothing in its input is wrong (a model that answers nothing usable, a dead
    worker): the command says so in one line and exits 3."""


def field_path(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc)


def field_error(exc: ValidationError, prefix: tuple[Any, ...] = ()) -> str:
    """The first error of `exc` as "field.path: message" (validators' own messages keep the field they name)."""
    err = exc.errors()[0]
    field = field_path(prefix + tuple(err["loc"]))
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = "unknown key"
    if not field or message.split(":")[0].split(".")[0] == field.split(".")[0] and ":" in message:
        return message
    return f"{field}: {message}"


def load_yaml(path: Path, what: str) -> Any:
    """The YAML at `path`. Raises ValueError naming `what` and the file (and the line of a syntax error)."""
    import yaml

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ValueError(f"{what}: cannot read {path} ({exc.strerror})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ValueError(f"{what}: {where} is not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
