"""Whether an address is reachable only from this machine (loopback or a unix socket).

One rule for every listener that relaxes authentication on loopback: the agent API
(``node/config.py``), the MCP HTTP transport (``node/mcp``) and the console.
"""

from __future__ import annotations

__all__ = ["LOOPBACK_NAMES", "is_loopback_address", "is_loopback_host"]

#: Host names and addresses that only this machine can reach (plus every ``127.*``).
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback_host(host: str) -> bool:
    """True for a loopback host name or address: ``127.*``, ``::1`` (bracketed or not),
    ``localhost``."""
    name = host.strip().strip("[]").lower()
    return name in LOOPBACK_NAMES or name.startswith("127.")


def is_loopback_address(address: str) -> bool:
    """True for ``unix:...`` or a ``host:port`` whose host is loopback."""
    if address.startswith("unix:"):
        return True
    return is_loopback_host(address.rsplit(":", 1)[0])
