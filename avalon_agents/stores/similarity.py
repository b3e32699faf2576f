"""Cosine similarity that is the same on every machine, and a ranking by it.

A matrix product (BLAS) sums in an order its kernel chooses, so its last bits vary with the CPU and the library;
a ranking of near-equal similarities would then vary too. Here each product of two float32 components is exact in
float64, each sum is `math.fsum` (exactly rounded, whatever the order) and the square root and the division are
single IEEE roundings: the similarity is a function of the vectors alone. Texts that are the same get the same
similarity however their vectors were computed (an encoder's last bits can depend on the batch a text was in), and
ties go to the earlier item.

What stays machine-dependent is the vectors themselves (onnxruntime picks its kernels by CPU): two different texts
whose similarities differ by less than that noise (about 1e-6) may rank otherwise on another CPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def cosines(vectors: np.ndarray, target: np.ndarray) -> list[float]:
    """The cosine similarity of each row of `vectors` with `target` (0.0 where either is all zeros)."""
    if len(vectors) == 0:
        return []
    rows = np.asarray(vectors, dtype=np.float32).astype(np.float64)
    t = np.asarray(target, dtype=np.float32).astype(np.float64)
    t_norm = math.sqrt(math.fsum((t * t).tolist()))
    dots = [math.fsum(row) for row in (rows * t).tolist()]
    norms = [math.sqrt(math.fsum(row)) for row in (rows * rows).tolist()]
    return [d / (n * t_norm) if n and t_norm else 0.0 for d, n in zip(dots, norms)]


def ranked(texts: Sequence[str], vectors: np.ndarray, target: np.ndarray) -> list[tuple[int, float]]:
    """(index, similarity) of each of `texts`, from most to least similar to `target`: one similarity per
    distinct text (its first occurrence's vector), ties to the earlier index."""
    first: dict[str, int] = {}
    for i, text in enumerate(texts):
        first.setdefault(text, i)
    distinct = list(first.values())
    found = dict(zip(distinct, cosines(np.asarray(vectors)[distinct], target))) if distinct else {}
    sims = [found[first[text]] for text in texts]
    return sorted(((i, sims[i]) for i in range(len(texts))), key=lambda pair: (-pair[1], pair[0]))
