"""A text -> vector cache that embedders share: each text's vector is computed once and kept (LRU, CACHE
texts), so seats of one process that see the same messages encode them once."""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict

import numpy as np

CACHE = 4096  # texts whose vectors are kept


class Cached:
    """Unit vectors for texts, each text's kept in an LRU cache (seats share the game's messages).
    Subclasses give `_encode(missing texts) -> vectors`."""

    def __init__(self, width: int = 0) -> None:
        self.width = width  # of the vectors (0: not known before the first)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors for `texts`, shape (len(texts), width); texts seen before come from the cache."""
        if not texts:
            return np.zeros((0, self.width), np.float32)
        with self._lock:
            found = {t: self._cache[t] for t in dict.fromkeys(texts) if t in self._cache}
            missing = [t for t in dict.fromkeys(texts) if t not in found]
            if missing:
                found.update(zip(missing, self._encode(missing)))
            for text, vector in found.items():  # most recently used last; the least recent go first
                self._cache[text] = vector
                self._cache.move_to_end(text)
            while len(self._cache) > CACHE:
                self._cache.popitem(last=False)
            return np.stack([found[t] for t in texts])

    async def aencode(self, texts: list[str]) -> np.ndarray:
        """`encode` for a coroutine: cached texts are read on the loop's thread, the missing ones computed by
        `_aencode` (for an in-process encoder, on a worker thread, so the loop runs other seats meanwhile)."""
        if not texts:
            return np.zeros((0, self.width), np.float32)
        with self._lock:
            found = {t: self._cache[t] for t in dict.fromkeys(texts) if t in self._cache}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            computed = await self._aencode(missing)
            with self._lock:
                for text, vector in zip(missing, computed):
                    self._cache[text] = vector
                    self._cache.move_to_end(text)
                while len(self._cache) > CACHE:
                    self._cache.popitem(last=False)
            found.update(zip(missing, computed))
        return np.stack([found[t] for t in texts])

    def _encode(self, texts: list[str]) -> list[np.ndarray]:
        raise NotImplementedError

    async def _aencode(self, texts: list[str]) -> list[np.ndarray]:
        return await asyncio.to_thread(self._encode_locked, texts)

    def _encode_locked(self, texts: list[str]) -> list[np.ndarray]:
        with self._lock:  # one forward pass at a time (the cache's lock, as `encode` holds it)
            return self._encode(texts)
