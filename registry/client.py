"""``RegistryClient``: the node's side of the registry — register, heartbeat, re-register.

The node calls ``tick()`` every ``heartbeat_interval_s`` (no timers in here). A tick
heartbeats while registered; when the registry lost the node (TTL expired, data lost) or was
unreachable, the next tick registers again with a fresh nonce and the node's admission
material. An outage is never raised from ``tick()`` — the node keeps gossiping from its cache —
but a refusal (``AdmissionRefused``: revoked, key pinned elsewhere...) is.
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
from lamarck.registry.admission_file import read_admission, write_admission
from lamarck.registry.admitted_file import ADMITTED_FILE, read_admitted, write_admitted
from lamarck.registry.directory import PeerDirectory, PeerInfo
from lamarck.registry.params import AdmissionMode
from lamarck.registry.records import (
    Admission,
    Endorsement,
    EnrollmentToken,
    Registration,
    sign_registration,
)

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
        proof_path: Path | None = None,
    ) -> None:
        self._directory = directory
        self._identity = identity
        self._address = address
        self._domains = domains
        self._version = version
        self._mode = mode
        self._clock = clock
        self._token = enrollment_token
        # Where this node keeps the endorsement it was admitted with (``admission_file``):
        # presented again when the registry no longer has it (its Redis lost its data).
        self._proof_path = proof_path
        self._stored = read_admission(proof_path) if proof_path is not None else None
        # Next to it, the whole registration this node was first admitted with: a proof
        # judged at its own date, so it outlives the endorsement's validity.
        self._kept_path = proof_path.with_name(ADMITTED_FILE) if proof_path is not None else None
        self._kept = read_admitted(self._kept_path) if self._kept_path is not None else None
        self._endorsement = endorsement
        # Differs from identity.node_id only after a key rotation (the id stays, the key moves).
        self._node_id = node_id or identity.node_id
        self._rotation: Mapping[str, Any] | None = None
        self._registered = False

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

    async def register(self, stored: Endorsement | None = None) -> PeerInfo:
        """Register now: fresh nonce, signed registration with the admission material.

        The endorsement presented is the one given at construction, else the one an
        endorser published in the registry, else ``stored`` or the one kept in
        ``proof_path`` (what this node was admitted with before: a registry that lost its
        data must not lock it out). Once admitted with an endorsement, it is kept there.
        """
        endorsement = self._endorsement
        if endorsement is None and self._token is None and self._mode is AdmissionMode.ENDORSED:
            # An endorser may have published one for us in the registry.
            endorsement = await self._directory.endorsement_for(self._node_id)
            if endorsement is None:
                endorsement = stored if stored is not None else self._stored
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
        )
        try:
            peer = await self._directory.register(reg, kept_proof=self._kept)
        except RegistryError:
            self._registered = False
            raise
        self._registered = True
        rotated = self._rotation is not None
        # The pin has moved; later registrations are plain re-registrations under the new key.
        self._rotation = None
        if endorsement is not None:
            self._keep(endorsement)
        if self._kept is None and not rotated and (endorsement or self._token) is not None:
            self._keep_registration(reg)
        return peer

    def _keep_registration(self, reg: Registration) -> None:
        """Keep the registration this node was first admitted with (``admitted_file``)."""
        if self._kept_path is None:
            return
        try:
            write_admitted(self._kept_path, reg)
        except OSError as e:
            log.warning("cannot keep the admitted registration", extra={"error": str(e)})
            return
        self._kept = reg

    def _keep(self, endorsement: Endorsement) -> None:
        """Store the endorsement this node was admitted with (once, when it changes)."""
        if self._proof_path is None or endorsement == self._stored:
            return
        try:
            write_admission(self._proof_path, endorsement)
        except OSError as e:
            # Admission itself succeeded; only the copy for a future data loss is missing.
            log.warning("cannot keep the admission proof", extra={"error": str(e)})
            return
        self._stored = endorsement

    async def tick(self) -> TickResult:
        """Heartbeat, or (re-)register if not listed; outages are reported, not raised."""
        try:
            if self._registered:
                try:
                    await self._directory.heartbeat(self._node_id)
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
