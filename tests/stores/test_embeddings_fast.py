"""The fast forward pass of the numpy MiniLM gives the very same vectors as the plain one, and the process-wide
text cache returns identical vectors and stays bounded."""

from __future__ import annotations

import numpy as np
import pytest

from avalon_agents.stores import embeddings
from avalon_agents.stores.embeddings import MiniLM


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM()


@pytest.mark.parametrize(("n", "length"), [(1, 5), (3, 17), (16, 64), (5, 300)])
def test_forward_equals_the_reference_bit_for_bit(model, n, length):
    rng = np.random.default_rng(n * length)
    ids = rng.integers(1000, 20000, size=(n, length))
    mask = np.ones((n, length), np.float32)
    mask[0, length // 2:] = 0  # one text padded
    assert np.array_equal(model._forward(ids, mask), model._forward_reference(ids, mask))


def test_gelu_inplace_equals_gelu_bit_for_bit():
    x = np.random.default_rng(0).standard_normal((70, 1536), dtype=np.float32) * 4
    y = x.copy()
    embeddings._gelu_inplace(y)
    assert np.array_equal(y, embeddings._gelu(x))


def test_game_messages_encode_as_with_the_reference_pass(model, monkeypatch):
    texts = ["Player 6 proposes this team for quest 1: Player 3 and Player 6.",
             "Votes on Player 1, Player 2 and Player 3: 5 approve (Player 1, Player 3, Player 4, Player 5 and "
             "Player 6), 1 reject (Player 2). The team is approved.",
             'Player 4 said: "As Player 4, I trust Player 5 for now, while Player 6 has not earned it yet."',
             "Which players are most likely on the evil side, and why?"]
    fast = MiniLM()._encode(texts)
    reference = MiniLM()
    monkeypatch.setattr(reference, "_forward", reference._forward_reference)
    assert all(np.array_equal(a, b) for a, b in zip(fast, reference._encode(texts)))


def test_cache_returns_identical_vectors_and_is_bounded(monkeypatch):
    monkeypatch.setattr(embeddings, "CACHE", 8)
    model = MiniLM()
    first = model.encode(["alpha", "beta", "alpha"])
    assert np.array_equal(first[0], first[2])
    again = model.encode(["beta", "alpha"])
    assert np.array_equal(again, first[[1, 0]])
    model.encode([f"text {i}" for i in range(20)])
    assert len(model._cache) == 8
    assert np.array_equal(model.encode(["alpha"])[0], first[0])  # evicted, then computed again: the same
