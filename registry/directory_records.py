"""``DirectoryRecords``: the port a registry adapter implements, raw records and nothing it
decides; ``RecordDirectory`` (``lamarck.registry.record_directory``) holds the logic over it.

The records, per id (see ``lamarck.registry.redis_directory`` for their Redis keys):

- a single-use **nonce** with its issue time, readable for twice ``nonce_ttl_s`` so a late
  use is told apart (``stale_nonce``) from a forged or reused one (``unknown_nonce``);
- the **pin** (the id's key; first key wins, moved only by a compare-and-set on the old key),
  the **admission proof** (the admitted signed registration) and the **rotation** records
  since, in order (see ``lamarck.registry.proofs``); none of them expire;
- the **listing** (signed registration + registration time) that lives for
  ``heartbeat_ttl_s`` unless refreshed, and an index of ids that may be listed;
- the **revoked** index and each id's operator-signed **revocation** record (what counts);
- the operator-signed **retraction** records, by the content hash each retracts (never
  expire: a node that was offline when one was made reads it when it is back);
- the latest **endorsement** published for an id, until it expires;
- per endorser, the **endorsees** it admitted (never forgotten, revoked ones included), which
  the endorsement cap (``PrincipalParams.max_identities_per_endorser``) counts.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum

from lamarck.errors import RegistryError
from lamarck.registry.proofs import IdFacts

__all__ = ["DirectoryRecords", "Heartbeat", "Listed", "check_namespace"]


def check_namespace(namespace: str) -> str:
    """``namespace`` if it is usable as a key prefix part; else ``RegistryError``."""
    if not namespace or any(c in namespace for c in ":{} \n"):
        raise RegistryError(f"invalid namespace {namespace!r}", reason="invalid_namespace")
    return namespace


@dataclass(frozen=True, slots=True)
class Listed:
    """A listed id: its raw listing (registration JSON + time) and its records."""

    raw: str
    facts: IdFacts


class Heartbeat(IntEnum):
    """What refreshing a listing found."""

    REVOKED = -1
    NOT_LISTED = 0
    REFRESHED = 1


class DirectoryRecords(abc.ABC):
    """Raw, unverified registry records: what an adapter stores, nothing it decides.

    Each method is one atomic step (a Redis script or transaction, or a dict update with no
    await inside). Failures of the backing store raise ``RegistryError(reason="unavailable")``.
    """

    @abc.abstractmethod
    async def put_nonce(self, nonce: str, issued: str, keep_s: float) -> None:
        """Keep ``nonce`` with its issue time for ``keep_s`` seconds."""

    @abc.abstractmethod
    async def take_nonce(self, nonce: str) -> str | None:
        """Remove ``nonce`` and return its issue time (``None``: unknown or expired)."""

    @abc.abstractmethod
    async def facts(self, node_ids: Sequence[str]) -> dict[str, IdFacts]:
        """The records of each of ``node_ids`` (distinct), in one read."""

    @abc.abstractmethod
    async def facts_and_revoked(
        self, node_ids: Sequence[str]
    ) -> tuple[dict[str, IdFacts], set[str]]:
        """The records of ``node_ids`` and which of them the revoked index holds, in one read."""

    @abc.abstractmethod
    async def new_pin(
        self, node_id: str, key: str, proof: str, rotations: Sequence[str] = ()
    ) -> bool:
        """Pin ``key`` with ``proof`` and the rotation chain ``rotations`` (a restored id's; a
        new id has none) if ``node_id`` has no pin, replacing stray rotations; True also if it
        is already pinned to this very key (its missing proof is filled in)."""

    @abc.abstractmethod
    async def move_pin(
        self, node_id: str, old_key: str, new_key: str, rotation: str | None, proof: str | None
    ) -> bool:
        """Compare-and-set the pin from ``old_key`` to ``new_key``, appending ``rotation`` and
        replacing the proof (when given), atomically; False if the pin is not ``old_key``."""

    @abc.abstractmethod
    async def list_peer(self, node_id: str, listing: str, ttl_s: float) -> bool:
        """List ``node_id`` for ``ttl_s`` unless the revoked index holds it (False)."""

    @abc.abstractmethod
    async def refresh(self, node_id: str, ttl_s: float) -> Heartbeat:
        """Extend a listing by ``ttl_s`` unless the revoked index holds the id."""

    @abc.abstractmethod
    async def unlist(self, node_id: str) -> None:
        """Drop ``node_id``'s listing now."""

    @abc.abstractmethod
    async def listed(self) -> list[Listed]:
        """Every listed id with its records; ids whose listing expired leave the index."""

    @abc.abstractmethod
    async def listing(self, node_id: str) -> Listed | None:
        """``node_id``'s listing with its records, or ``None`` if it is not listed."""

    @abc.abstractmethod
    async def put_revocation(self, node_id: str, record: str) -> None:
        """Add ``node_id`` to the revoked index with its record and unlist it, atomically."""

    @abc.abstractmethod
    async def revocation(self, node_id: str) -> str | None:
        """``node_id``'s revocation record, or ``None``."""

    @abc.abstractmethod
    async def revoked_index(self) -> list[tuple[str, str | None]]:
        """Each id of the revoked index (sorted) with its revocation record, if any."""

    @abc.abstractmethod
    async def put_retraction(self, content_hash: str, record: str) -> None:
        """Keep ``record`` as the retraction of ``content_hash`` (replacing an earlier one)."""

    @abc.abstractmethod
    async def retraction_records(self) -> list[tuple[str, str]]:
        """Every retraction record with the content hash it is kept under, sorted by hash."""

    @abc.abstractmethod
    async def put_endorsement(self, endorsee_id: str, record: str, expires_at: datetime) -> None:
        """Keep ``record`` as the endorsement for ``endorsee_id`` until ``expires_at``."""

    @abc.abstractmethod
    async def endorsement(self, endorsee_id: str) -> str | None:
        """The unexpired endorsement record kept for ``endorsee_id``, or ``None``."""

    @abc.abstractmethod
    async def endorsees(self, endorser_id: str) -> frozenset[str]:
        """The ids ``endorser_id`` admitted by endorsement (revoked ones included)."""

    @abc.abstractmethod
    async def add_endorsee(self, endorser_id: str, endorsee_id: str, cap: int | None) -> bool:
        """Record that ``endorser_id`` admitted ``endorsee_id``, atomically; False (nothing
        recorded) if it already admitted ``cap`` others (``None``: no cap). An endorsee already
        recorded is True: re-registering takes no second slot."""

    #: The network's namespace: a seal must name it.
    namespace: str = "default"

    @abc.abstractmethod
    async def put_seal(self, record: str) -> None:
        """Keep ``record`` as the operator's current seal (replacing the one kept)."""

    @abc.abstractmethod
    async def seal_record(self) -> str | None:
        """The seal kept, or ``None``."""

    @abc.abstractmethod
    async def clear(self) -> int:
        """Delete every record; returns how many were held."""

    @abc.abstractmethod
    async def ping(self) -> bool:
        """True when the backing store answers."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the default holds none."""
