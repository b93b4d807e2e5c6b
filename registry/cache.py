"""``CachedDirectory``: a node's local copy of the peer list, pins, revocations and
retractions.

Reads go to the backing directory and refresh the copy; when it is unavailable they are
served from the copy, so gossip and imports keep working through a Redis outage. Writes
(nonces, registrations, heartbeats, rotations, revocations, retractions, endorsements) always
go to the backing directory and fail with ``RegistryError(reason="unavailable")`` while it is
down: nobody can be admitted without the registry.

The copy lives in memory and, when a path is given, in a JSON file in the node's home, so a
node restarted during an outage still knows its peers. ``refresh()`` pulls a fresh copy; the
node calls it after each heartbeat (``heartbeat_interval_s``; no timers in here).

Revocations are never forgotten: the backing directory reports only revocations the
operator signed, and the copy keeps the union of every one it has been told of (in memory
and in the file), so somebody deleting Redis keys later cannot un-revoke an id for this node.
Retractions of records likewise: each operator-signed retraction seen is kept for good.

The operator's seal (``RegistrySeal``) is held to: the copy keeps the highest ``seq`` it has
seen (in the file too) and never goes back. A registry that serves an older seal, another seal
of the same ``seq``, or none, rolled back (logged once per seal, copy kept); the held seal's
revocations are learnt for good and its pins answer for ids whose records Redis lost. Each
peer's registration is held to the latest one seen (its signed ``created_at``, kept in the file):
an older one replayed into the registry is refused (logged), the peer keeps its last address.

Retired keys are never believed again. When the registry serves an id a pin other than the
cached one (or, on first sight, a key the id is not derived from), the copy reads the id's
verified admission proof (``admission_proof``): every key of its rotation chain before the
pin was retired by a rotation its own key signed. So was the key an id is derived from once
a pin it is not derived from was served (chains never return to a retired key). These are
remembered for good, in the file too; a registry that later serves a retired key as the pin
(it lost its data, and somebody holding the old key and the id's old proof re-registered) is
refused: the id counts as unregistered for it, its listing is dropped, and this is logged
once per id and key.

Principals are read on every recall that shows an imported lesson, so the copy answers them
from a short-lived view (``principal_view_s``, 0: none): an id looked up less than that long
ago is answered from the view, the others are asked of the registry in one call. The view is
emptied by every refresh and by every revocation this node learns, and a revoked id never has a
principal, so a revocation this node knows of takes effect at once; one it has not learnt yet
(an endorser revoked elsewhere) takes effect within ``principal_view_s`` of the next lookup.
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

from lamarck.errors import InvalidRecord, LamarckError, RegistryError
from lamarck.proto.clock import Clock
from lamarck.proto.identity import b64u_decode, node_id_for
from lamarck.proto.labels import check_label
from lamarck.proto.timefmt import format_ts, parse_ts
from lamarck.registry.directory import IssuedNonce, PeerDirectory, PeerInfo
from lamarck.registry.records import (
    AdmissionProof,
    Endorsement,
    Registration,
    RegistrySeal,
    Retraction,
    Revocation,
)

__all__ = ["CachedDirectory", "cached_peer_ids"]

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

    def __init__(
        self,
        inner: PeerDirectory,
        *,
        clock: Clock,
        path: Path | None = None,
        principal_view_s: float = 0.0,
    ) -> None:
        """``principal_view_s``: how long a principal lookup is answered from the view (0:
        every lookup asks the registry)."""
        self._inner = inner
        self._principal_view_s = principal_view_s
        # The short-lived principal view: id -> (principal or "" for none, when looked up).
        self._view: dict[str, tuple[str, datetime]] = {}
        self._clock = clock
        self._path = path
        self._peers: dict[str, PeerInfo] = {}
        self._pins: dict[str, str] = {}
        # Principals seen while the registry answered (in memory only: re-learnt after a restart).
        self._principals: dict[str, str] = {}
        self._revoked: set[str] = set()
        # Ids admitted through a revoked identity, with it, as last answered (in memory only).
        self._through: dict[str, str] = {}
        # Every operator-signed retraction seen, by the content hash it retracts.
        self._retractions: dict[str, Retraction] = {}
        # Per id, the keys a verified rotation retired: never believed again as its pin.
        self._retired: dict[str, set[str]] = {}
        # (id, key) pairs already logged as a retired key served as the pin.
        self._refusals_logged: set[tuple[str, str]] = set()
        # The operator's seal with the highest seq seen (never replaced by a lower one).
        self._seal: RegistrySeal | None = None
        # Rollbacks already logged, by the seq the registry served (-1: none served).
        self._rollbacks_logged: set[int] = set()
        # Per peer, the newest registration signing time seen: an older one is a replay.
        self._signed_at: dict[str, datetime] = {}
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
        """Pull live peers, revocations and retractions; False (logged, copy kept) if
        unavailable."""
        try:
            peers = await self._inner.live_peers()
            revoked = await self._inner.revoked_ids()
            retractions = await self._inner.retractions()
            seal = await self._inner.seal()
        except RegistryError as e:
            if not _is_outage(e):
                raise
            self._mark_down(e)
            return False
        self._mark_up()
        self._hold_seal(seal)
        if self._seal is not None:
            revoked = revoked | frozenset(self._seal.revoked)
        # Pins are kept for peers that went quiet: their lessons still need verifying.
        peers = await self._believed(peers)
        self._peers = {p.node_id: p for p in peers}
        # A union, never a replacement: an id gone from the registry's revoked set was
        # un-revoked by nobody entitled to (there is no such operation).
        self._revoked |= revoked
        for node_id in self._revoked:
            self._peers.pop(node_id, None)
        for retraction in retractions:
            self._retractions.setdefault(retraction.content_hash, retraction)
        self._refreshed_at = self._clock.now()
        self._view.clear()
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
        peers = await self._believed([p for p in peers if p.node_id not in self._revoked])
        self._peers = {p.node_id: p for p in peers}
        return peers

    async def get_peer(self, node_id: str) -> PeerInfo | None:
        """A live peer from the registry, or from the cache while it is down."""
        if node_id in self._revoked:
            return None
        peer = await self._try(lambda: self._inner.get_peer(node_id))
        if isinstance(peer, _Down):
            return self._peers.get(node_id)
        if peer is not None and not (
            self._fresh(peer) and await self._believe(node_id, peer.public_key)
        ):
            peer = None
        if peer is None:
            self._peers.pop(node_id, None)
        else:
            self._peers[node_id] = peer
        return peer

    async def pinned_key(self, node_id: str) -> str | None:
        """The pinned key from the registry, or from the cache while it is down."""
        key = await self._try(lambda: self._inner.pinned_key(node_id))
        if isinstance(key, _Down):
            return self._pins.get(node_id)
        if key is None:
            sealed = self._sealed_pin(node_id)
            if sealed is not None:
                return sealed
            # Unknown to the registry, or its admission no longer verifies (an endorser
            # revoked, say): the outage copy must not keep serving it either.
            self._pins.pop(node_id, None)
        elif not await self._believe(node_id, key):
            return None
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

    async def retractions(self) -> tuple[Retraction, ...]:
        """Every retraction in the registry now or ever seen by this node, by content hash."""
        found = await self._try(self._inner.retractions)
        if not isinstance(found, _Down):
            self._learn_retractions(found)
        return tuple(self._retractions[h] for h in sorted(self._retractions))

    async def principals(self, node_ids: Sequence[str]) -> dict[str, str]:
        """Principals from the view while fresh, else from the registry (remembered), or the
        remembered ones while it is down.

        A revoked id has none, here as in the registry.
        """
        wanted = [i for i in dict.fromkeys(node_ids) if i not in self._revoked]
        now = self._clock.now()
        viewed: dict[str, str] = {}
        stale: list[str] = []
        for node_id in wanted:
            seen = self._view.get(node_id)
            if seen is not None and (now - seen[1]).total_seconds() < self._principal_view_s:
                if seen[0]:
                    viewed[node_id] = seen[0]
            else:
                stale.append(node_id)
        if not stale:
            return viewed
        found = await self._try(lambda: self._inner.principals(stale))
        if isinstance(found, _Down):
            return viewed | {i: self._principals[i] for i in stale if i in self._principals}
        for node_id in stale:
            if node_id in found:
                self._principals[node_id] = found[node_id]
            else:
                self._principals.pop(node_id, None)
            if self._principal_view_s > 0:
                self._view[node_id] = (found.get(node_id, ""), now)
        return viewed | {i: found[i] for i in stale if i in found}

    async def revoked_through(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The registry's answer (remembered), or the remembered one while it is down; an id
        this node saw revoked is revoked through itself, here as in the registry."""
        found = {i: i for i in node_ids if i in self._revoked}
        wanted = [i for i in node_ids if i not in found]
        answer = await self._try(lambda: self._inner.revoked_through(wanted))
        if isinstance(answer, _Down):
            return found | {i: self._through[i] for i in wanted if i in self._through}
        for node_id in wanted:
            if node_id in answer:
                self._through[node_id] = answer[node_id]
            else:
                # Registered again with new material: its chain no longer runs there.
                self._through.pop(node_id, None)
        return found | answer

    async def endorsement_for(self, node_id: str) -> Endorsement | None:
        """Pass-through (endorsements are not cached: they only matter for admission)."""
        return await self._write(self._inner.endorsement_for(node_id))

    async def admission_proof(self, node_id: str) -> AdmissionProof | None:
        """Pass-through (not cached: a node keeps its own in ``admitted.json``)."""
        return await self._write(self._inner.admission_proof(node_id))

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
        self, reg: Registration, *, kept_proof: AdmissionProof | None = None
    ) -> PeerInfo:
        """Pass-through; fails while the registry is down; a success is cached."""
        peer = await self._write(self._inner.register(reg, kept_proof=kept_proof))
        old_key = reg.rotation.get("old_public_key") if reg.rotation is not None else None
        if isinstance(old_key, str) and old_key != peer.public_key:
            # The registry moved (or restored) the pin on this rotation, signed by the old key.
            self._retire(peer.node_id, {old_key})
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
        old_key = rotation.get("old_public_key")
        if isinstance(node_id, str) and isinstance(new_key, str):
            if isinstance(old_key, str):
                # The registry moved the pin on this rotation, signed by the old key.
                self._retired.setdefault(node_id, set()).add(old_key)
            self._pins[node_id] = new_key
            self._peers.pop(node_id, None)
            self._save()

    async def revoke(self, revocation: Revocation) -> None:
        """Pass-through; the cache drops the peer at once."""
        await self._write(self._inner.revoke(revocation))
        self._learn_revoked({revocation.node_id})

    async def retract(self, retraction: Retraction) -> None:
        """Pass-through; the copy keeps it at once."""
        await self._write(self._inner.retract(retraction))
        self._learn_retractions((retraction,))

    async def endorse(self, endorsement: Endorsement) -> None:
        """Pass-through."""
        await self._write(self._inner.endorse(endorsement))

    async def aclose(self) -> None:
        """Close the backing directory."""
        await self._inner.aclose()

    # -- state -----------------------------------------------------------------------------

    async def _believed(self, peers: Sequence[PeerInfo]) -> list[PeerInfo]:
        """Those of ``peers`` whose registration is not older than the latest seen and whose
        key this node believes as their pin (see ``_believe``)."""
        believed = []
        for peer in peers:
            if not self._fresh(peer):
                # A replayed older registration: the peer keeps the newer one this node saw.
                kept = self._peers.get(peer.node_id)
                if kept is None or kept.signed_at != self._signed_at.get(peer.node_id):
                    continue
                peer = kept
            if await self._believe(peer.node_id, peer.public_key):
                believed.append(peer)
        return believed

    def _fresh(self, peer: PeerInfo) -> bool:
        """Whether ``peer``'s registration is the newest seen for it (remembered if newer)."""
        if peer.signed_at is None:
            return True
        seen = self._signed_at.get(peer.node_id)
        if seen is not None and peer.signed_at < seen:
            log.error(
                "registry serves a registration older than one already seen; refused (replayed)",
                extra={"node_id": peer.node_id, "signed_at": format_ts(peer.signed_at)},
            )
            return False
        if seen != peer.signed_at:
            self._signed_at[peer.node_id] = peer.signed_at
        return True

    def _hold_seal(self, served: RegistrySeal | None) -> None:
        """Adopt a newer seal (its revocations learnt for good); log a rollback once."""
        held = self._seal
        if served is not None and (held is None or served.seq > held.seq):
            self._seal = served
            self._learn_revoked(set(served.revoked))
            return
        if held is None or served == held:
            return
        at = -1 if served is None else served.seq
        if at not in self._rollbacks_logged:
            self._rollbacks_logged.add(at)
            log.error(
                "registry rolled back the operator's seal; holding seal %d (served: %s)",
                held.seq,
                "none" if served is None else f"seal {served.seq}",
                extra={"held_seq": held.seq, "served_seq": at},
            )

    @property
    def seal_seq(self) -> int:
        """The highest seal seq this node holds (0: none)."""
        return self._seal.seq if self._seal is not None else 0

    async def seal(self) -> RegistrySeal | None:
        """The seal this node holds (the highest seen; never an older one the registry serves)."""
        return self._seal

    async def publish_seal(self, seal: RegistrySeal) -> None:
        """Pass-through; held at once."""
        await self._write(self._inner.publish_seal(seal))
        self._hold_seal(seal)
        self._save()

    async def key_revoked_since(self, key: str) -> datetime | None:
        """Since when the held seal revokes ``key`` as compromised (``None``: never)."""
        seal = self._seal
        since = seal.revoked_keys.get(key) if seal is not None else None
        return parse_ts(since) if since is not None else None

    def _sealed_pin(self, node_id: str) -> str | None:
        """The held seal's pin for ``node_id`` (its records lost by the registry), logged."""
        seal = self._seal
        if seal is None or node_id not in seal.pins or node_id in self._revoked:
            return None
        log.warning(
            "registry lost an admitted id's records; pin served from the held seal",
            extra={"node_id": node_id},
        )
        return seal.pins[node_id]

    async def _believe(self, node_id: str, key: str) -> bool:
        """Whether ``key``, served by the registry as ``node_id``'s pin, is believed; a new
        pin is learnt (with the keys its rotation chain retired), a retired one refused."""
        cached = self._pins.get(node_id)
        if key != cached and key not in self._retired.get(node_id, ()):
            if cached is not None and not _derives(node_id, cached) and _derives(node_id, key):
                # A pin reached by rotation was served before: the id's own key was retired.
                self._retire(node_id, {key})
            elif cached is not None or not _derives(node_id, key):
                await self._learn_retired(node_id, key)
        if key in self._retired.get(node_id, ()):
            if (node_id, key) not in self._refusals_logged:
                self._refusals_logged.add((node_id, key))
                log.error(
                    "registry serves a retired key as the pin; refused (did the registry "
                    "lose its data?)",
                    extra={"node_id": node_id, "key": key},
                )
            return False
        # Persisted with the next refresh, as every pin (retirements are saved at once).
        self._pins[node_id] = key
        return True

    async def _learn_retired(self, node_id: str, key: str) -> None:
        """Read ``node_id``'s verified proof; the keys its chain retired before ``key``."""
        try:
            proof = await self._inner.admission_proof(node_id)
        except RegistryError as e:
            if not _is_outage(e):
                raise
            return  # learnt at the next change seen
        if proof is not None and key in proof.keys:
            retired = set(proof.keys[: proof.keys.index(key)])
            if retired:
                self._retire(node_id, retired)

    def _retire(self, node_id: str, keys: set[str]) -> None:
        """Remember ``keys`` as retired for ``node_id`` for good (persisted at once)."""
        known = self._retired.setdefault(node_id, set())
        if not keys <= known:
            known |= keys
            self._save()

    def _learn_revoked(self, ids: frozenset[str] | set[str]) -> None:
        """Add newly seen revocations for good, unlist them, and persist them at once."""
        self._revoked |= ids
        for node_id in ids:
            self._peers.pop(node_id, None)
        # Admissions through a revoked id lapse with it: no principal is answered from before.
        self._view.clear()
        self._save()

    def _learn_retractions(self, found: Sequence[Retraction]) -> None:
        """Keep newly seen retractions for good and persist them at once."""
        new = {r.content_hash: r for r in found if r.content_hash not in self._retractions}
        if new:
            self._retractions.update(new)
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
            "retractions": [self._retractions[h].wire() for h in sorted(self._retractions)],
            "retired": {i: sorted(keys) for i, keys in sorted(self._retired.items())},
            "seal": self._seal.wire() if self._seal is not None else None,
            "signed_at": {i: format_ts(t) for i, t in sorted(self._signed_at.items())},
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
            # Absent from files written before retired keys were kept.
            retired = {str(i): {str(k) for k in ks} for i, ks in data.get("retired", {}).items()}
            # Absent from files written before retractions were kept.
            retractions = [Retraction.from_wire(r) for r in data.get("retractions", [])]
            # Absent from files written before seals and registration times were kept.
            seal = RegistrySeal.from_wire(data["seal"]) if data.get("seal") else None
            signed_at = {str(i): parse_ts(t) for i, t in data.get("signed_at", {}).items()}
            refreshed = parse_ts(data["refreshed_at"]) if data["refreshed_at"] else None
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, AttributeError, LamarckError) as e:
            # Any damage means "start with no cache", never a node that cannot start.
            log.warning(
                "ignoring unreadable peer cache", extra={"path": str(path), "error": str(e)}
            )
            return
        self._revoked |= revoked
        self._retractions.update((r.content_hash, r) for r in retractions)
        for node_id, keys in retired.items():
            self._retired.setdefault(node_id, set()).update(keys)
        self._seal, self._signed_at = seal, signed_at
        self._peers = {p.node_id: p for p in peers if p.node_id not in self._revoked}
        self._pins, self._refreshed_at = pins, refreshed


