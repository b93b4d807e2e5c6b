"""Where a node keeps the outcome attestations it verified: a narrow port and two adapters.

``AttestationStore`` holds verified attestations by the lesson version they name
(``memory_hash``), bounded as ``lamarck.consensus.attestation.placement`` rules: one per
attester and version (the newest), at most ``max_attesters_per_lesson`` attesters per version.
``expire`` drops those older than ``max_age_days``. ``InMemoryAttestationStore`` backs pure
tests and the in-memory node; ``PostgresAttestationStore`` the ``attestations`` table beside
the lessons. One contract suite runs against both (``tests/contract/test_attestation_store_
contract.py``); both decide placement with the same pure rule, so they cannot drift.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lamarck.consensus.attestation import AttestationParams, created_at, placement
from lamarck.domain.lru import Lru
from lamarck.node.store.port import LessonStore
from lamarck.node.store.postgres import PostgresLessonStore, db_guard
from lamarck.proto.attestation import Attestation
from lamarck.proto.canonical import sha256_hex

__all__ = [
    "AttestationRow",
    "AttestationStore",
    "InMemoryAttestationStore",
    "PostgresAttestationStore",
    "attestations_for",
]


@dataclass(frozen=True, slots=True)
class AttestationRow:
    """A stored attestation: its exact signed bytes and their parsed record."""

    raw: bytes
    attestation: Attestation

    @property
    def content_hash(self) -> str:
        """sha256 hex of the bytes: the record's identity in a Sync."""
        return sha256_hex(self.raw)

    @property
    def memory_hash(self) -> str:
        """The lesson version it attests."""
        return self.attestation.memory_hash


class AttestationStore(abc.ABC):
    """The verified attestations a node keeps, by lesson version."""

    def __init__(self, params: AttestationParams) -> None:
        """``params`` bound what is kept per lesson version."""
        self.params = params

    @abc.abstractmethod
    async def put(self, row: AttestationRow) -> bool:
        """Keep ``row`` as ``placement`` rules; True when it was kept (new here)."""

    @abc.abstractmethod
    async def for_memories(self, memory_hashes: Sequence[str]) -> dict[str, list[AttestationRow]]:
        """The kept attestations of each of ``memory_hashes`` (absent: none), by attester id."""

    @abc.abstractmethod
    async def expire(self, before: datetime) -> int:
        """Drop the attestations made before ``before``; returns how many."""


class InMemoryAttestationStore(AttestationStore):
    """Attestations in a dict (pure tests, the in-memory node)."""

    def __init__(self, params: AttestationParams) -> None:
        """An empty store."""
        super().__init__(params)
        self._by_memory: dict[str, dict[str, AttestationRow]] = {}

    async def put(self, row: AttestationRow) -> bool:
        """Keep ``row`` as ``placement`` rules."""
        held = self._by_memory.setdefault(row.memory_hash, {})
        decided = placement([r.attestation for r in held.values()], row.attestation, self.params)
        if not decided.keep:
            return False
        for attester in decided.evict:
            held.pop(attester, None)
        held[row.attestation.attester_id] = row
        return True

    async def for_memories(self, memory_hashes: Sequence[str]) -> dict[str, list[AttestationRow]]:
        """The kept attestations of each version asked for."""
        out: dict[str, list[AttestationRow]] = {}
        for memory_hash in dict.fromkeys(memory_hashes):
            held = self._by_memory.get(memory_hash)
            if held:
                out[memory_hash] = [held[a] for a in sorted(held)]
        return out

    async def expire(self, before: datetime) -> int:
        """Drop what was made before ``before``."""
        dropped = 0
        for memory_hash in list(self._by_memory):
            held = self._by_memory[memory_hash]
            for attester in [a for a, r in held.items() if created_at(r.attestation) < before]:
                del held[attester]
                dropped += 1
            if not held:
                del self._by_memory[memory_hash]
        return dropped


class PostgresAttestationStore(AttestationStore):
    """Attestations in the ``attestations`` table, through the lesson store's asyncpg pool.

    ``pool`` returns the pool (``lambda: store.pool``), so the store follows a reconnect.
    A put holds a transaction-scoped advisory lock on its lesson version, so two puts for one
    version decide placement one after the other.
    """

    def __init__(
        self, pool: Callable[[], Any], params: AttestationParams, *, parsed: int = 4096
    ) -> None:
        """Over ``pool``; the last ``parsed`` records read are kept parsed (recall reads the
        same lessons' attestations again and again, and parsing is most of a read's cost)."""
        super().__init__(params)
        self._pool = pool
        self._parsed: Lru[str, Attestation] = Lru(parsed)

    def _row(self, raw: bytes, content_hash: str) -> AttestationRow:
        return AttestationRow(
            raw, self._parsed.get_or_put(content_hash, lambda: Attestation.from_json(raw))
        )

    async def put(self, row: AttestationRow) -> bool:
        """Keep ``row`` as ``placement`` rules, in one transaction."""
        a = row.attestation
        async with db_guard(), self._pool().acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", a.memory_hash)
            recs = await conn.fetch(
                "SELECT raw, content_hash FROM attestations WHERE memory_hash = $1",
                a.memory_hash,
            )
            held = [self._row(bytes(r["raw"]), r["content_hash"]).attestation for r in recs]
            decided = placement(held, a, self.params)
            if not decided.keep:
                return False
            if decided.evict:
                await conn.execute(
                    "DELETE FROM attestations WHERE memory_hash = $1 AND attester_id = ANY($2)",
                    a.memory_hash,
                    list(decided.evict),
                )
            await conn.execute(
                "INSERT INTO attestations (memory_hash, attester_id, content_hash, verdict,"
                " created_at, raw) VALUES ($1, $2, $3, $4, $5, $6)",
                a.memory_hash,
                a.attester_id,
                row.content_hash,
                a.verdict,
                created_at(a),
                row.raw,
            )
        return True

    async def for_memories(self, memory_hashes: Sequence[str]) -> dict[str, list[AttestationRow]]:
        """The kept attestations of each version asked for, by attester id."""
        if not memory_hashes:
            return {}
        async with db_guard():
            recs = await self._pool().fetch(
                "SELECT raw, content_hash FROM attestations WHERE memory_hash = ANY($1)"
                " ORDER BY memory_hash, attester_id",
                list(dict.fromkeys(memory_hashes)),
            )
        out: dict[str, list[AttestationRow]] = {}
        for rec in recs:
            row = self._row(bytes(rec["raw"]), rec["content_hash"])
            out.setdefault(row.memory_hash, []).append(row)
        return out

    async def expire(self, before: datetime) -> int:
        """Drop what was made before ``before``."""
        async with db_guard():
            status = await self._pool().execute(
                "DELETE FROM attestations WHERE created_at < $1", before
            )
        return int(str(status).rsplit(" ", 1)[-1])


def attestations_for(store: LessonStore, params: AttestationParams) -> AttestationStore:
    """The attestation store that lives with ``store``: its table for the Postgres store,
    else one in memory."""
    if isinstance(store, PostgresLessonStore):
        return PostgresAttestationStore(lambda: store.pool, params)
    return InMemoryAttestationStore(params)
