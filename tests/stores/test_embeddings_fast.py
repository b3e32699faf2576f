"""onnxruntime's forward pass of MiniLM gives the vectors of the plain numpy one (to float32 rounding), and the
process-wide text cache returns identical vectors and stays bounded."""

from __future__ import annotations

import numpy as np
import pytest

from avalon_agents.stores import vector_cache
from avalon_agents.stores.embeddings import MiniLM


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM()


@pytest.mark.parametrize(("n", "length"), [
    (1, 5), (3, 17),
    # a full batch and a text past the 256-token cut: seconds each of the numpy reference, so with `-m slow`
    pytest.param(16, 64, marks=pytest.mark.slow), pytest.param(5, 300, marks=pytest.mark.slow)])
@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_forward_equals_the_reference(model, n, length):
    rng = np.random.default_rng(n * length)
    ids = rng.integers(1000, 20000, size=(n, length))
    mask = np.ones((n, length), np.float32)
    mask[0, length // 2:] = 0  # one text padded
    real = mask.astype(bool)
    fast, plain = model._forward(ids, mask), model._forward_reference(ids, mask)
    assert fast.shape == plain.shape == (n, length, 384)
    assert np.abs(fast[real] - plain[real]).max() < 1e-4  # hidden states of real tokens (padding is not read)


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_game_messages_encode_as_with_the_reference_pass(model, monkeypatch):
    texts = ["Player 6 proposes this team for quest 1: Player 3 and Player 6.",
             "Votes on Player 1, Player 2 and Player 3: 5 approve (Player 1, Player 3, Player 4, Player 5 and "
             "Player 6), 1 reject (Player 2). The team is approved.",
             'Player 4 said: "As Player 4, I trust Player 5 for now, while Player 6 has not earned it yet."',
             "Which players are most likely on the evil side, and why?"]
    fast = MiniLM()._encode(texts)
    reference = MiniLM()
    monkeypatch.setattr(reference, "_forward", reference._forward_reference)
    plain = reference._encode(texts)
    assert all(np.abs(a - b).max() < 1e-5 for a, b in zip(fast, plain))
    # the ranking a retrieval sees is the reference's
    assert (np.argsort(-(np.stack(fast) @ np.stack(fast).T), axis=1)
            == np.argsort(-(np.stack(plain) @ np.stack(plain).T), axis=1)).all()


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_cache_returns_identical_vectors_and_is_bounded(monkeypatch):
    monkeypatch.setattr(vector_cache, "CACHE", 8)
    model = MiniLM()
    first = model.encode(["alpha", "beta", "alpha"])
    assert np.array_equal(first[0], first[2])
    again = model.encode(["beta", "alpha"])
    assert np.array_equal(again, first[[1, 0]])
    model.encode([f"text {i}" for i in range(20)])
    assert len(model._cache) == 8
    assert np.array_equal(model.encode(["alpha"])[0], first[0])  # evicted, then computed again: the same
