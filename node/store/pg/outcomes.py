"""The Postgres ``OutcomeStore``: the ``outcomes`` table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lamarck.domain.rows import OutcomeRow
from lamarck.errors import NotFound
from lamarck.node.store.pg.sql import PgTables, db_guard
from lamarck.node.store.port import OutcomeStore

__all__ = ["PgOutcomes"]


def _to_outcome(rec: Any) -> OutcomeRow:
    """An ``OutcomeRow`` from a row of ``outcomes``."""
    return OutcomeRow(
        id=rec["id"],
        session_id=rec["session_id"],
        turn_index=rec["turn_index"],
        project=rec["project"],
        passed=rec["passed"],
        claim_ok=rec["claim_ok"],
        created_at=rec["created_at"],
        record=rec["record"],
    )


class PgOutcomes(PgTables, OutcomeStore):
    """Outcomes in Postgres (part of ``PostgresLessonStore``)."""

    async def insert_outcome(self, outcome: OutcomeRow) -> None:
        """Store an outcome; a duplicate id raises ``ConflictError``."""
        async with db_guard():
            await self.pool.execute(
                "INSERT INTO outcomes (id, session_id, turn_index, project, passed, claim_ok,"
                " created_at, record) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                outcome.id,
                outcome.session_id,
                outcome.turn_index,
                outcome.project,
                outcome.passed,
                outcome.claim_ok,
                outcome.created_at,
                outcome.record,
            )

    async def get_outcome(self, outcome_id: str) -> OutcomeRow:
        """Return one outcome or raise ``NotFound``."""
        async with db_guard():
            rec = await self.pool.fetchrow("SELECT * FROM outcomes WHERE id = $1", outcome_id)
        if rec is None:
            raise NotFound(f"outcome {outcome_id} not found", id=outcome_id)
        return _to_outcome(rec)

    async def existing_outcome_ids(self, ids: Sequence[str]) -> set[str]:
        """Return the subset of ``ids`` that are stored outcomes."""
        if not ids:
            return set()
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT id FROM outcomes WHERE id = ANY($1::text[])", list(ids)
            )
        return {r["id"] for r in recs}

    async def list_outcomes(self, limit: int = 100, offset: int = 0) -> list[OutcomeRow]:
        """Newest first (ties by id)."""
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT * FROM outcomes ORDER BY created_at DESC, id LIMIT $1 OFFSET $2",
                limit,
                offset,
            )
        return [_to_outcome(r) for r in recs]
