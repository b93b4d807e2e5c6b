"""The Postgres ``EventLog``: the ``lesson_events`` and ``rejections`` tables."""

from __future__ import annotations

from collections.abc import Sequence

from lamarck.domain.rows import LessonEvent, RejectionRow, check_event_kinds
from lamarck.node.store.pg.sql import PgTables, db_guard, event_args
from lamarck.node.store.port import EventLog

__all__ = ["PgEventLog"]

_INSERT_EVENT = (
    "INSERT INTO lesson_events (lesson_id, at, kind, actor, confidence_before,"
    " confidence_after, reason, outcome_id, version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
)


class PgEventLog(PgTables, EventLog):
    """The event and rejection logs in Postgres (part of ``PostgresLessonStore``)."""

    async def append_events(self, events: Sequence[LessonEvent]) -> None:
        """Append to the event log in one statement; an unknown kind refuses the whole batch."""
        check_event_kinds(events)
        if not events:
            return
        async with db_guard():
            await self.pool.executemany(_INSERT_EVENT, event_args(events))

    async def lesson_events(self, lesson_ids: Sequence[str]) -> list[LessonEvent]:
        """The events about any of ``lesson_ids``, oldest first (ties in append order)."""
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT lesson_id, at, kind, actor, confidence_before, confidence_after, reason,"
                " outcome_id, version FROM lesson_events WHERE lesson_id = ANY($1::text[])"
                " ORDER BY at, id",
                list(lesson_ids),
            )
        return [
            LessonEvent(
                lesson_id=r["lesson_id"],
                at=r["at"],
                kind=r["kind"],
                actor=r["actor"],
                confidence_before=r["confidence_before"],
                confidence_after=r["confidence_after"],
                reason=r["reason"],
                outcome_id=r["outcome_id"],
                version=r["version"],
            )
            for r in recs
        ]

    async def record_rejection(self, row: RejectionRow) -> None:
        """Append to the rejection log."""
        async with db_guard():
            await self.pool.execute(
                "INSERT INTO rejections (source_node_id, reason, content_hash, received_at,"
                " detail) VALUES ($1, $2, $3, $4, $5)",
                row.source_node_id,
                row.reason,
                row.content_hash,
                row.received_at,
                row.detail,
            )

    async def list_rejections(self, limit: int = 100) -> list[RejectionRow]:
        """Newest first; equal times keep the newest-appended first."""
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT source_node_id, reason, content_hash, received_at, detail"
                " FROM rejections ORDER BY received_at DESC, id DESC LIMIT $1",
                limit,
            )
        return [
            RejectionRow(
                r["source_node_id"], r["reason"], r["content_hash"], r["received_at"], r["detail"]
            )
            for r in recs
        ]
