"""What machine and software made a run: recorded with every run (the run record) so a replay that diverges can
say what differed.

`environment()` is a plain dict of strings: Python, the key packages' versions, the CPU's model and the flags that
pick numeric code paths, the BLAS library and the kernel it chose, numpy's SIMD paths and what disabled them, and
the framework's commit (with "+dirty" when the tree had changes). `differences(a, b)` lists the keys whose values
differ, one "key: a -> b" string each, in the order of `a`.

The game does not depend on any of this: no decision, ranking or tie depends on float bits that vary with the CPU,
the BLAS kernel or the SIMD path (docs/architecture.md, Contracts: "The same game on every machine"). It is
recorded to show that, and to find the cause when a replay says otherwise.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("avalon_agents", "numpy", "pandas", "pydantic", "langchain-core", "chromadb", "llama_cpp_python",
            "tokenizers", "scipy")
"""The packages whose versions a run records (those that decide or compute what a game does)."""

SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "amx_tile", "neon",
              "asimd", "sve")
"""The CPU flags recorded: those that choose a BLAS kernel or a numpy SIMD path."""

ENV_VARS = ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "OMP_NUM_THREADS",
            "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Environment variables that change which numeric code runs (recorded only when set)."""


def commit() -> str | None:
    """The git commit of the framework's checkout, if it runs from one (with "+dirty" for local changes)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def _cpu() -> tuple[str, list[str]]:
    """The CPU's model name and the recorded flags it has (Linux: /proc/cpuinfo; elsewhere platform's word)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "Model") and model in (platform.processor(), platform.machine(), ""):
                model = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return model, [f for f in SIMD_FLAGS if f in flags]


def _blas() -> dict[str, str]:
    """The BLAS numpy calls and the kernel it picked (threadpoolctl's view of the loaded libraries)."""
    import numpy  # noqa: F401  (loads the BLAS library threadpoolctl looks for)
    from threadpoolctl import threadpool_info

    for lib in threadpool_info():
        if lib.get("user_api") == "blas":
            return {"blas": f"{lib.get('internal_api')} {lib.get('version') or ''}".strip(),
                    "blas_kernel": str(lib.get("architecture") or "unknown")}
    return {"blas": "none found", "blas_kernel": "unknown"}


def _simd() -> dict[str, str]:
    """numpy's SIMD paths: those this CPU offers that numpy dispatches to, and those switched off."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # pragma: no cover - numpy < 2
        return {}
    return {"numpy_simd": " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f)) or "baseline only"}


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


@functools.lru_cache(maxsize=1)
def _static() -> tuple[tuple[str, str], ...]:
    model, flags = _cpu()
    found: dict[str, str] = {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": f"{sys.platform} {platform.machine()}",
        **{package: _version(package) for package in PACKAGES},
        "cpu": model,
        "cpu_flags": " ".join(flags) or "none recorded",
        **_blas(),
        **_simd(),
    }
    return tuple(found.items())


def environment() -> dict[str, str]:
    """This process's environment as a run records it (see the module's docstring)."""
    found = dict(_static())
    for var in ENV_VARS:
        if os.environ.get(var):
            found[var] = os.environ[var]
    found["commit"] = commit() or "unknown"
    return found


def differences(recorded: dict[str, Any] | None, now: dict[str, Any] | None = None) -> list[str]:
    """Each key whose value differs between a recorded environment and `now` (default: this process's), as
    "key: recorded -> now"; keys only one side has count as differing ("absent" on the other)."""
    recorded = recorded or {}
    now = environment() if now is None else now
    keys = list(recorded) + [k for k in now if k not in recorded]
    return [f"{k}: {recorded.get(k, 'absent')} -> {now.get(k, 'absent')}" for k in keys
            if str(recorded.get(k, "absent")) != str(now.get(k, "absent"))]
