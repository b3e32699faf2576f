"""A loopback OpenAI-compatible server for tests and benchmarks: real HTTP on 127.0.0.1 for ChatOpenAI.

It answers /v1/chat/completions (plain and streaming), /v1/models and, given a function of texts to vectors,
/v1/embeddings; it reports token usage, and can inject latency and faults at a set rate: 429, 500, a timeout
(answers later than the client waits), an empty message, or a body that is not JSON. Replies come from a
function of the request body; by default the ScriptedChatModel's plausible replies (schema-filled JSON when a
response_format asks for it). A reply of more words than the request's `max_tokens` is cut there and ends with
`finish_reason: length`, as a server's does (a word a token, as its usage counts them).

It also enforces a provider's rate limits (`Limits`): requests per minute, enforced per second as providers
quantize them (600 RPM: at most 10 requests in any second), and tokens per minute (the prompt's tokens are
checked on arrival, prompt and answer counted); over a limit it answers 429 with `Retry-After`,
`retry-after-ms` and OpenAI's error body, and every answer carries OpenAI's `x-ratelimit-limit/remaining/
reset-{requests,tokens}` headers (unless `headers=False`: a provider that states no limits).

And it caches prompt prefixes as OpenAI does (`PromptCache`): a prompt whose first tokens (here words, as its
`prompt_tokens` counts them) equal an earlier prompt's, for at least 1,024 of them, is reported with the common
prefix in `usage.prompt_tokens_details.cached_tokens`, in steps of 128 (llm.prefix_cache's rule).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from avalon_agents.llm.prefix_cache import MIN_PREFIX, STEP
from avalon_agents.llm.scripted import ScriptedChatModel

FAULTS = ("429", "500", "timeout", "empty", "garbage")
ROLE_MESSAGE = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


def scripted_reply(seed: int = 0) -> Callable[[dict[str, Any]], str]:
    """Reply like the ScriptedChatModel's defaults would to the same messages."""
    model = ScriptedChatModel(seed=seed)

    def reply(body: dict[str, Any]) -> str:
        messages = [ROLE_MESSAGE.get(m["role"], HumanMessage)(content=m["content"]) for m in body["messages"]]
        kwargs = {"response_format": body["response_format"]} if "response_format" in body else {}
        return model._default(messages, kwargs)

    return reply


def hashed_vectors(texts: list[str], width: int = 384) -> list[list[float]]:
    """A unit vector per text, drawn from a generator seeded by the text's hash: the same text always gets the
    same vector, and no encoder runs (the embeddings analogue of the scripted replies after a sleep)."""
    out = []
    for text in texts:
        rng = random.Random(hashlib.sha256(text.encode()).digest())
        vector = [rng.gauss(0.0, 1.0) for _ in range(width)]
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        out.append([x / norm for x in vector])
    return out


@dataclass
class ServerState:
    reply: Callable[[dict[str, Any]], str]
    embed: Callable[[list[str]], Any] | None = None  # texts -> vectors, for /v1/embeddings (None: 404)
    latency: float = 0.0
    fault_rate: float = 0.0
    faults: tuple[str, ...] = FAULTS
    timeout_sleep: float = 2.0
    seed: int = 0
    limits: Limits | None = None
    cuts: bool = True  # a reply is cut at max_tokens (False: a server that ignores it)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    peers: list[int] = field(default_factory=list)  # each request's client port: connections reused or not
    injected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    prefixes: PromptCache = field(default_factory=lambda: PromptCache())

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def next_fault(self) -> str | None:
        with self.lock:
            if self.fault_rate and self.rng.random() < self.fault_rate:
                fault = self.rng.choice(self.faults)
                self.injected.append(fault)
                return fault
        return None


def _words(text: str) -> int:
    return max(1, len(text.split()))


def prompt_words(messages: Any) -> list[str]:
    """A request's prompt as the server counts it: each message's words (one "word" for an empty one), the first
    marked with the message's role, so `len` is its `prompt_tokens`."""
    out: list[str] = []
    for m in messages or ():
        words = str(m.get("content", "")).split() or [""]
        out += [f"{m.get('role', '')}|{words[0]}", *words[1:]]
    return out


class PromptCache:
    """OpenAI's prompt cache, as the server reports it: a prompt's first tokens are served from the cache if an
    earlier prompt began with the same ones, from MIN_PREFIX tokens on and in steps of STEP (llm.prefix_cache).
    Kept as the hashes of every earlier prompt's prefixes at each step, so a request costs its length, not the
    number of requests before it. Nothing expires."""

    def __init__(self) -> None:
        self.seen: set[bytes] = set()
        self.lock = threading.Lock()

    def cached(self, tokens: list[str]) -> int:
        """The tokens of this prompt served from the cache (its prefixes are remembered for later prompts)."""
        digest, found, prefixes = hashlib.sha256(), 0, []
        for end in range(STEP, len(tokens) + 1, STEP):
            digest.update("\x00".join(tokens[end - STEP:end]).encode() + b"\x00")
            prefixes.append((end, digest.digest()))
        with self.lock:
            for end, key in prefixes:
                if key not in self.seen:
                    break
                found = end
            self.seen.update(key for _, key in prefixes)
        return found if found >= MIN_PREFIX else 0


