"""``InMemoryPeerDirectory``: the ``PeerDirectory`` port in process memory.

The same directory as the Redis adapter (``lamarck.registry.record_directory.RecordDirectory``
over the same records), with the records in dicts and every expiry (nonces, listings,
endorsements) judged by the injected clock instead of Redis's. For unit tests, the fleet
simulator and single-process networks; nothing survives the process. Each record operation
runs without an await inside, so it is atomic like the Redis scripts it stands for.

``InMemoryRecords`` may be shared by several directories (several nodes reading one registry
with their own mode and operator key), as a Redis namespace is.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from lamarck.proto.clock import Clock
from lamarck.registry.directory_records import DirectoryRecords, Heartbeat, Listed
from lamarck.registry.params import RegistryParams
from lamarck.registry.proofs import IdFacts, ProofParams
from lamarck.registry.record_directory import RecordDirectory
from lamarck.reputation.params import PrincipalParams

__all__ = ["InMemoryPeerDirectory", "InMemoryRecords"]


@dataclass(slots=True)
class _Expiring:
    """A value and the instant it stops being readable."""

    value: str
    expires_at: datetime


@dataclass(slots=True)
class _Records:
    nonces: dict[str, _Expiring] = field(default_factory=dict)
    pins: dict[str, str] = field(default_factory=dict)
    admissions: dict[str, str] = field(default_factory=dict)
    rotations: dict[str, list[str]] = field(default_factory=dict)
    listings: dict[str, _Expiring] = field(default_factory=dict)
    #: Ids that may be listed (pruned by ``listed``), as the Redis ``peers`` set.
    index: set[str] = field(default_factory=set)
    revoked: set[str] = field(default_factory=set)
    revocations: dict[str, str] = field(default_factory=dict)
    #: Per content hash, its retraction record (the Redis ``retractions`` hash: one key).
    retractions: dict[str, str] = field(default_factory=dict)
    endorsements: dict[str, _Expiring] = field(default_factory=dict)
    #: Per endorser, the ids it admitted (the Redis ``endorsees:<id>`` sets).
    endorsees: dict[str, set[str]] = field(default_factory=dict)
    #: The operator's current seal (the Redis ``seal`` key).
    seal: str | None = None

    def count(self) -> int:
        """How many keys the Redis layout would hold for these records."""
        maps: tuple[dict[str, _Expiring] | dict[str, str] | dict[str, list[str]], ...] = (
            self.nonces,
            self.pins,
            self.admissions,
            self.rotations,
            self.listings,
            self.revocations,
            self.endorsements,
        )
        sets = sum(1 for ids in (self.index, self.revoked, *self.endorsees.values()) if ids)
        singles = (1 if self.retractions else 0) + (1 if self.seal is not None else 0)
        return sets + sum(len(m) for m in maps) + singles


class InMemoryRecords(DirectoryRecords):
    """Registry records in dicts; expiries read ``clock``. Never unavailable."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._r = _Records()

    def _live(self, table: dict[str, _Expiring], key: str) -> _Expiring | None:
        """The unexpired entry of ``table`` at ``key`` (an expired one is dropped)."""
        entry = table.get(key)
        if entry is not None and self._clock.now() >= entry.expires_at:
            del table[key]
            return None
        return entry

    def _after(self, seconds: float) -> datetime:
        return self._clock.now() + timedelta(seconds=seconds)

    def _facts(self, node_id: str) -> IdFacts:
        return IdFacts(
            node_id,
            pin=self._r.pins.get(node_id),
            admission=self._r.admissions.get(node_id),
            rotations=tuple(self._r.rotations.get(node_id, ())),
            revocation=self._r.revocations.get(node_id),
        )

    async def ping(self) -> bool:
        """Always answers."""
        return True

    async def put_nonce(self, nonce: str, issued: str, keep_s: float) -> None:
        """Keep the nonce until ``keep_s`` from now."""
        self._r.nonces[nonce] = _Expiring(issued, self._after(keep_s))

    async def take_nonce(self, nonce: str) -> str | None:
        """Remove and return the nonce's issue time, unless it expired."""
        entry = self._live(self._r.nonces, nonce)
        self._r.nonces.pop(nonce, None)
        return None if entry is None else entry.value

    async def facts(self, node_ids: Sequence[str]) -> dict[str, IdFacts]:
        """Each id's records."""
        return {i: self._facts(i) for i in node_ids}

    async def facts_and_revoked(
        self, node_ids: Sequence[str]
    ) -> tuple[dict[str, IdFacts], set[str]]:
        """Each id's records and which of them the revoked index holds."""
        return {i: self._facts(i) for i in node_ids}, {i for i in node_ids if i in self._r.revoked}

    async def new_pin(
        self, node_id: str, key: str, proof: str, rotations: Sequence[str] = ()
    ) -> bool:
        """First key wins; a registration racing with itself for the same key is no loss."""
        current = self._r.pins.get(node_id)
        if current is None:
            self._r.pins[node_id] = key
            self._r.admissions[node_id] = proof
            self._r.rotations.pop(node_id, None)
            if rotations:
                self._r.rotations[node_id] = list(rotations)
            return True
        if current != key:
            return False
        self._r.admissions.setdefault(node_id, proof)
        return True

    async def move_pin(
        self, node_id: str, old_key: str, new_key: str, rotation: str | None, proof: str | None
    ) -> bool:
        """Compare-and-set from ``old_key``."""
        if self._r.pins.get(node_id) != old_key:
            return False
        self._r.pins[node_id] = new_key
        if rotation is not None:
            self._r.rotations.setdefault(node_id, []).append(rotation)
        if proof is not None:
            self._r.admissions[node_id] = proof
        return True

    async def list_peer(self, node_id: str, listing: str, ttl_s: float) -> bool:
        """List unless the revoked index holds the id."""
        if node_id in self._r.revoked:
            return False
        self._r.listings[node_id] = _Expiring(listing, self._after(ttl_s))
        self._r.index.add(node_id)
        return True

    async def refresh(self, node_id: str, ttl_s: float) -> Heartbeat:
        """Extend an unexpired listing."""
        if node_id in self._r.revoked:
            return Heartbeat.REVOKED
        entry = self._live(self._r.listings, node_id)
        if entry is None:
            return Heartbeat.NOT_LISTED
        entry.expires_at = self._after(ttl_s)
        return Heartbeat.REFRESHED

    async def unlist(self, node_id: str) -> None:
        """Drop the listing and its index entry."""
        self._r.listings.pop(node_id, None)
        self._r.index.discard(node_id)

    async def listed(self) -> list[Listed]:
        """Every unexpired listing; expired ids leave the index."""
        rows = []
        for node_id in sorted(self._r.index):
            entry = self._live(self._r.listings, node_id)
            if entry is None:
                self._r.index.discard(node_id)
            else:
                rows.append(Listed(entry.value, self._facts(node_id)))
        return rows

    async def listing(self, node_id: str) -> Listed | None:
        """The unexpired listing of ``node_id``."""
        entry = self._live(self._r.listings, node_id)
        return None if entry is None else Listed(entry.value, self._facts(node_id))

    async def put_revocation(self, node_id: str, record: str) -> None:
        """Index, keep the record, unlist."""
        self._r.revoked.add(node_id)
        self._r.revocations[node_id] = record
        await self.unlist(node_id)

    async def revocation(self, node_id: str) -> str | None:
        """The revocation record."""
        return self._r.revocations.get(node_id)

    async def revoked_index(self) -> list[tuple[str, str | None]]:
        """The revoked index, sorted, with each id's record."""
        return [(i, self._r.revocations.get(i)) for i in sorted(self._r.revoked)]

    async def put_seal(self, record: str) -> None:
        """Replace the seal kept."""
        self._r.seal = record

    async def seal_record(self) -> str | None:
        """The seal kept."""
        return self._r.seal

    async def put_retraction(self, content_hash: str, record: str) -> None:
        """Keep (for good)."""
        self._r.retractions[content_hash] = record

    async def retraction_records(self) -> list[tuple[str, str]]:
        """Every kept retraction, by hash."""
        return sorted(self._r.retractions.items())

    async def put_endorsement(self, endorsee_id: str, record: str, expires_at: datetime) -> None:
        """Keep until ``expires_at``."""
        self._r.endorsements[endorsee_id] = _Expiring(record, expires_at)

    async def endorsement(self, endorsee_id: str) -> str | None:
        """The unexpired endorsement."""
        entry = self._live(self._r.endorsements, endorsee_id)
        return None if entry is None else entry.value

    async def endorsees(self, endorser_id: str) -> frozenset[str]:
        """The ids recorded for ``endorser_id``."""
        return frozenset(self._r.endorsees.get(endorser_id, ()))

    async def add_endorsee(self, endorser_id: str, endorsee_id: str, cap: int | None) -> bool:
        """Add unless ``cap`` others are recorded (no await: atomic on the loop)."""
        known = self._r.endorsees.setdefault(endorser_id, set())
        if endorsee_id in known:
            return True
        if cap is not None and len(known) >= cap:
            return False
        known.add(endorsee_id)
        return True

    async def clear(self) -> int:
        """Forget everything."""
        for table in (self._r.nonces, self._r.listings, self._r.endorsements):
            for key in list(table):
                self._live(table, key)
        held = self._r.count()
        self._r = _Records()
        return held


class InMemoryPeerDirectory(RecordDirectory):
    """The peer directory in memory (see the module docstring)."""

    def __init__(
        self,
        *,
        params: RegistryParams,
        clock: Clock,
        operator_public_key: str | None = None,
        rng: random.Random | None = None,
        proof_params: ProofParams | None = None,
        records: InMemoryRecords | None = None,
        principal_params: PrincipalParams | None = None,
    ) -> None:
        super().__init__(
            records if records is not None else InMemoryRecords(clock),
            params=params,
            clock=clock,
            operator_public_key=operator_public_key,
            rng=rng,
            proof_params=proof_params,
            principal_params=principal_params,
        )
