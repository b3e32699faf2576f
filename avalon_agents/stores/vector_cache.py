"""A text -> vector cache that embedders share: each text's vector is computed once and kept (LRU, CACHE
texts), so seats of one process that see the same messages encode them once."""

from __future__ import annotations

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

    def _encode(self, texts: list[str]) -> list[np.ndarray]:
        raise NotImplementedError
