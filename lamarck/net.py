"""Whether an address is reachable only from this machine (loopback or a unix socket).

One rule for every listener that relaxes authentication on loopback: the agent API
(``node/config.py``), the MCP HTTP transport (``lamarck/mcp``) and the console.
"""

from __future__ import annotations

import ipaddress

__all__ = ["LOOPBACK_NAMES", "is_loopback_address", "is_loopback_host"]

#: Host names and addresses that only this machine can reach (plus every address in
#: 127.0.0.0/8).
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback_host(host: str) -> bool:
    """True for a loopback host name or address: an IP address in 127.0.0.0/8, ``::1``
    (bracketed or not), ``localhost``. A DNS name that merely starts with ``127.``
    (``127.0.0.1.nip.io``) resolves wherever its owner likes: not loopback."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_loopback_address(address: str) -> bool:
    """True for ``unix:...`` or a ``host:port`` whose host is loopback."""
    if address.startswith("unix:"):
        return True
    return is_loopback_host(address.rsplit(":", 1)[0])
