"""Sentence vectors from a server's OpenAI-compatible embeddings endpoint (POST {url}/embeddings).

For a run whose models are all served (vLLM, a llama.cpp server, OpenAI), the baseline's retrieval can be
served too, so no encoder runs in the framework's process: `openai-compatible:MODEL@URL` (sent no key: the
OpenAI key is for OpenAI) or `openai:MODEL` (OPENAI_API_KEY). Vectors are normalised to unit length here and
cached per text as MiniLM's are (vector_cache.py); a baseline seat keeps its own vectors, so their width is the
server's. A call is retried on a connection error, a timeout, 408, 409, 422, 429 and 5xx (each retry is a line
of run.log); what still fails raises EmbeddingFailed with the server's one-line reason, and the run stops as
for an unusable chat model (exit 3, finished games kept).

The request goes through llm.http's aiohttp session of the running loop (about 0.3 ms of CPU per call, where
httpx costs 3 ms and the openai SDK 4: benchmarks/client_overhead.py), not langchain-openai's
OpenAIEmbeddings, which would also count tokens with tiktoken (whose encodings download at run time).
"""

from __future__ import annotations

import asyncio
import json
import os

import aiohttp
import numpy as np
from loguru import logger
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from avalon_agents.llm.settings import compatible_parts
from avalon_agents.llm.health import ModelUnusable
from avalon_agents.llm.http import ServerError, error_message, loop_session
from avalon_agents.llm.providers import server_key
from avalon_agents.llm.settings import ModelSettings, ModelSpecError
from avalon_agents.stores.vector_cache import Cached

OPENAI_URL = "https://api.openai.com/v1"
ATTEMPTS = 4
WAIT = {"multiplier": 0.5, "max": 8.0}  # exponential backoff with jitter (seconds)
TIMEOUT = aiohttp.ClientTimeout(total=60)


class EmbeddingFailed(ModelUnusable):
    """The embeddings endpoint did not answer with vectors (after the retries): the run stops as for a chat
    model that cannot be used (one line; finished games are kept, a rerun goes on)."""


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, ServerError):
        return exc.retryable
    return isinstance(exc, (aiohttp.ClientError, asyncio.TimeoutError))


def _log_retry(state: RetryCallState) -> None:
    """Each retry goes to the run's diagnostic log (run.log), as the chat calls' do."""
    logger.info("embeddings call retried (attempt {} failed: {})", state.attempt_number, state.outcome.exception())


class ServedEmbeddings(Cached):
    """Vectors from `url`/embeddings for `model`, sent `key` as a bearer token."""

    def __init__(self, model: str, url: str, key: str) -> None:
        super().__init__()
        self.model, self.url = model, f"{url.rstrip('/')}/embeddings"
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    async def _post(self, texts: list[str]) -> list[list[float]]:
        session = await loop_session((self.url, 0))
        async with session.post(self.url, data=json.dumps({"model": self.model, "input": texts}),
                                headers=self.headers, timeout=TIMEOUT) as response:
            raw, status = await response.read(), response.status
        if status >= 400:
            raise ServerError(status, error_message(raw))
        data = sorted(json.loads(raw)["data"], key=lambda d: d["index"])
        if len(data) != len(texts):
            raise ValueError(f"{len(data)} vectors for {len(texts)} texts")
        return [d["embedding"] for d in data]

    async def _acompute(self, texts: list[str]) -> dict[str, np.ndarray]:
        return self._store(texts, await self._vectors(texts))

    async def _vectors(self, texts: list[str]) -> list[np.ndarray]:
        try:
            retrying = AsyncRetrying(stop=stop_after_attempt(ATTEMPTS), wait=wait_exponential_jitter(**WAIT),
                                     retry=retry_if_exception(_transient), reraise=True, before_sleep=_log_retry)
            async for attempt in retrying:
                with attempt:
                    rows = await self._post(texts)
        except ServerError as exc:
            raise EmbeddingFailed(f"embeddings: {self.url} answered {exc}") from None
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError, KeyError, TypeError) as exc:
            raise EmbeddingFailed(f"embeddings: {self.url}: {type(exc).__name__}: {exc}") from None
        vectors = np.asarray(rows, dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        self.width = vectors.shape[1]
        return list(vectors)

    def _encode(self, texts: list[str]) -> list[np.ndarray]:
        """For a caller without a running loop (the baseline itself uses `aencode`)."""
        return asyncio.run(self._vectors(texts))


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
