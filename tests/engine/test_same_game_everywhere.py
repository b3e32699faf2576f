"""A seed names one game on every machine: the golden games (tests/golden_games.py) play the same under every
OpenBLAS kernel this CPU can run and with numpy's SIMD paths off, and the recorded replay replays under each.

The fast test plays one set in this process; the slow one plays them all in a child process per environment.
A change that changes games on purpose re-writes the golden file: `python -m tests.golden_games --write`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import golden_games

ROOT = Path(__file__).resolve().parents[2]

KERNELS = (
    ("Prescott", ()),
    ("Nehalem", ("sse4_2",)),
    ("Sandybridge", ("avx",)),
    ("Haswell", ("avx2", "fma")),
    ("Zen", ("avx2", "fma")),
    ("SkylakeX", ("avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd")),
    ("Cooperlake", ("avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd", "avx512_bf16")),
)
"""OpenBLAS x86-64 kernels (OPENBLAS_CORETYPE) and the CPU flags each needs."""


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return next((set(line.split(":", 1)[1].split()) for line in text.splitlines() if line.startswith("flags")), set())


def runnable_kernels() -> list[str]:
    flags = _cpu_flags()
    return [name for name, needs in KERNELS if set(needs) <= flags] if flags else []


def numpy_paths() -> str:
    """numpy's dispatched SIMD paths this CPU offers (what NPY_DISABLE_CPU_FEATURES switches off)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f))


def golden() -> dict[str, str]:
    return json.loads(golden_games.GOLDEN.read_text())


def test_one_golden_set_plays_as_recorded_here():
    name = "rulebot-lady-8"
    assert golden_games.play_sets([name]) == {name: golden()[name]}


def _environments() -> list[tuple[str, dict[str, str]]]:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}
    found = [("default", base)]
    found += [(f"OPENBLAS_CORETYPE={k}", {**base, "OPENBLAS_CORETYPE": k}) for k in runnable_kernels()]
    paths = numpy_paths()
    if paths:
        found.append((f"NPY_DISABLE_CPU_FEATURES={paths}", {**base, "NPY_DISABLE_CPU_FEATURES": paths}))
    return found


@pytest.mark.slow  # a child process per environment, each about 15 s
def test_the_golden_games_are_the_same_under_every_blas_kernel_and_simd_path():
    expected, seen, kernels = golden(), {}, set()
    for label, env in _environments():
        done = subprocess.run([sys.executable, "-m", "tests.golden_games"], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{label}: {done.stderr[-2000:]}"
        report = json.loads(done.stdout.strip().splitlines()[-1])
        seen[label] = report["digests"]
        kernels.add(report["environment"]["blas_kernel"])
        if label.startswith("NPY_"):
            assert report["environment"]["numpy_simd"] == "baseline only"
    differing = {label: [k for k in expected if found.get(k) != expected[k]] for label, found in seen.items()}
    assert not any(differing.values()), f"sets that differ from tests/data/golden_games.json: {differing}"
    assert all(found["replay"] == "same" for found in seen.values())
    if "avx2" in _cpu_flags():
        assert len(kernels) >= 3, f"the kernels did not change: {kernels}"  # the variable was honoured
