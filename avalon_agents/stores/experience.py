"""The experience store on chromadb: what seats learned, kept across games and processes.

Documents are strategies, suggestions, notes on other roles and per-game reflections, each with metadata
(kind, role, side, run, game, seat, outcome). Order is (run, game, seat), never the time of writing, so a
replay with concurrent seats learns the same; two seats of one role both keep what they wrote. It answers
"the latest strategy for Morgana" (so a seat of that role starts the next game with it) and similarity
queries (the baseline agent's experience pool).
Persistent under a run directory (`PersistentClient`), or in memory (`EphemeralClient`, tests). Every
collection gets the offline MiniLM embedding function: chromadb's default would download a model.
"""

from __future__ import annotations

import uuid
import weakref
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from avalon_agents.core.events import GameResult
from avalon_agents.core.types import Role
from avalon_agents.stores.book import Experience
from avalon_agents.stores.chroma import Settings, chromadb
from avalon_agents.stores.embeddings import MiniLMEmbeddings
from avalon_agents.stores.similarity import ranked

KINDS = tuple(f.name for f in fields(Experience))  # strategy, suggestions, other_roles, reflection


def client(path: str | Path | None = None) -> chromadb.ClientAPI:
    """A persistent client under `path`, or an in-memory one; telemetry off (this machine is offline)."""
    settings = Settings(anonymized_telemetry=False, allow_reset=True)
    if path is None:
        return chromadb.EphemeralClient(settings=settings)
    Path(path).mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=settings)


class ExperienceStore:
    """Experience by role on chromadb; usable wherever an `ExperienceBook` is (get / put).

    Args:
        path: a directory for a persistent store (e.g. under the run directory); None keeps it in memory.
        collection: the collection name (one store can hold several agent configs' experience); in memory,
            a private collection whose name starts with it.
        game: the index recorded with what is put next (the series runner advances it).
        run: the run recorded with it; None: the next after every run already in the store (a folder reused
            by a later `avalon play --experience DIR`, whose game numbers start again, comes after).
    """

    def __init__(self, path: str | Path | None = None, collection: str = "experience", game: int = 0,
                 run: int | None = None) -> None:
        self.client = client(path)
        if path is None:  # chromadb's in-memory client is one per process: keep each store's documents apart
            collection = f"{collection}-{uuid.uuid4().hex[:12]}"
        self.embed = MiniLMEmbeddings()
        self.collection = self.client.get_or_create_collection(
            collection, embedding_function=self.embed, metadata={"hnsw:space": "cosine"})
        # chromadb keeps every client's system (its index, its database's caches) in a class-level registry until
        # the client is closed: without this, each store a long run opened (two a series) stayed in memory. Closed
        # when the collection goes (with the store, or later if a caller kept it: `ExperienceStore(d).collection`)
        self._release = weakref.finalize(self.collection, self.client.close)
        self.game = game
        if run is None:
            runs = [m.get("run", 0) for m in self.collection.get(include=["metadatas"])["metadatas"]]
            run = max(runs, default=0) + 1
        self.run = run

    def close(self) -> None:
        """Release the store's chromadb client (also done when the store and its collection are dropped); the
        store is unusable after."""
        self._release()

    def add(self, kind: str, text: str, *, role: Role, won: bool | None = None, side: str | None = None,
            seat: int = 0, extra: dict[str, Any] | None = None) -> str:
        """Store one document (with `extra` metadata: str, int, float or bool values); returns its id."""
        doc_id = f"{kind}-{role.name.lower()}-r{self.run}-g{self.game}-s{seat}-{uuid.uuid4().hex[:8]}"
        meta: dict[str, Any] = {"kind": kind, "role": role.value, "side": side or role.side.value,
                                "run": self.run, "game": self.game, "seat": seat}
        if won is not None:
            meta["outcome"] = "won" if won else "lost"
        meta.update(extra or {})
        self.collection.add(ids=[doc_id], documents=[text], metadatas=[meta])
        return doc_id

    def forget_from(self, game: int) -> None:
        """Delete every document this run recorded for game `game` or later (an interrupted game's, on
        resume)."""
        self.collection.delete(where={"$and": [{"run": self.run}, {"game": {"$gte": game}}]})

    def latest(self, kind: str, role: Role) -> str | None:
        """The most recent document of `kind` for `role`, or None."""
        found = self.collection.get(where={"$and": [{"kind": kind}, {"role": role.value}]},
                                    include=["documents", "metadatas"])
        if not found["ids"]:
            return None
        meta = found["metadatas"]
        newest = max(range(len(found["ids"])), key=lambda i: (meta[i].get("run", 0), meta[i]["game"],
                                                               meta[i].get("seat", 0), found["documents"][i]))
        return found["documents"][newest]

    def query(self, text: str, n: int = 3, **where: Any) -> list[tuple[str, dict[str, Any], float]]:
        """The `n` documents closest to `text` (cosine distance), optionally filtered by metadata. Exact, not
        the index's approximate search, whose answer depends on the order documents were written in (seats
        write concurrently); the same on every machine (stores.similarity): ties go to the earlier
        (run, game, seat)."""
        if self.collection.count() == 0:
            return []
        clauses = [{k: v} for k, v in where.items()]
        filt = None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}
        found = self.collection.get(where=filt, include=["documents", "metadatas", "embeddings"])
        if not found["ids"]:
            return []
        meta, docs = found["metadatas"], found["documents"]
        # the stored order is the order seats wrote in (concurrently): put them in (run, game, seat) order first
        canon = sorted(range(len(found["ids"])), key=lambda i: (meta[i].get("run", 0), meta[i]["game"],
                                                                meta[i].get("seat", 0), docs[i]))
        vectors = np.asarray(found["embeddings"], dtype=np.float32)[canon]
        target = np.asarray(self.embed([text])[0], dtype=np.float32)
        found_order = ranked([docs[i] for i in canon], vectors, target)[:n]
        return [(docs[canon[i]], meta[canon[i]], 1.0 - sim) for i, sim in found_order]

    # ------------------------------------------------------------ the ExperienceBook interface

    def get(self, role: Role) -> Experience:
        return Experience(**{kind: self.latest(kind, role) for kind in KINDS})

    def put(self, role: Role, experience: Experience, result: GameResult | None = None, seat: int = 0) -> None:
        """Keep what a seat of `role` learned in this game (every part that has text)."""
        won = None if result is None else result.winner is role.side
        for kind in KINDS:
            text = getattr(experience, kind)
            if text:
                self.add(kind, text, role=role, won=won, seat=seat)
