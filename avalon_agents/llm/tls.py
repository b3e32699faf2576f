"""One TLS context per process for the HTTP clients the package builds (httpx's, under the providers' chat models
and the embedded model's server client).

httpx makes a context for every client, even one that only speaks plain HTTP to a loopback server, and making one
reads and parses certifi's roots: about 16 ms of CPU a client. The context `tls` gives is the one httpx would make
(`httpx.create_ssl_context()`: certifi's roots, or the SSL_CERT_FILE or SSL_CERT_DIR the environment names), made
once for each such setting; a context serves any number of clients, threads and event loops.
"""

from __future__ import annotations

import os
import ssl
from functools import lru_cache


def tls() -> ssl.SSLContext:
    """The process's TLS context for an httpx client's `verify=` (httpx's default settings)."""
    return _context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@lru_cache(maxsize=4)
def _context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    import httpx

    return httpx.create_ssl_context()  # reads the same environment: the key says which setting it was made for
