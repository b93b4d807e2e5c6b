"""The key-pin check at the edge: fetch a node id's registry facts, then ask the pure rule.

``KeyPins`` is what the check needs from a directory (``CachedDirectory`` implements it); the
decision itself is ``lamarck.registry.rules.pin_decision``. An unreachable registry is a
refusal (``registry_unavailable``): fail closed.
"""

from __future__ import annotations

from typing import Protocol

from lamarck.errors import RegistryError
from lamarck.registry.rules import PinReason, pin_decision

__all__ = ["KeyPins", "pin_refusal"]


class KeyPins(Protocol):
    """The registry facts the pin check needs."""

    async def pinned_key(self, node_id: str) -> str | None:
        """The base64url public key pinned to ``node_id``, or None if it never registered."""
        ...

    async def is_revoked(self, node_id: str) -> bool:
        """Whether ``node_id`` was revoked."""
        ...


async def pin_refusal(pins: KeyPins, node_id: str, key: str | None) -> tuple[PinReason, str] | None:
    """Why ``key`` is not the registered, unrevoked key of ``node_id``, or None when it is."""
    try:
        revoked = await pins.is_revoked(node_id)
        pinned = None if revoked else await pins.pinned_key(node_id)
    except RegistryError as e:
        return PinReason.REGISTRY_UNAVAILABLE, f"{node_id} cannot be checked: {e}"
    return pin_decision(node_id, key, revoked=revoked, pinned=pinned)
