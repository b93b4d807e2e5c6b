"""The Postgres ``QuarantineStore``: the ``quarantine`` table."""

from __future__ import annotations

from typing import Any

from lamarck.domain.rows import QuarantineRow
from lamarck.errors import NotFound, StoreError
from lamarck.node.store.memory import QUARANTINE_STATES
from lamarck.node.store.pg.sql import PgTables, db_guard
from lamarck.node.store.port import QuarantineStore

__all__ = ["PgQuarantine"]


def _to_quarantine(rec: Any) -> QuarantineRow:
    """A ``QuarantineRow`` from a row of ``quarantine``."""
    return QuarantineRow(
        id=rec["id"],
        content_hash=rec["content_hash"],
        source_node_id=rec["source_node_id"],
        reasons=tuple(rec["reasons"]),
        received_at=rec["received_at"],
        signed_record=bytes(rec["signed_record"]),
        state=rec["state"],
        confidence=rec["confidence"],
        transfer_rule=rec["transfer_rule"],
    )


class PgQuarantine(PgTables, QuarantineStore):
    """Quarantined records in Postgres (part of ``PostgresLessonStore``)."""

    async def quarantine(self, row: QuarantineRow) -> None:
        """Hold a record for review; a second record with the same content hash is a no-op."""
        if row.state not in QUARANTINE_STATES:
            raise StoreError(f"unknown quarantine state {row.state!r}", reason="bad_state")
        async with db_guard():
            await self.pool.execute(
                "INSERT INTO quarantine (id, content_hash, source_node_id, reasons, received_at,"
                " signed_record, state, confidence, transfer_rule)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
                " ON CONFLICT (content_hash) DO NOTHING",
                row.id,
                row.content_hash,
                row.source_node_id,
                list(row.reasons),
                row.received_at,
                row.signed_record,
                row.state,
                row.confidence,
                row.transfer_rule,
            )

    async def list_quarantine(self, state: str | None = "pending") -> list[QuarantineRow]:
        """Quarantined records in ``state`` (all when ``None``), oldest first, ties by id."""
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT * FROM quarantine WHERE $1::text IS NULL OR state = $1"
                " ORDER BY received_at, id",
                state,
            )
        return [_to_quarantine(r) for r in recs]

    async def get_quarantine(self, quarantine_id: str) -> QuarantineRow:
        """One quarantined record in any state, or ``NotFound`` (by its primary key)."""
        async with db_guard():
            rec = await self.pool.fetchrow("SELECT * FROM quarantine WHERE id = $1", quarantine_id)
        if rec is None:
            raise NotFound(f"quarantine {quarantine_id} not found", id=quarantine_id)
        return _to_quarantine(rec)

    async def quarantine_of(self, content_hash: str) -> QuarantineRow | None:
        """The quarantined record holding ``content_hash`` (its unique index), or ``None``."""
        async with db_guard():
            rec = await self.pool.fetchrow(
                "SELECT * FROM quarantine WHERE content_hash = $1", content_hash
            )
        return None if rec is None else _to_quarantine(rec)

    async def quarantine_reasons(self, state: str = "pending") -> dict[tuple[str, ...], int]:
        """Quarantined records in ``state`` per set of reasons (sorted): one aggregate."""
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT reasons, count(*) AS n FROM quarantine WHERE state = $1 GROUP BY reasons",
                state,
            )
        out: dict[tuple[str, ...], int] = {}
        for r in recs:
            key = tuple(sorted(set(r["reasons"])))
            out[key] = out.get(key, 0) + r["n"]
        return out

    async def set_quarantine_state(self, quarantine_id: str, state: str) -> QuarantineRow:
        """Mark a quarantined record approved, rejected or pending; returns the updated row."""
        if state not in QUARANTINE_STATES:
            raise StoreError(f"unknown quarantine state {state!r}", reason="bad_state")
        async with db_guard():
            rec = await self.pool.fetchrow(
                "UPDATE quarantine SET state = $2 WHERE id = $1 RETURNING *", quarantine_id, state
            )
        if rec is None:
            raise NotFound(f"quarantine {quarantine_id} not found", id=quarantine_id)
        return _to_quarantine(rec)
