"""The in-memory ``ImportedLessons``: what the lesson dict holds from peers."""

from __future__ import annotations

from collections.abc import Sequence

from lamarck.domain.rows import ImportedRecord, LessonRow, LessonStatus
from lamarck.node.store.mem.tables import MemTables
from lamarck.node.store.port import ImportedLessons

__all__ = ["MemImportedLessons"]


class MemImportedLessons(MemTables, ImportedLessons):
    """Imported lessons in the lesson dict (part of ``InMemoryLessonStore``)."""

    async def find_by_content_hash(self, content_hash: str) -> LessonRow | None:
        """The lesson stored with this content hash, if any."""
        for row in self._lessons.values():
            if row.content_hash == content_hash:
                return row
        return None

    async def imported_records(self, after: str, limit: int) -> list[ImportedRecord]:
        """Imported lessons with a signed record and content hash, by id after ``after``."""
        found = sorted(
            (r for r in self._lessons.values() if r.imported_from is not None and r.id > after),
            key=lambda r: r.id,
        )
        return [
            ImportedRecord(
                r.id,
                r.content_hash,
                r.created_at,
                r.signed_record,
                r.status,
                r.access_level,
                r.scope,
            )
            for r in found
            if r.signed_record is not None and r.content_hash is not None
        ][:limit]

    async def imported_per_source(self) -> dict[str, int]:
        """Imported lessons (every version) per source node id."""
        out: dict[str, int] = {}
        for r in self._lessons.values():
            if r.imported_from is not None and r.source_node_id:
                out[r.source_node_id] = out.get(r.source_node_id, 0) + 1
        return out

    async def import_sources(self, statuses: Sequence[LessonStatus]) -> set[str]:
        """The nodes lessons in ``statuses`` were imported from."""
        wanted = set(statuses)
        return {
            r.imported_from
            for r in self._lessons.values()
            if r.imported_from is not None and r.status in wanted
        }
