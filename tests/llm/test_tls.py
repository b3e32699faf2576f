"""The chat models the providers build share one TLS context per process (llm/tls.py), the one httpx would make
for each client (certificates checked, host names checked), and still talk to their server."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

from avalon_agents.llm.providers import make_model
from avalon_agents.llm.tls import tls


def _context(model) -> ssl.SSLContext:
    return model.http_async_client._transport._pool._ssl_context


def test_two_chat_models_share_one_context_and_answer(loopback):
    spec = f"openai-compatible:m@{loopback.base_url}"
    first, second = make_model(spec), make_model(spec)
    assert first.http_async_client is not second.http_async_client  # each model its own connections
    assert _context(first) is _context(second) is tls()
    assert tls().verify_mode == ssl.CERT_REQUIRED and tls().check_hostname
    answer = asyncio.run(second.ainvoke("Who is Merlin?"))
    assert answer.content and len(loopback.state.requests) == 1


def test_a_certificate_setting_gets_its_own_context(monkeypatch):
    import certifi

    before = tls()
    with monkeypatch.context() as changed:
        changed.setenv("SSL_CERT_FILE", f"{Path(certifi.where()).parent}/./cacert.pem")  # certifi's, named otherwise
        assert tls() is not before and tls() is tls()
    assert tls() is before  # the setting back: its context again
