"""chromadb, imported without three idle seconds.

chromadb imports jsonschema, whose format checkers import `rfc3987_syntax` (installed with JupyterLab's
`jsonschema[format-nongpl]`), and that package builds about 35 Earley parsers when it is imported: about 3 s of
every process that opens an experience store on this 2-core machine (jsonschema issue #1428,
opendatahub-io/notebooks#3532). chromadb never checks an IRI format. So before chromadb is imported, a stand-in
takes that module's name: the real module is imported on the first use of any of its names, so an IRI check
anywhere in the process still answers as it would have. Nothing changes where `rfc3987_syntax` is not installed
or is already imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

LAZY = "rfc3987_syntax"


class _Deferred(types.ModuleType):
    """Stands under the slow module's name until one of its names is used, then hands over to the real one."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if sys.modules.get(LAZY) is self:
            del sys.modules[LAZY]
        return getattr(importlib.import_module(LAZY), name)


def _deferred_function(name: str):
    def call(*args, **kwargs):
        if sys.modules.get(LAZY) is not None and not isinstance(sys.modules[LAZY], _Deferred):
            real = sys.modules[LAZY]
        else:
            sys.modules.pop(LAZY, None)
            real = importlib.import_module(LAZY)
        return getattr(real, name)(*args, **kwargs)

    call.__name__ = name
    return call


def defer_slow_imports() -> None:
    """Put the stand-in in place (once, and only if jsonschema has not read the real module yet)."""
    if LAZY in sys.modules or "jsonschema._format" in sys.modules or importlib.util.find_spec(LAZY) is None:
        return
    stand_in = _Deferred(LAZY, "stands in for rfc3987_syntax until it is used (avalon_agents.stores.chroma)")
    stand_in.is_valid_syntax = _deferred_function("is_valid_syntax")  # what jsonschema imports by name
    sys.modules[LAZY] = stand_in


defer_slow_imports()

import chromadb  # noqa: E402  (after the stand-in, on purpose)
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings  # noqa: E402
from chromadb.config import Settings  # noqa: E402

__all__ = ["Documents", "EmbeddingFunction", "Embeddings", "Settings", "chromadb"]
