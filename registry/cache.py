"""``CachedDirectory``: a node's local copy of the peer list, pins and revocations.

Reads go to the backing directory and refresh the copy; when it is unavailable they are
served from the copy, so gossip and imports keep working through a Redis outage. Writes
(nonces, registrations, heartbeats, rotations, revocations, endorsements) always go to the
backing directory and fail with ``RegistryError(reason="unavailable")`` while it is down:
nobody can be admitted without the registry.

The copy lives in memory and, when a path is given, in a JSON file in the node's home, so a
node restarted during an outage still knows its peers. ``refresh()`` pulls a fresh copy; the
node calls it every ``cache_refresh_interval_s`` (no timers in here).

Revocations are never forgotten: the backing directory reports only revocations the
operator signed, and the copy keeps the union of every one it has been told of (in memory
and in the file), so somebody deleting Redis keys later cannot un-revoke an id for this node.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from lamarck.errors import RegistryError
from lamarck.proto.clock import Clock
from lamarck.proto.timefmt import format_ts, parse_ts
from lamarck.registry.directory import IssuedNonce, PeerDirectory, PeerInfo
from lamarck.registry.records import Endorsement, Registration, Revocation

__all__ = ["CachedDirectory"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_FILE_VERSION = 1


class _Down:
    """Marks a read the backing directory could not answer (it is unavailable)."""


_DOWN = _Down()


def _is_outage(e: RegistryError) -> bool:
    return e.reason == "unavailable"


class CachedDirectory(PeerDirectory):
    """Wraps a ``PeerDirectory``; serves reads from a local copy while it is unavailable."""

    def __init__(self, inner: PeerDirectory, *, clock: Clock, path: Path | None = None) -> None:
        self._inner = inner
        self._clock = clock
        self._path = path
        self._peers: dict[str, PeerInfo] = {}
        self._pins: dict[str, str] = {}
        # Principals seen while the registry answered (in memory only: re-learnt after a restart).
        self._principals: dict[str, str] = {}
        self._revoked: set[str] = set()
        self._refreshed_at: datetime | None = None
        #: False from the first failed call until the next successful one.
        self.available = True
        if path is not None:
            self._load(path)

    @property
    def refreshed_at(self) -> datetime | None:
        """When the copy was last refreshed from the backing directory (``None``: never)."""
        return self._refreshed_at

    @property
    def inner(self) -> PeerDirectory:
        """The backing directory."""
        return self._inner

    async def refresh(self) -> bool:
        """Pull live peers and revocations; False (logged, copy kept) if unavailable."""
        try:
            peers = await self._inner.live_peers()
            revoked = await self._inner.revoked_ids()
        except RegistryError as e:
            if not _is_outage(e):
                raise
            self._mark_down(e)
            return False
        self._mark_up()
        self._peers = {p.node_id: p for p in peers}
        # Pins are kept for peers that went quiet: their lessons still need verifying.
        self._pins.update({p.node_id: p.public_key for p in peers})
        # A union, never a replacement: an id gone from the registry's revoked set was
        # un-revoked by nobody entitled to (there is no such operation).
        self._revoked |= revoked
        for node_id in self._revoked:
            self._peers.pop(node_id, None)
        self._refreshed_at = self._clock.now()
        self._save()
        return True

    # -- reads: backing directory first, the copy during an outage -------------------------

    async def _try(self, call: Callable[[], Awaitable[_T]]) -> _T | _Down:
        """Run a read on the backing directory; ``_DOWN`` instead of raising during an outage."""
        try:
            result = await call()
        except RegistryError as e:
            if not _is_outage(e):
                raise
            self._mark_down(e)
            return _DOWN
        self._mark_up()
        return result

    async def live_peers(self) -> list[PeerInfo]:
        """Live peers from the registry, or the cached list while it is down."""
        peers = await self._try(self._inner.live_peers)
        if isinstance(peers, _Down):
            return sorted(self._peers.values(), key=lambda p: p.node_id)
        peers = [p for p in peers if p.node_id not in self._revoked]
        self._peers = {p.node_id: p for p in peers}
        self._pins.update({p.node_id: p.public_key for p in peers})
        return peers

    async def get_peer(self, node_id: str) -> PeerInfo | None:
        """A live peer from the registry, or from the cache while it is down."""
        if node_id in self._revoked:
            return None
        peer = await self._try(lambda: self._inner.get_peer(node_id))
        if isinstance(peer, _Down):
            return self._peers.get(node_id)
        if peer is None:
            self._peers.pop(node_id, None)
        else:
            self._peers[node_id] = peer
            self._pins[node_id] = peer.public_key
        return peer

    async def pinned_key(self, node_id: str) -> str | None:
        """The pinned key from the registry, or from the cache while it is down."""
        key = await self._try(lambda: self._inner.pinned_key(node_id))
        if isinstance(key, _Down):
            return self._pins.get(node_id)
        if key is None:
            # Unknown to the registry, or its admission no longer verifies (an endorser
            # revoked, say): the outage copy must not keep serving it either.
            self._pins.pop(node_id, None)
        else:
            self._pins[node_id] = key
        return key

    async def is_revoked(self, node_id: str) -> bool:
        """Revoked if this node ever saw it revoked; else asks the registry (when it is up)."""
        if node_id in self._revoked:
            return True
        revoked = await self._try(lambda: self._inner.is_revoked(node_id))
        if isinstance(revoked, _Down):
            return False
        if revoked:
            self._learn_revoked({node_id})
        return revoked

    async def revoked_ids(self) -> frozenset[str]:
        """Every id revoked in the registry now or ever seen revoked by this node."""
        ids = await self._try(self._inner.revoked_ids)
        if not isinstance(ids, _Down) and not ids <= self._revoked:
            self._learn_revoked(ids)
        return frozenset(self._revoked)

    async def principals(self, node_ids: Sequence[str]) -> dict[str, str]:
        """Principals from the registry (remembered), or the remembered ones while it is down.

        A revoked id has none, here as in the registry.
        """
        wanted = [i for i in node_ids if i not in self._revoked]
        found = await self._try(lambda: self._inner.principals(wanted))
        if isinstance(found, _Down):
            return {i: self._principals[i] for i in wanted if i in self._principals}
        for node_id in wanted:
            if node_id in found:
                self._principals[node_id] = found[node_id]
            else:
                self._principals.pop(node_id, None)
        return found

    async def endorsement_for(self, node_id: str) -> Endorsement | None:
        """Pass-through (endorsements are not cached: they only matter for admission)."""
        return await self._write(self._inner.endorsement_for(node_id))

    # -- writes: always the backing directory --------------------------------------------

    async def _write(self, pending: Awaitable[_T]) -> _T:
        try:
            result = await pending
        except RegistryError as e:
            if _is_outage(e):
                self._mark_down(e)
            raise
        self._mark_up()
        return result

    async def issue_nonce(self) -> IssuedNonce:
        """Pass-through; fails while the registry is down."""
        return await self._write(self._inner.issue_nonce())

    async def register(
        self, reg: Registration, *, kept_proof: Registration | None = None
    ) -> PeerInfo:
        """Pass-through; fails while the registry is down; a success is cached."""
        peer = await self._write(self._inner.register(reg, kept_proof=kept_proof))
        self._peers[peer.node_id] = peer
        self._pins[peer.node_id] = peer.public_key
        return peer

    async def heartbeat(self, node_id: str) -> None:
        """Pass-through."""
        await self._write(self._inner.heartbeat(node_id))

    async def deregister(self, node_id: str) -> None:
        """Pass-through; the peer leaves the cached list too."""
        await self._write(self._inner.deregister(node_id))
        self._peers.pop(node_id, None)

    async def rotate_key(self, rotation: Mapping[str, Any]) -> None:
        """Pass-through; the cached pin follows."""
        await self._write(self._inner.rotate_key(rotation))
        node_id, new_key = rotation.get("node_id"), rotation.get("new_public_key")
        if isinstance(node_id, str) and isinstance(new_key, str):
            self._pins[node_id] = new_key
            self._peers.pop(node_id, None)

    async def revoke(self, revocation: Revocation) -> None:
        """Pass-through; the cache drops the peer at once."""
        await self._write(self._inner.revoke(revocation))
        self._learn_revoked({revocation.node_id})

    async def endorse(self, endorsement: Endorsement) -> None:
        """Pass-through."""
        await self._write(self._inner.endorse(endorsement))

    async def aclose(self) -> None:
        """Close the backing directory."""
        await self._inner.aclose()

    # -- state -----------------------------------------------------------------------------

    def _learn_revoked(self, ids: frozenset[str] | set[str]) -> None:
        """Add newly seen revocations for good, unlist them, and persist them at once."""
        self._revoked |= ids
        for node_id in ids:
            self._peers.pop(node_id, None)
        self._save()

    def _mark_down(self, e: RegistryError) -> None:
        if self.available:
            log.warning("registry unavailable; serving peers from cache", extra={"error": str(e)})
        self.available = False

    def _mark_up(self) -> None:
        if not self.available:
            log.info("registry reachable again")
        self.available = True

    def _save(self) -> None:
        if self._path is None:
            return
        data = {
            "version": _FILE_VERSION,
            "refreshed_at": format_ts(self._refreshed_at) if self._refreshed_at else None,
            "peers": [_peer_to_json(p) for p in self._peers.values()],
            "pins": self._pins,
            "revoked": sorted(self._revoked),
        }
        tmp = self._path.with_name(self._path.name + ".tmp")
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, sort_keys=True)
            # Atomic: a crash mid-write leaves the previous copy, never half a file.
            os.replace(tmp, self._path)
        except OSError as e:
            log.warning("cannot write peer cache", extra={"path": str(self._path), "error": str(e)})
            with contextlib.suppress(OSError):
                tmp.unlink()

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text())
            if data.get("version") != _FILE_VERSION:
                raise ValueError(f"unknown cache version {data.get('version')!r}")
            peers = [_peer_from_json(p) for p in data["peers"]]
            pins = {str(k): str(v) for k, v in data["pins"].items()}
            revoked = {str(i) for i in data["revoked"]}
            refreshed = parse_ts(data["refreshed_at"]) if data["refreshed_at"] else None
        except FileNotFoundError:
            return
        except Exception as e:
            # Any damage means "start with no cache", never a node that cannot start.
            log.warning(
                "ignoring unreadable peer cache", extra={"path": str(path), "error": str(e)}
            )
            return
        self._revoked |= revoked
        self._peers = {p.node_id: p for p in peers if p.node_id not in self._revoked}
        self._pins, self._refreshed_at = pins, refreshed


def _peer_to_json(p: PeerInfo) -> dict[str, Any]:
    return {
        "node_id": p.node_id,
        "public_key": p.public_key,
        "address": p.address,
        "domains": list(p.domains),
        "version": p.version,
        "registered_at": format_ts(p.registered_at),
    }


def _peer_from_json(d: Mapping[str, Any]) -> PeerInfo:
    return PeerInfo(
        node_id=str(d["node_id"]),
        public_key=str(d["public_key"]),
        address=str(d["address"]),
        domains=tuple(str(x) for x in d["domains"]),
        version=str(d["version"]),
        registered_at=parse_ts(d["registered_at"]),
    )
