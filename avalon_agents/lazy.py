"""Names a package exports, loaded from their modules when first used (PEP 562): importing the package costs
nothing, so a command's `--help` or a one-line error loads no model client."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: each name in `where` comes from the submodule it names (or is that
    submodule: `{"metrics": "paper.metrics"}`)."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(f"{package}.{where[name]}")
        return module if where[name].rpartition(".")[2] == name else getattr(module, name)

    return __getattr__
