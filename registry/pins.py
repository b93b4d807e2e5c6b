"""The key-pin check at the edge: fetch a node id's registry facts, then ask the pure rule.

``KeyPins`` is what the check needs from a directory (``CachedDirectory`` implements it); the
decision itself is ``lamarck.registry.rules.pin_decision``. An unreachable registry is a
refusal (``registry_unavailable``): fail closed. An id admitted through a revoked identity (an
endorser anywhere on its chain) is refused as revoked (``revoked_source``), naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
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

    async def revoked_through(self, node_ids: Sequence[str]) -> dict[str, str]:
        """For each of ``node_ids`` admitted through a revoked identity, that identity."""
        ...


async def pin_refusal(pins: KeyPins, node_id: str, key: str | None) -> tuple[PinReason, str] | None:
    """Why ``key`` is not the registered, unrevoked key of ``node_id``, or None when it is."""
    try:
        revoked = await pins.is_revoked(node_id)
        pinned = None if revoked else await pins.pinned_key(node_id)
        # An id whose admission no longer verifies may have been admitted through a revoked
        # identity: then it is revoked too, and says so (asked only then: one more read).
        via = None
        if not revoked and pinned is None:
            via = (await pins.revoked_through([node_id])).get(node_id)
    except RegistryError as e:
        return PinReason.REGISTRY_UNAVAILABLE, f"{node_id} cannot be checked: {e}"
    return pin_decision(node_id, key, revoked=revoked, pinned=pinned, revoked_via=via)