def _derives(node_id: str, key: str) -> bool:
    """Whether ``node_id`` is the id derived from ``key`` (its first key)."""
    try:
        return node_id_for(b64u_decode(key)) == node_id
    except InvalidRecord:
        return False


def _peer_to_json(p: PeerInfo) -> dict[str, Any]:
    return {
        "node_id": p.node_id,
        "public_key": p.public_key,
        "address": p.address,
        "domains": list(p.domains),
        "version": p.version,
        "registered_at": format_ts(p.registered_at),
        "signed_at": format_ts(p.signed_at) if p.signed_at is not None else None,
        "tls_certificate": p.tls_certificate,
        "label": p.label,
    }


def _peer_from_json(d: Mapping[str, Any]) -> PeerInfo:
    return PeerInfo(
        node_id=str(d["node_id"]),
        public_key=str(d["public_key"]),
        address=str(d["address"]),
        domains=tuple(str(x) for x in d["domains"]),
        version=str(d["version"]),
        registered_at=parse_ts(d["registered_at"]),
        # Absent from files written before registration times were kept.
        signed_at=parse_ts(d["signed_at"]) if d.get("signed_at") else None,
        tls_certificate=str(d.get("tls_certificate") or ""),
        label=_cached_label(d.get("label")),
    )


def _cached_label(value: object) -> str:
    """A label read back from the cache file: shown only if it still passes the label rule."""
    if not isinstance(value, str) or not value:
        return ""
    try:
        return check_label(value)
    except InvalidRecord:
        return ""


def cached_peer_ids(path: Path) -> set[str]:
    """The node ids in a peer-cache file (``CachedDirectory``'s, which it replaces whole at
    each refresh): empty when there is none yet or it cannot be read."""
    try:
        data = json.loads(path.read_text())
        return {str(p["node_id"]) for p in data["peers"]}
    except (FileNotFoundError, json.JSONDecodeError, KeyError, TypeError):
        return set()
