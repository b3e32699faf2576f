"""Where a local site listens: whether a host is this machine's only (`loopback`: such a site asks for no token)
and the address people can open for a site bound to a host (`reachable`)."""

from __future__ import annotations

import ipaddress
import socket


def loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only (a site bound to it asks for no token)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def reachable(bound: str) -> str:
    """An address people can open for a table bound to `bound`: `bound` itself, except for a wildcard (0.0.0.0,
    ::, which no browser opens): this machine's primary address (the one its default route leaves from; no
    packet is sent), else its host name."""
    try:
        wildcard = ipaddress.ip_address(bound).is_unspecified
    except ValueError:
        return bound
    if not wildcard:
        return bound
    family, probe = (socket.AF_INET6, "2001:db8::1") if ":" in bound else (socket.AF_INET, "192.0.2.1")
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((probe, 9))  # documentation addresses: a route is chosen, nothing is sent
            return s.getsockname()[0]
    except OSError:  # no route out of this machine: its name
        return socket.gethostname()
