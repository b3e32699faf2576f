"""The experience store on chromadb: what seats learned, kept across games and processes.

Documents are strategies, suggestions, notes on other roles and per-game reflections, each with metadata
(kind, role, side, game, outcome, seq). It answers "the latest strategy for Morgana" (so a seat of that
role starts the next game with it) and similarity queries (the baseline agent's experience pool).
Persistent under a run directory (`PersistentClient`), or in memory (`EphemeralClient`, tests). Every
collection gets the offline MiniLM embedding function: chromadb's default would download a model.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import fields
from pathlib import Path
from typing import Any

import chromadb
from chromadb.config import Settings

from avalon_agents.core.events import GameResult
from avalon_agents.core.types import Role
from avalon_agents.stores.book import Experience
from avalon_agents.stores.embeddings import MiniLMEmbeddings

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
    """

    def __init__(self, path: str | Path | None = None, collection: str = "experience", game: int = 0) -> None:
        self.client = client(path)
        if path is None:  # chromadb's in-memory client is one per process: keep each store's documents apart
            collection = f"{collection}-{uuid.uuid4().hex[:12]}"
        self.collection = self.client.get_or_create_collection(
            collection, embedding_function=MiniLMEmbeddings(), metadata={"hnsw:space": "cosine"})
        self.game = game

    def add(self, kind: str, text: str, *, role: Role, won: bool | None = None, side: str | None = None,
            extra: dict[str, Any] | None = None) -> str:
        """Store one document (with `extra` metadata: str, int, float or bool values); returns its id."""
        seq = time.time_ns()
        doc_id = f"{kind}-{role.name.lower()}-{self.game}-{seq}"
        meta: dict[str, Any] = {"kind": kind, "role": role.value, "side": side or role.side.value,
                                "game": self.game, "seq": seq}
        if won is not None:
            meta["outcome"] = "won" if won else "lost"
        meta.update(extra or {})
        self.collection.add(ids=[doc_id], documents=[text], metadatas=[meta])
        return doc_id

    def forget_from(self, game: int) -> None:
        """Delete every document recorded for game `game` or later (an interrupted game's, on resume)."""
        self.collection.delete(where={"game": {"$gte": game}})

    def latest(self, kind: str, role: Role) -> str | None:
        """The most recent document of `kind` for `role`, or None."""
        found = self.collection.get(where={"$and": [{"kind": kind}, {"role": role.value}]},
                                    include=["documents", "metadatas"])
        if not found["ids"]:
            return None
        newest = max(range(len(found["ids"])), key=lambda i: (found["metadatas"][i]["game"],
                                                               found["metadatas"][i]["seq"]))
        return found["documents"][newest]

    def query(self, text: str, n: int = 3, **where: Any) -> list[tuple[str, dict[str, Any], float]]:
        """The `n` documents closest to `text` (cosine distance), optionally filtered by metadata."""
        if self.collection.count() == 0:
            return []
        clauses = [{k: v} for k, v in where.items()]
        filt = None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}
        res = self.collection.query(query_texts=[text], n_results=n, where=filt,
                                    include=["documents", "metadatas", "distances"])
        return list(zip(res["documents"][0], res["metadatas"][0], res["distances"][0]))

    # ------------------------------------------------------------ the ExperienceBook interface

    def get(self, role: Role) -> Experience:
        return Experience(**{kind: self.latest(kind, role) for kind in KINDS})

    def put(self, role: Role, experience: Experience, result: GameResult | None = None) -> None:
        won = None if result is None else result.winner is role.side
        for kind in KINDS:
            text = getattr(experience, kind)
            if text and text != self.latest(kind, role):
                self.add(kind, text, role=role, won=won)
