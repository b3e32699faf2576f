"""Plugins: the user's own code (agent kinds, modules, model providers), imported before agents are built.

A plugin is a Python file (`my_modules.py`, a path) or an importable module name (`my_package.modules`).
Importing it runs its `@register_module(...)`, `register_agent(...)` and `register_provider(...)` calls, so
the names it registers can be used on the command line (`--plugin`) and in experiment configs
(`plugins:`). The Ray backend imports the same plugins in every worker before it plays a series. A plugin adds
names; one that registers a built-in name (an agent kind, a module, a provider of this package), or a name another
plugin registered, fails to load, naming the plugin and the name.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from avalon_agents.registry import NameTaken, Registry, loading

LOADED: Registry[ModuleType] = Registry("plugin", words=False)
"""Plugins imported in this process, by the resolved path or module name (each is imported once)."""


def load_plugin(item: str, base: Path | None = None) -> str:
    """Import one plugin: a .py file (relative to `base`, else to the working folder) or a module name.
    Returns its key (the resolved path, or the module name). Raises ValueError naming the plugin when it cannot
    be found or fails to import."""
    path = Path(item)
    if item.endswith(".py") or path.exists() or "/" in item:
        if not path.is_absolute() and base is not None and (base / path).exists():
            path = base / path
        path = path.resolve()
        key = str(path)
        if key in LOADED:
            return key
        if not path.is_file():
            raise ValueError(f"plugin: no such file {item!r}")
        name = f"avalon_plugin_{path.stem}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ValueError(f"plugin: {item} is not a Python file (give a .py file or a module name)")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            with loading(key):
                spec.loader.exec_module(module)
        except NameTaken as exc:
            del sys.modules[name]
            raise ValueError(f"plugin {item}: {exc}") from None
        except SystemExit as exc:  # a plugin that exits would end the command with its code and no word
            del sys.modules[name]
            raise ValueError(f"plugin: {item} called sys.exit({exc.code!r}) while being imported") from None
        except Exception as exc:
            del sys.modules[name]
            raise ValueError(f"plugin: {item} failed to import ({type(exc).__name__}: {exc})") from None
    else:
        key = item
        if key in LOADED:
            return key
        try:
            with loading(key):
                module = importlib.import_module(item)
        except ImportError as exc:
            raise ValueError(f"plugin: cannot import {item!r} ({exc})") from None
        except NameTaken as exc:
            raise ValueError(f"plugin {item}: {exc}") from None
    LOADED.register(key, module, builtin=False)
    return key


def load_plugins(items: Iterable[str], base: Path | None = None) -> list[str]:
    """Import every plugin; returns their keys (resolved paths or module names), for meta.json and for the
    Ray workers, which import the same."""
    return [load_plugin(item, base) for item in items]
