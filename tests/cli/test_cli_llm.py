"""`avalon play` with LLM seats: scripted and loopback models end to end, and bad model input."""

from __future__ import annotations

import json
import os
import socket

import pytest

from avalon_agents.llm.loopback import openai_server
from avalon_agents.records import read_trace
from avalon_agents.records.run_dir import META
from tests.helpers import avalon


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


@pytest.mark.parametrize(("spec", "env", "expected"), [
    ("gpt-4", {}, "model: unknown spec 'gpt-4'"),
    ("openai:gpt-4o-mini", {"OPENAI_API_KEY": ""}, "needs OPENAI_API_KEY"),
    # the closed port is picked when the test runs: an id with it would differ between pytest-xdist's workers
    ("openai-compatible:m@http://127.0.0.1:{closed_port}/v1", {}, "model: cannot reach http://127.0.0.1:"),
    ("openai-compatible:m@localhost", {}, "needs the form openai-compatible:MODEL@http"),
    ("local:llama70b", {}, "no embedded model 'llama70b'"),
])
def test_bad_model_input_is_one_line(spec, env, expected):
    spec = spec.replace("{closed_port}", str(closed_port()))
    out = avalon("play", "--seats", "llm", "--model", spec, env={**os.environ, **env})
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and expected in out.stderr and "Traceback" not in out.stderr


def test_llm_seats_without_a_model_flag_on_a_rulebot_game_need_none():
    out = avalon("play", "--model", "gpt-4")  # no llm seat: the model is never built
    assert out.returncode == 0, out.stderr


def test_scripted_llm_game_writes_a_trace_and_prints_usage(tmp_path):
    out = avalon("play", "--seats", "llm,rulebot,llm,rulebot,llm,rulebot", "--model", "scripted", "--games", "2",
                 "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "valid response rate: 100.0%" in out.stdout and "LLM calls:" in out.stdout
    trace = read_trace(tmp_path / "game-00001")
    calls = [r for r in trace if r.type == "llm_call"]
    assert calls and {r.seat for r in calls} == {1, 3, 5}
    assert all(r.tokens_source == "provider" for r in calls)  # the scripted model reports usage
    meta = json.loads((tmp_path / "game-00001" / META).read_text())
    assert meta["model"]["spec"] == "scripted" and meta["seats"]["2"] == "rulebot"


@pytest.mark.slow  # seconds of end-to-end play: the fast suite keeps its minute
def test_loopback_server_game_from_the_cli(tmp_path):
    with openai_server() as server:
        out = avalon("play", "--seats", "llm", "--model", f"openai-compatible:loopback@{server.base_url}",
                     "--json", "--out", str(tmp_path), env={**os.environ, "OPENAI_API_KEY": "sk-cli-secret-42"})
        requests = len(server.state.requests)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["games"] == 1 and summary["usage"]["llm_calls"] == requests
    assert summary["usage"]["input_tokens"] > 0 and summary["usage"]["valid_response_rate"] == 1.0
    assert "sk-cli-secret-42" not in "".join(p.read_text() for p in tmp_path.rglob("*.json*"))


def test_no_file_of_a_run_holds_the_key(tmp_path, monkeypatch):
    """A key given through the environment reaches the server and never a file of the run."""
    from click.testing import CliRunner

    from avalon_agents.cli import cli
    from avalon_agents.llm.loopback import openai_server

    secret = "sk-run-secret-key-0987654321"
    monkeypatch.setenv("OPENAI_API_KEY", secret)  # must not go to an openai-compatible server at all
    monkeypatch.setenv("LOOPBACK_KEY", secret + "-own")
    with openai_server() as server:
        result = CliRunner().invoke(cli, ["play", "--seats", "llm", "--model", f"openai-compatible:m@{server.base_url}",
                                          "--api-key-env", "LOOPBACK_KEY", "--out", str(tmp_path), "--json"])
        headers = server.state.headers
    assert result.exit_code == 0, result.output
    assert {h["authorization"] for h in headers} == {f"Bearer {secret}-own"}
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) >= 5 and not any(secret in p.read_text(errors="replace") for p in files)