def _reset(seconds: float) -> str:
    """OpenAI's way of writing a reset time: "1s", "6m0s", "250ms"."""
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.0f}s" if minutes else f"{rest:.3g}s"


@dataclass
class Limits:
    """A provider's rate limits, enforced on /v1/chat/completions.

    Args:
        rpm: requests per minute (None: none), enforced over the last minute and, with `quantize`, as
            ceil(rpm / 60) requests in any one second.
        tpm: tokens per minute (None: none): a request whose prompt would take the last minute's tokens over
            it is refused; prompt and answer tokens count.
        headers: send the x-ratelimit-* headers (False: a provider that states no limits, only 429s).
        reserve: a request holds its `max_tokens` against `tpm` from its arrival, for the minute, whatever its
            answer used (as OpenAI counts them).
        minute_s: the length of a "minute" (tests shorten it, with the pacer's WINDOW_S).
    """

    rpm: float | None = None
    tpm: float | None = None
    quantize: bool = True
    headers: bool = True
    reserve: bool = False
    minute_s: float = 60.0
    window: deque = field(default_factory=deque)  # [time, tokens] of the requests let through, last minute
    passed: list[tuple[float, int]] = field(default_factory=list)  # every request let through: (time, tokens)
    refused: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def admit(self, prompt_tokens: int, max_tokens: int = 0) -> tuple[list | None, float, dict[str, str]]:
        """(the request's entry, or None if refused; the seconds to wait if refused; the headers to send)."""
        if self.reserve:
            prompt_tokens += max_tokens
        with self.lock:
            now, minute = time.monotonic(), self.minute_s
            while self.window and self.window[0][0] <= now - minute:
                self.window.popleft()
            wait = 0.0
            if self.rpm:
                if len(self.window) >= self.rpm:
                    wait = max(wait, self.window[-int(self.rpm)][0] + minute - now)
                per_second = math.ceil(self.rpm / 60)
                second = minute / 60
                if self.quantize and len(self.window) >= per_second:
                    oldest = self.window[-per_second][0]
                    if oldest > now - second:
                        wait = max(wait, oldest + second - now)
            if self.tpm:
                used = sum(e[1] for e in self.window)
                for entry in self.window:
                    if used + prompt_tokens <= self.tpm:
                        break
                    used -= entry[1]
                    wait = max(wait, entry[0] + minute - now)
            entry = None
            if wait > 0:
                self.refused += 1
            else:
                entry = [now, prompt_tokens]
                self.window.append(entry)
            return entry, wait, self._headers(now)

    def charge(self, entry: list, tokens: int) -> None:
        """The request's tokens, answer included."""
        with self.lock:
            entry[1] = tokens = max(entry[1], tokens) if self.reserve else tokens
            self.passed.append((entry[0], tokens))

    def _headers(self, now: float) -> dict[str, str]:
        if not self.headers:
            return {}
        out = {}
        oldest = self.window[0][0] + self.minute_s - now if self.window else 0.0
        if self.rpm:
            out.update({"x-ratelimit-limit-requests": str(int(self.rpm)),
                        "x-ratelimit-remaining-requests": str(max(0, int(self.rpm) - len(self.window))),
                        "x-ratelimit-reset-requests": _reset(oldest)})
        if self.tpm:
            used = sum(e[1] for e in self.window)
            out.update({"x-ratelimit-limit-tokens": str(int(self.tpm)),
                        "x-ratelimit-remaining-tokens": str(max(0, int(self.tpm - used))),
                        "x-ratelimit-reset-tokens": _reset(oldest)})
        return out


class Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stall

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(value).encode(), headers=headers)

    def do_GET(self) -> None:
        limits = self.server.state.limits
        if self.path.rstrip("/").endswith("/stats") and limits is not None:  # what the limits let through
            with limits.lock:
                passed = list(limits.passed)
            self._json(200, {"passed": len(passed), "refused": limits.refused, "rpm": limits.rpm, "tpm": limits.tpm,
                             "tokens": sum(t for _, t in passed),
                             "times": [round(at, 4) for at, _ in passed], "each": [t for _, t in passed]})
        elif self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "loopback", "object": "model", "owned_by": "tests"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length))
        with state.lock:
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            state.peers.append(self.client_address[1])
        path = self.path.rstrip("/")
        route = "embeddings" if path.endswith("/embeddings") and state.embed else "chat" if path.endswith(
            "/chat/completions") else None
        if route is None:
            self._json(404, {"error": {"message": "not found"}})
            return
        words = prompt_words(body.get("messages", ()))
        prompt_tokens = len(words)
        entry, rate_headers = None, {}
        if state.limits is not None and route == "chat":
            entry, wait, rate_headers = state.limits.admit(prompt_tokens, int(body.get("max_tokens") or 0))
            if entry is None:
                self._json(429, {"error": {"message": f"Rate limit reached; please try again in {wait:.3f}s.",
                                           "type": "requests", "code": "rate_limit_exceeded"}},
                           {**rate_headers, "retry-after": str(math.ceil(wait)),
                            "retry-after-ms": str(math.ceil(wait * 1000))})
                return
        if state.latency and route == "chat":  # the latency is the chat model's; vectors come at once
            time.sleep(state.latency)
        fault = state.next_fault()
        if fault == "429":  # as a provider's transient 429: a short Retry-After
            self._json(429, {"error": {"message": "rate limited", "type": "rate_limit_error"}},
                       {"retry-after-ms": "50"})
            return
        if fault == "500":
            self._json(500, {"error": {"message": "internal error", "type": "server_error"}})
            return
        if fault == "401":  # never injected at random (not in FAULTS): a wrong key, for the health tests
            self._json(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
            return
        if fault == "timeout":
            time.sleep(state.timeout_sleep)
        if fault == "garbage":
            self._send(200, b"<html>this is not json", "application/json")
            return
        if route == "embeddings":
            self._embeddings(body)
            return
        text = "" if fault == "empty" else state.reply(body)
        finish = "stop"
        cap = body.get("max_tokens") or body.get("max_completion_tokens")
        if state.cuts and isinstance(cap, int) and cap > 0 and len(text.split()) > cap:  # as a server cuts
            text, finish = " ".join(text.split()[:cap]), "length"
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": _words(text) if text else 0,
                 "prompt_tokens_details": {"cached_tokens": state.prefixes.cached(words)}}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if entry is not None:
            state.limits.charge(entry, usage["total_tokens"])
        model = body.get("model", "loopback")
        if body.get("stream"):
            self._stream(model, text, usage, finish)
            return
        self._json(200, {
            "id": f"chatcmpl-{len(state.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": usage,
        }, rate_headers)

    def _embeddings(self, body: dict[str, Any]) -> None:
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        vectors = self.server.state.embed(texts)
        tokens = sum(_words(t) for t in texts)
        self._json(200, {"object": "list", "model": body.get("model", "loopback"),
                         "data": [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                                  for i, v in enumerate(vectors)],
                         "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def _stream(self, model: str, text: str, usage: dict[str, int], finish: str = "stop") -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        pieces = [text[i:i + 16] for i in range(0, len(text), 16)] or [""]
        for i, piece in enumerate(pieces):
            chunk = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 0, "model": model,
                     "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece} if i == 0 else
                                  {"content": piece}, "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        last = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage}
        self.wfile.write(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode())
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the default listen backlog (5) drops connections when many games call at once
    state: ServerState

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout fault) closes the socket: nothing to report."""


@contextmanager
def openai_server(reply: Callable[[dict[str, Any]], str] | None = None, **options: Any) -> Iterator[_Server]:
    """Run the server on a free loopback port for the duration of the block.

    The yielded server has `.base_url` (ending in /v1) and `.state` (requests, headers, injected faults).
    """
    server = _Server(("127.0.0.1", 0), Handler)
    server.state = ServerState(reply=reply or scripted_reply(), **options)
    server.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    # a short poll: shutdown() waits for the loop's next look (0.5 s by default, at the end of every test)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def main(embed: Callable[[list[str]], Any] | None = None) -> None:
    """`python -m avalon_agents.llm.loopback [--port N] [--latency S] [--fault-rate P]`: serve until killed
    (with `embed`, a function of texts to vectors, it also answers /v1/embeddings)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share of requests that get a fault")
    parser.add_argument("--embeddings", choices=("none", "hashed"), default="none",
                        help="answer /v1/embeddings too: `hashed`, a fixed unit vector per text, with no encoder")
    parser.add_argument("--rpm", type=float, default=None, help="requests per minute (enforced per second too)")
    parser.add_argument("--tpm", type=float, default=None, help="tokens per minute")
    parser.add_argument("--reserve", action="store_true", help="count each request's max_tokens for the minute")
    parser.add_argument("--no-limit-headers", action="store_true",
                        help="send no x-ratelimit-* headers (a provider that states its limits only by 429s)")
    args = parser.parse_args()
    if embed is None and args.embeddings == "hashed":
        embed = hashed_vectors
    server = _Server(("127.0.0.1", args.port), Handler)
    limits = (Limits(rpm=args.rpm, tpm=args.tpm, headers=not args.no_limit_headers, reserve=args.reserve)
              if args.rpm or args.tpm else None)
    server.state = ServerState(reply=scripted_reply(), embed=embed, latency=args.latency,
                               fault_rate=args.fault_rate, limits=limits)
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
