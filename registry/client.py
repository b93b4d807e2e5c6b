"""``RegistryClient``: the node's side of the registry — register, heartbeat, re-register.

The node calls ``tick()`` every ``heartbeat_interval_s`` (no timers in here). A tick
heartbeats while registered; when the registry lost the node (TTL expired, data lost) or was
unreachable, the next tick registers again with a fresh nonce and the node's admission
material. An outage is never raised from ``tick()`` — the node keeps gossiping from its cache —
but a refusal (``AdmissionRefused``: revoked, key pinned elsewhere...) is.

With ``kept_path`` (``<home>/admitted.json``, ``lamarck.registry.admitted_file``) the client
keeps a copy of its id's admission proof as the registry holds it (copied after each
registration, and again after a key rotation) and presents it with every registration: a
registry that lost its data re-admits the id on it (``RecordDirectory.register``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from lamarck.errors import RegistryError
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.registry.admitted_file import read_admitted, write_admitted
from lamarck.registry.directory import PeerDirectory, PeerInfo
from lamarck.registry.params import AdmissionMode
from lamarck.registry.records import (
    Admission,
    AdmissionProof,
    Endorsement,
    EnrollmentToken,
    sign_registration,
)
from lamarck.registry.rules import lineage_ids

__all__ = ["RegistryClient", "TickResult"]

log = logging.getLogger(__name__)


class TickResult(StrEnum):
    """What a ``tick()`` did."""

    REGISTERED = "registered"
    HEARTBEAT = "heartbeat"
    UNAVAILABLE = "unavailable"


class RegistryClient:
    """Registers this node (proof of key + admission material) and keeps it live."""

    def __init__(
        self,
        directory: PeerDirectory,
        identity: NodeIdentity,
        *,
        address: str,
        domains: tuple[str, ...],
        version: str,
        mode: AdmissionMode,
        clock: Clock,
        enrollment_token: EnrollmentToken | None = None,
        endorsement: Endorsement | None = None,
        node_id: str | None = None,
        kept_path: Path | None = None,
        tls_certificate: str | None = None,
        label: str | None = None,
    ) -> None:
        """``label``: this node's own human label, signed into its registration (an
        enrollment token's label wins over it where peers show it)."""
        self._directory = directory
        self._identity = identity
        self._address = address
        self._domains = domains
        self._version = version
        self._mode = mode
        self._clock = clock
        self._token = enrollment_token
        self._endorsement = endorsement
        # Where this node keeps its admission proof (``admitted_file``), presented with every
        # registration so that a registry that lost its data re-admits it.
        self._kept_path = kept_path
        self._kept = read_admitted(kept_path) if kept_path is not None else None
        # Whether the kept copy was compared with the registry's proof since it last changed
        # (a registration); until then every tick tries again.
        self._kept_current = False
        # Differs from identity.node_id only after a key rotation (the id stays, the key moves).
        self._node_id = node_id or identity.node_id
        self._rotation: Mapping[str, Any] | None = None
        self._registered = False
        # The peer-port certificate the registration binds to this id (None: plaintext).
        self._tls_certificate = tls_certificate
        self._label = label or None

    @property
    def node_id(self) -> str:
        """The id this client registers."""
        return self._node_id

    @property
    def registered(self) -> bool:
        """Whether the last registry interaction left this node listed."""
        return self._registered

    def use_rotation(self, identity: NodeIdentity, rotation: Mapping[str, Any]) -> None:
        """Switch to a new key; the next registration carries ``rotation`` (signed by the old)."""
        self._identity = identity
        self._rotation = rotation
        self._registered = False

    def use_tls_certificate(self, certificate: str) -> None:
        """Switch to a new TLS certificate (base64url DER); registers again at the next tick,
        so peers pin the new one."""
        self._tls_certificate = certificate
        self._registered = False

    async def register(self) -> PeerInfo:
        """Register now: fresh nonce, signed registration with the admission material.

        The endorsement presented is the one given at construction, else the one an endorser
        published in the registry. The kept admission proof goes with it (with the pending
        rotation as its last link, after a key rotation): a registry that lost this id
        re-admits it on that. Once admitted, the registry's proof is copied into
        ``kept_path``.
        """
        endorsement = self._endorsement
        if endorsement is None and self._token is None and self._mode is AdmissionMode.ENDORSED:
            # An endorser may have published one for us in the registry.
            endorsement = await self._directory.endorsement_for(self._node_id)
        nonce = await self._directory.issue_nonce()
        reg = sign_registration(
            self._identity,
            node_id=self._node_id,
            address=self._address,
            domains=self._domains,
            version=self._version,
            nonce=nonce.nonce,
            admission=Admission(
                mode=self._mode, endorsement=endorsement, enrollment_token=self._token
            ),
            created_at=self._clock.now(),
            rotation=dict(self._rotation) if self._rotation is not None else None,
            tls_certificate=self._tls_certificate,
            label=self._label,
        )
        kept = self._kept
        if kept is not None and self._rotation is not None:
            # The chain must lead to the key registered now.
            kept = kept.with_rotation(self._rotation)
        try:
            peer = await self._directory.register(reg, kept_proof=kept)
        except RegistryError:
            self._registered = False
            raise
        self._registered = True
        # The pin has moved; later registrations are plain re-registrations under the new key.
        self._rotation = None
        self._kept_current = False
        await self._keep_proof()
        return peer

    async def _keep_proof(self) -> None:
        """Copy this id's admission proof from the registry into ``kept_path`` if it changed.

        Neither an outage nor an unwritable home (logged) is raised: admission itself
        succeeded, and the next tick tries again.
        """
        if self._kept_path is None or self._kept_current:
            return
        try:
            proof = await self._directory.admission_proof(self._node_id)
        except RegistryError as e:
            if e.reason != "unavailable":
                raise
            return
        if proof is not None and proof != self._kept:
            if not self._is_mine(proof):
                # The registry verified it for itself; this node keeps only its own.
                log.warning("the registry's admission proof is not this node's; not kept")
                self._kept_current = True
                return
            try:
                write_admitted(self._kept_path, proof)
            except OSError as e:
                log.warning("cannot keep the admission proof", extra={"error": str(e)})
                return
            self._kept = proof
        self._kept_current = True

    def _is_mine(self, proof: AdmissionProof) -> bool:
        """Whether ``proof`` is this id's and leads to this node's current key."""
        # After a key rotation this node's id is a successor of the proof's registered id.
        return (
            self._node_id in lineage_ids(proof.keys)
            and proof.keys[-1] == self._identity.public_key_b64
        )

    async def tick(self) -> TickResult:
        """Heartbeat, or (re-)register if not listed; outages are reported, not raised."""
        try:
            if self._registered:
                try:
                    await self._directory.heartbeat(self._node_id)
                    await self._keep_proof()
                    return TickResult.HEARTBEAT
                except RegistryError as e:
                    if e.reason != "not_registered":
                        raise
                    log.info("registry forgot this node; registering again")
            await self.register()
            return TickResult.REGISTERED
        except RegistryError as e:
            if e.reason != "unavailable":
                raise
            # Register again once it is back: the registry may have lost our entry meanwhile.
            self._registered = False
            return TickResult.UNAVAILABLE

    async def deregister(self) -> None:
        """Leave the live peer list (clean shutdown)."""
        await self._directory.deregister(self._node_id)
        self._registered = False
