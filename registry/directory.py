"""The ``PeerDirectory`` port: who exists, their pinned keys, admission, liveness, and the
operator's signed statements (revocations of identities, retractions of records).

Adapters: ``lamarck.registry.redis_directory.RedisPeerDirectory`` (the real one),
``lamarck.registry.memory_directory.InMemoryPeerDirectory`` (the same directory logic,
``lamarck.registry.record_directory.RecordDirectory``, over records in memory) and
``lamarck.registry.cache.CachedDirectory`` (wraps another directory and serves reads from a
local copy when it is down). One contract suite runs against each
(``tests/contract/test_peer_directory_contract.py``). Admission and pinning decisions are the
pure rules of ``lamarck.registry.rules``; adapters look up the values those rules need and
persist the result.

The registry is how the network spreads operator-signed statements. The operator publishes
a revocation (``revoke``) or a retraction of one record (``retract``) once, in the shared
registry; every node reads the registry at each refresh (``CachedDirectory.refresh``, every
registry round of its membership) and its taint sweep reads them again (every
``sweep_interval_s``), each node judging each record against its own configured operator
key. The records never expire, so a node that was offline (or not yet started) when one was
made acts on it at its first read once it is back; a node keeps every one it has seen,
through an outage and a restart, so deleting the record from the registry later undoes
nothing for it.

Every method raises ``RegistryError`` (reason ``unavailable`` when the backing store cannot be
reached) or ``AdmissionRefused`` for a refused registration.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lamarck.errors import InvalidRecord, RegistryError
from lamarck.proto.timefmt import parse_ts
from lamarck.registry.records import (
    AdmissionProof,
    Endorsement,
    Registration,
    RegistrySeal,
    Retraction,
    Revocation,
)

__all__ = ["IssuedNonce", "PeerDirectory", "PeerInfo"]


@dataclass(frozen=True, slots=True)
class PeerInfo:
    """A live, admitted peer as the rest of the node sees it."""

    node_id: str
    public_key: str
    address: str
    domains: tuple[str, ...]
    version: str
    registered_at: datetime
    #: When the peer signed this registration (its ``created_at``): a node keeps the latest
    #: it has seen per peer and refuses an older one replayed into the registry.
    signed_at: datetime | None = None
    #: The peer's TLS certificate as its signed registration carries it (unpadded base64url
    #: DER), ``""`` for a peer that registered none.
    tls_certificate: str = ""
    #: The peer's human label (``Registration.shown_label``; ``""``: none): a claim shown
    #: beside its id, never instead of it.
    label: str = ""

    @classmethod
    def from_registration(cls, reg: Registration, registered_at: datetime) -> PeerInfo:
        """The peer a registration describes."""
        return cls(
            node_id=reg.node_id,
            public_key=reg.public_key,
            address=reg.address,
            domains=reg.domains,
            version=reg.version,
            registered_at=registered_at,
            signed_at=parse_ts(reg.created_at),
            tls_certificate=reg.tls_certificate or "",
            label=reg.shown_label,
        )


@dataclass(frozen=True, slots=True)
class IssuedNonce:
    """A single-use registry nonce and when it stops being accepted."""

    nonce: str
    expires_at: datetime


class PeerDirectory(abc.ABC):
    """Abstract, async peer directory (the registry as seen by a node)."""

    @abc.abstractmethod
    async def issue_nonce(self) -> IssuedNonce:
        """Issue a fresh single-use nonce for a registration to sign."""

    @abc.abstractmethod
    async def register(
        self, reg: Registration, *, kept_proof: AdmissionProof | None = None
    ) -> PeerInfo:
        """Admit (or refuse with ``AdmissionRefused``) and list ``reg``; consumes its nonce.

        ``kept_proof``: the id's admission proof as the node kept it (``admitted_file``); it
        may re-admit an id the registry lost (see ``RecordDirectory.register``)."""

    @abc.abstractmethod
    async def admission_proof(self, node_id: str) -> AdmissionProof | None:
        """``node_id``'s admission proof (admitted registration and key rotations since), if
        it verifies for this directory; ``None`` otherwise. Revocation is not judged here."""

    @abc.abstractmethod
    async def heartbeat(self, node_id: str) -> None:
        """Keep ``node_id`` live for another TTL; ``RegistryError(not_registered)`` if gone."""

    @abc.abstractmethod
    async def deregister(self, node_id: str) -> None:
        """Remove ``node_id`` from the live peers at once (its key pin stays)."""

    @abc.abstractmethod
    async def live_peers(self) -> list[PeerInfo]:
        """Every registered, heartbeating, non-revoked peer."""

    @abc.abstractmethod
    async def get_peer(self, node_id: str) -> PeerInfo | None:
        """The live peer ``node_id``, or ``None``."""

    @abc.abstractmethod
    async def pinned_key(self, node_id: str) -> str | None:
        """The key ``node_id`` is bound to (live or not), or ``None`` for an unknown id."""

    @abc.abstractmethod
    async def rotate_key(self, rotation: Mapping[str, Any]) -> None:
        """Move a pin to a new key, if ``rotation`` (the wire form of a ``KeyRotation``,
        ``lamarck.proto.keys``) is signed by the pinned key; else ``AdmissionRefused``."""

    @abc.abstractmethod
    async def revoke(self, revocation: Revocation) -> None:
        """Revoke an id (operator-signed): refused everywhere from now on."""

    @abc.abstractmethod
    async def is_revoked(self, node_id: str) -> bool:
        """Whether ``node_id`` is revoked."""

    @abc.abstractmethod
    async def revoked_ids(self) -> frozenset[str]:
        """All revoked ids."""

    @abc.abstractmethod
    async def retract(self, retraction: Retraction) -> None:
        """Publish an operator-signed retraction of one record (checked first: anything the
        network's operator key did not sign is refused, ``RegistryError(bad_retraction)``)."""

    @abc.abstractmethod
    async def retractions(self) -> tuple[Retraction, ...]:
        """Every retraction on record that the operator signed, by content hash."""

    @abc.abstractmethod
    async def endorse(self, endorsement: Endorsement) -> None:
        """Publish an endorsement (checked) for its endorsee to pick up when it registers."""

    @abc.abstractmethod
    async def endorsement_for(self, node_id: str) -> Endorsement | None:
        """The latest unexpired endorsement published for ``node_id``, or ``None``."""

    @abc.abstractmethod
    async def principals(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The principal of each admitted, non-revoked id of ``node_ids``: the operator key
        that admitted it, or the root of its endorsement chain (ids it cannot vouch for are
        absent, and count for nothing)."""

    @abc.abstractmethod
    async def revoked_through(self, node_ids: Sequence[str]) -> dict[str, str]:
        """For each of ``node_ids`` that is revoked or admitted through a revoked identity
        (an endorser anywhere on its admission chain), that identity; the others are absent.
        Revoking an identity reaches everyone it admitted (``lamarck.registry.proofs``)."""

    async def principal_of(self, node_id: str) -> str | None:
        """``node_id``'s principal, or ``None`` (unknown, unproven or revoked)."""
        return (await self.principals([node_id])).get(node_id)

    async def seal(self) -> RegistrySeal | None:
        """The operator's current seal, verified (``None``: none, or this directory keeps
        none)."""
        return None

    async def publish_seal(self, seal: RegistrySeal) -> None:
        """Publish a newer operator seal (``RegistryError``: not supported here)."""
        raise RegistryError("this directory keeps no seal", reason="unsupported")

    async def key_valid_at(self, node_id: str, key: str, at: datetime) -> bool:
        """Whether ``key`` was ``node_id``'s key at ``at``: its admission proof (verified by
        the directory serving it) has a rotation retiring ``key`` dated no earlier than
        ``at``. The current key is not asked here (``pinned_key``)."""
        proof = await self.admission_proof(node_id)
        if proof is None:
            return False
        for rotation in proof.rotations:
            if rotation.get("old_public_key") == key:
                try:
                    return at <= parse_ts(str(rotation.get("created_at")))
                except InvalidRecord:
                    return False
        return False

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most adapters hold nothing
        """Release connections; the default holds none."""
