"""The numpy MiniLM against known-good similarities published for all-MiniLM-L6-v2 (sbert.net docs)."""

from __future__ import annotations

import numpy as np
import pytest

from avalon_agents.stores.embeddings import MiniLM, MiniLMEmbeddings


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM()


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_quickstart_similarities(model):
    # sbert.net "Computing Embeddings" quickstart, all-MiniLM-L6-v2
    vectors = model.encode(["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."])
    assert vectors.shape == (3, 384)
    expected = np.array([[1.0000, 0.6660, 0.1046], [0.6660, 1.0000, 0.1411], [0.1046, 0.1411, 1.0000]])
    assert np.abs(vectors @ vectors.T - expected).max() < 6e-4


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_semantic_textual_similarity_table(model):
    # sbert.net "Semantic Textual Similarity", all-MiniLM-L6-v2
    first = model.encode(["The new movie is awesome", "The cat sits outside", "A man is playing guitar"])
    second = model.encode(["The dog plays in the garden", "The new movie is so great", "A woman watches TV"])
    expected = np.array([[0.0543, 0.8939, -0.0502], [0.2838, -0.0029, 0.1310], [0.2277, -0.0136, -0.0327]])
    assert np.abs(first @ second.T - expected).max() < 6e-4


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_batching_and_padding_do_not_change_a_vector(model):
    alone = model.encode(["Merlin hides among the loyal servants."])
    batched = model.encode(["Merlin hides among the loyal servants.", "a much longer sentence " * 20])
    assert np.abs(alone[0] - batched[0]).max() < 1e-5
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)


def test_chromadb_embedding_function_shape():
    vectors = MiniLMEmbeddings()(["one", "two"])
    assert len(vectors) == 2 and len(vectors[0]) == 384
