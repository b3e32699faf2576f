"""A text -> vector cache that embedders share: each text's vector is computed once and kept (LRU, CACHE
texts), so seats of one process that see the same messages encode them once.

Two locks: `_lock` guards the cache only and is held for dictionary work, so a coroutine reading cached
vectors on the event loop never waits for a forward pass; `_compute_lock` lets one in-process forward pass run
at a time, and whoever takes it looks in the cache again first (a text another thread just computed is not
computed twice, and every reader gets the same vector for it).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict

import numpy as np

CACHE = 4096  # texts whose vectors are kept


class Cached:
    """Unit vectors for texts, each text's kept in an LRU cache. Subclasses give `_encode(texts) -> vectors`
    (an in-process encoder) or override `_acompute` (a served one)."""

    def __init__(self, width: int = 0) -> None:
        self.width = width  # of the vectors (0: not known before the first)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._compute_lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors for `texts`, shape (len(texts), width); texts seen before come from the cache."""
        if not texts:
            return np.zeros((0, self.width), np.float32)
        found = self._lookup(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            found.update(self._compute(missing))
        return np.stack([found[t] for t in texts])

    async def aencode(self, texts: list[str]) -> np.ndarray:
        """`encode` for a coroutine: cached vectors are read on the loop's thread; the missing ones are computed
        by `_acompute` (an in-process encoder on a worker thread, so the loop runs other seats meanwhile)."""
        if not texts:
            return np.zeros((0, self.width), np.float32)
        found = self._lookup(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            found.update(await self._acompute(missing))
        return np.stack([found[t] for t in texts])

    def _lookup(self, texts: list[str]) -> dict[str, np.ndarray]:
        with self._lock:
            found = {t: self._cache[t] for t in dict.fromkeys(texts) if t in self._cache}
            for text in found:  # most recently used last; the least recent go first
                self._cache.move_to_end(text)
            return found

    def _store(self, texts: list[str], vectors: list[np.ndarray]) -> dict[str, np.ndarray]:
        with self._lock:
            for text, vector in zip(texts, vectors):
                self._cache[text] = vector
                self._cache.move_to_end(text)
            while len(self._cache) > CACHE:
                self._cache.popitem(last=False)
        return dict(zip(texts, vectors))

    def _compute(self, texts: list[str]) -> dict[str, np.ndarray]:
        with self._compute_lock:
            known = self._lookup(texts)
            rest = [t for t in texts if t not in known]
            if rest:
                known.update(self._store(rest, self._encode(rest)))
            return known

    async def _acompute(self, texts: list[str]) -> dict[str, np.ndarray]:
        return await asyncio.to_thread(self._compute, texts)

    def _encode(self, texts: list[str]) -> list[np.ndarray]:
        raise NotImplementedError
