"""Sentence vectors from a server's OpenAI-compatible embeddings endpoint (POST {url}/embeddings).

For a run whose models are all served (vLLM, a llama.cpp server, OpenAI), the baseline's retrieval can be
served too, so no encoder runs in the framework's process: `openai-compatible:MODEL@URL` (sent no key: the
OpenAI key is for OpenAI) or `openai:MODEL` (OPENAI_API_KEY). Vectors are normalised to unit length here and
cached per text as MiniLM's are (vector_cache.py); a baseline seat keeps its own vectors, so their width is the
server's. A call is retried on a transport error, 429 and 5xx; what still fails raises EmbeddingFailed with
the server's one-line reason, and the run stops as for an unusable chat model (exit 3, finished games kept).

A thin httpx client rather than langchain-openai's OpenAIEmbeddings: that one counts tokens with tiktoken
(whose encodings download at run time) unless told not to, and costs the openai SDK's CPU per call, which is
what serving the vectors is meant to take out of the process.
"""

from __future__ import annotations

import os

import httpx
import numpy as np
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from avalon_agents.llm.health import ModelUnusable
from avalon_agents.llm.providers import compatible_parts, server_key
from avalon_agents.llm.settings import ModelSettings, ModelSpecError
from avalon_agents.stores.vector_cache import Cached

OPENAI_URL = "https://api.openai.com/v1"
ATTEMPTS = 4
WAIT = {"multiplier": 0.5, "max": 8.0}  # exponential backoff with jitter (seconds)
TIMEOUT = 60.0


class EmbeddingFailed(ModelUnusable):
    """The embeddings endpoint did not answer with vectors (after the retries): the run stops as for a chat
    model that cannot be used (one line; finished games are kept, a rerun goes on)."""


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)


class ServedEmbeddings(Cached):
    """Vectors from `url`/embeddings for `model`, sent `key` as a bearer token."""

    def __init__(self, model: str, url: str, key: str) -> None:
        super().__init__()
        self.model, self.url = model, url
        self.client = httpx.Client(timeout=TIMEOUT, headers={"Authorization": f"Bearer {key}"})

    def _post(self, texts: list[str]) -> list[list[float]]:
        response = self.client.post(f"{self.url}/embeddings", json={"model": self.model, "input": texts})
        response.raise_for_status()
        data = sorted(response.json()["data"], key=lambda d: d["index"])
        if len(data) != len(texts):
            raise EmbeddingFailed(f"embeddings: {self.url} returned {len(data)} vectors for {len(texts)} texts")
        return [d["embedding"] for d in data]

    def _encode(self, texts: list[str]) -> list[np.ndarray]:
        try:
            for attempt in Retrying(stop=stop_after_attempt(ATTEMPTS), wait=wait_exponential_jitter(**WAIT),
                                    retry=retry_if_exception(_transient), reraise=True):
                with attempt:
                    rows = self._post(texts)
        except httpx.HTTPStatusError as exc:
            raise EmbeddingFailed(f"embeddings: {self.url} answered {exc.response.status_code}: "
                                  f"{exc.response.text[:200]!r}") from None
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            raise EmbeddingFailed(f"embeddings: {self.url}: {type(exc).__name__}: {exc}") from None
        vectors = np.asarray(rows, dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return list(vectors)


def served(spec: str) -> ServedEmbeddings:
    """The embedder of an `openai-compatible:MODEL@URL` or `openai:MODEL` spec."""
    provider, _, rest = spec.partition(":")
    if provider == "openai-compatible":
        model, url = compatible_parts(rest)
        return ServedEmbeddings(model, url, server_key(url, ModelSettings(spec=spec)))
    if provider == "openai" and rest:
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ModelSpecError(f"embeddings: {spec} needs OPENAI_API_KEY in the environment")
        return ServedEmbeddings(rest, OPENAI_URL, key)
    raise ModelSpecError(f"embeddings: unknown spec {spec!r} (use local:minilm, openai-compatible:MODEL@URL "
                         "or openai:MODEL)")
