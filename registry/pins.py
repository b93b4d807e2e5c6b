"""The key-pin check at the edge: fetch a node id's registry facts, then ask the pure rule.

``KeyPins`` is what the check needs from a directory (``CachedDirectory`` implements it); the
decision itself is ``lamarck.registry.rules.pin_decision``. An unreachable registry is a
refusal (``registry_unavailable``): fail closed. An id admitted through a revoked identity (an
endorser anywhere on its chain) is refused as revoked (``revoked_source``), naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from lamarck.errors import RegistryError
from lamarck.registry.rules import PinReason, pin_decision

__all__ = ["KeyHistory", "KeyPins", "KeyRevocations", "pin_refusal"]


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


@runtime_checkable
class KeyHistory(Protocol):
    """Pins that also know the keys a rotation retired, and when (``PeerDirectory``); pins
    without it believe the current key only (fail closed)."""

    async def key_valid_at(self, node_id: str, key: str, at: datetime) -> bool:
        """Whether ``key`` was ``node_id``'s key at ``at``: a key its verified rotation chain
        retired no earlier than ``at`` (the current key is asked with ``pinned_key``)."""
        ...


@runtime_checkable
class KeyRevocations(Protocol):
    """Pins that also know the keys the operator revoked as compromised (its seal)."""

    async def key_revoked_since(self, key: str) -> datetime | None:
        """Since when ``key`` is revoked as compromised (``None``: it is not)."""
        ...


async def pin_refusal(
    pins: KeyPins, node_id: str, key: str | None, signed_at: datetime | None = None
) -> tuple[PinReason, str] | None:
    """Why ``key`` is not the registered, unrevoked key of ``node_id``, or None when it is.

    ``signed_at`` is the record's date, for a record (a lesson) that may have been signed
    before a key rotation: a key retired after that date still verifies it. A live call
    (``None``) needs the current key."""
    try:
        revoked = await pins.is_revoked(node_id)
        since = (
            await pins.key_revoked_since(key)
            if key is not None and not revoked and isinstance(pins, KeyRevocations)
            else None
        )
        if since is not None and (signed_at is None or signed_at >= since):
            # A compromised key: nothing it signs from then on counts; before, its history.
            return PinReason.REVOKED_KEY, f"{node_id}'s key was revoked as compromised"
        pinned = None if revoked else await pins.pinned_key(node_id)
        # An id whose admission no longer verifies may have been admitted through a revoked
        # identity: then it is revoked too, and says so (asked only then: one more read).
        via = None
        if not revoked and pinned is None:
            via = (await pins.revoked_through([node_id])).get(node_id)
        key_then = (
            key is not None
            and signed_at is not None
            and pinned is not None
            and key != pinned
            and isinstance(pins, KeyHistory)
            and await pins.key_valid_at(node_id, key, signed_at)
        )
    except RegistryError as e:
        return PinReason.REGISTRY_UNAVAILABLE, f"{node_id} cannot be checked: {e}"
    return pin_decision(
        node_id, key, revoked=revoked, pinned=pinned, revoked_via=via, key_then=key_then
    )
