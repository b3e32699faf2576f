"""Served embeddings: vectors from a real loopback server's /v1/embeddings (real HTTP) are MiniLM's, a
baseline seat retrieves with them as with the in-process encoder, transient errors are retried, and a bad
spec or a failing server is one line."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import yaml
from loguru import logger

from avalon_agents.agents.baseline import BaselineAgent, Message, informativeness
from avalon_agents.agents.registry import check_options
from avalon_agents.llm import ClientPool, ModelSpecError
from avalon_agents.llm.loopback import openai_server
from avalon_agents.stores import served_embeddings
from avalon_agents.stores.embeddings import MiniLM, embedder
from avalon_agents.stores.served_embeddings import EmbeddingFailed, ServedEmbeddings, served
from tests.helpers import avalon, scripted_setup

TEXTS = ["Quest 1 failed with 1 fail card; the team was Player 2 and Player 5.",
         'Player 4 said: "I like pizza and sunny weather."',
         'Player 3 said: "The weather is lovely today."']
QUESTIONS = ["Which players were on the teams of failed quests?", "How is the weather?"]


@pytest.fixture(scope="module")
def minilm() -> MiniLM:
    return embedder()


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_served_vectors_are_minilms_and_each_text_is_sent_once(minilm):
    with openai_server(embed=minilm.encode) as server:
        model = served(f"openai-compatible:minilm@{server.base_url}")
        vectors = model.encode(TEXTS + TEXTS[:1])
        assert vectors.shape == (4, 384)
        assert np.abs(vectors[:3] - minilm.encode(TEXTS)).max() < 1e-6
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1)
        model.encode(TEXTS[1:])  # cached: no second request
        bodies = [b for b in server.state.requests if "input" in b]
    assert len(bodies) == 1 and bodies[0]["input"] == TEXTS and bodies[0]["model"] == "minilm"


def test_a_baseline_seat_retrieves_the_same_with_served_vectors(minilm):
    context = scripted_setup().context(ClientPool().for_game(None))
    with openai_server(embed=minilm.encode) as server:
        local = BaselineAgent(seat=1, context=context)
        remote = BaselineAgent(seat=1, context=context, embeddings=f"openai-compatible:minilm@{server.base_url}")
        for agent in (local, remote):
            agent.messages = [Message(t, 1, informativeness(t)) for t in TEXTS]
        found = asyncio.run(remote._retrieve(QUESTIONS))
        assert found == asyncio.run(local._retrieve(QUESTIONS))
        assert TEXTS[0] == found[0][0] and "weather" in found[1][0]
        assert any("input" in b for b in server.state.requests)


def test_transient_errors_are_retried_and_a_dead_endpoint_is_one_line(minilm, monkeypatch):
    monkeypatch.setattr(served_embeddings, "WAIT", {"multiplier": 0.01, "max": 0.02})
    logged: list[str] = []
    logger.enable("avalon_agents")  # the package keeps its messages to itself unless asked (logs.py)
    sink = logger.add(logged.append, level="INFO", format="{message}")
    monkeypatch.setattr(served_embeddings, "ATTEMPTS", 8)  # enough that the seeded faults never exhaust them
    with openai_server(embed=minilm.encode, fault_rate=0.5, faults=("429", "500"), seed=3) as server:
        model = ServedEmbeddings("minilm", server.base_url, "not-needed")
        for text in TEXTS:
            model.encode([text])
        assert server.state.injected  # some requests failed and were asked again
    logger.remove(sink)
    logger.disable("avalon_agents")
    assert sum("embeddings call retried" in line for line in logged) == len(server.state.injected)
    with openai_server(embed=minilm.encode, fault_rate=1.0, faults=("500",)) as server:
        with pytest.raises(EmbeddingFailed, match=r"answered HTTP 500") as failed:
            ServedEmbeddings("minilm", server.base_url, "not-needed").encode(["anything"])
        assert len(server.state.requests) == served_embeddings.ATTEMPTS
    assert "\n" not in str(failed.value)
    with openai_server() as server:  # a chat-only server: no /v1/embeddings
        with pytest.raises(EmbeddingFailed, match="HTTP 404"):
            ServedEmbeddings("minilm", server.base_url, "not-needed").encode(["anything"])


@pytest.mark.parametrize(("spec", "message"), [
    ("sentence:minilm", "unknown spec"),
    ("openai-compatible:minilm", "needs the form"),
    ("openai:text-embedding-3-small", "needs OPENAI_API_KEY"),
])
def test_a_bad_spec_is_one_line(spec, message, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelSpecError, match=message):
        served(spec)
    with pytest.raises(ModelSpecError, match=message):  # what a config's check runs (`avalon run --check`)
        check_options("baseline", {"embeddings": spec})
    context = scripted_setup().context(ClientPool().for_game(None))
    with pytest.raises(ModelSpecError, match=message):
        BaselineAgent(seat=1, context=context, embeddings=spec)


@pytest.mark.slow
def test_a_run_whose_embeddings_server_fails_stops_in_one_line_with_exit_3(tmp_path):
    with openai_server() as server:  # answers chat, not /v1/embeddings
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump({
            "name": "dead-embeddings", "model": f"openai-compatible:loopback@{server.base_url}",
            "agents": {"ours": {"kind": "cognitive"}, "base": {"kind": "baseline", "options": {
                "embeddings": f"openai-compatible:minilm@{server.base_url}"}}},
            "sides": {"good": "ours", "evil": "base"}, "games_per_series": 1}))
        done = avalon("run", str(config), "--out", str(tmp_path / "run"), "-q")
    assert done.returncode == 3
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "answered HTTP 404" in errors[0] and "Traceback" not in done.stderr


def test_the_loopback_servers_hashed_vectors_are_fixed_per_text_and_unit_length():
    from avalon_agents.llm.loopback import hashed_vectors

    with openai_server(embed=hashed_vectors) as server:
        vectors = ServedEmbeddings("hashed", server.base_url, "not-needed").encode(["a", "b"])
        again = ServedEmbeddings("hashed", server.base_url, "not-needed").encode(["b", "a"])
    assert vectors.shape == (2, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1)
    assert np.array_equal(vectors, again[::-1]) and not np.allclose(vectors[0], vectors[1])
