"""The Postgres ``ImportedLessons``: what import and sharing read about peers' lessons."""

from __future__ import annotations

from collections.abc import Sequence

from lamarck.domain.rows import ImportedRecord, LessonRow, LessonStatus
from lamarck.node.store.pg.sql import SELECT_LESSON, PgTables, db_guard, to_lesson
from lamarck.node.store.port import ImportedLessons

__all__ = ["PgImportedLessons"]


class PgImportedLessons(PgTables, ImportedLessons):
    """Peers' lessons in Postgres (part of ``PostgresLessonStore``)."""

    async def find_by_content_hash(self, content_hash: str) -> LessonRow | None:
        """The lesson stored with this content hash, if any."""
        async with db_guard():
            rec = await self.pool.fetchrow(
                f"SELECT {SELECT_LESSON} FROM lessons l WHERE l.content_hash = $1", content_hash
            )
        return None if rec is None else to_lesson(rec)

    async def imported_records(self, after: str, limit: int) -> list[ImportedRecord]:
        """Imported lessons with a signed record and content hash, by id after ``after``:
        seven columns, no vector or provenance (keyset pages: no OFFSET to skip over)."""
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT id, content_hash, created_at, signed_record, status, access_level, scope"
                " FROM lessons"
                " WHERE imported_from IS NOT NULL AND signed_record IS NOT NULL"
                " AND content_hash IS NOT NULL AND id > $1 ORDER BY id LIMIT $2",
                after,
                limit,
            )
        return [
            ImportedRecord(
                r["id"],
                r["content_hash"],
                r["created_at"],
                bytes(r["signed_record"]),
                LessonStatus(r["status"]),
                r["access_level"],
                r["scope"],
            )
            for r in recs
        ]

    async def imported_per_source(self) -> dict[str, int]:
        """Imported lessons (every version) per source node id: one aggregate, no rows read
        back (paging 20,000 whole rows to count them took 6.5 s)."""
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT source_node_id, count(*) AS n FROM lessons"
                " WHERE imported_from IS NOT NULL AND source_node_id <> ''"
                " GROUP BY source_node_id"
            )
        return {r["source_node_id"]: r["n"] for r in recs}

    async def import_sources(self, statuses: Sequence[LessonStatus]) -> set[str]:
        """The nodes lessons in ``statuses`` were imported from: a skip scan of the
        ``imported_from`` index, one probe per source, so the cost follows the number of
        sources, not of lessons (a DISTINCT read every entry: 27 ms at 20,000 lessons)."""
        async with db_guard():
            recs = await self.pool.fetch(
                "WITH RECURSIVE s(source) AS ("
                " (SELECT imported_from FROM lessons"
                "  WHERE imported_from IS NOT NULL AND status = ANY($1::text[])"
                "  ORDER BY imported_from LIMIT 1)"
                " UNION ALL"
                " SELECT (SELECT imported_from FROM lessons"
                "  WHERE imported_from > s.source AND status = ANY($1::text[])"
                "  ORDER BY imported_from LIMIT 1)"
                " FROM s WHERE s.source IS NOT NULL)"
                " SELECT source FROM s WHERE source IS NOT NULL",
                [LessonStatus(s).value for s in statuses],
            )
        return {r["source"] for r in recs}
