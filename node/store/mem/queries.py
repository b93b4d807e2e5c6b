"""The in-memory ``LessonQueries``: filtered lists, scans, counts and the facts other parts
of the node read from lessons."""

from __future__ import annotations

from collections.abc import Sequence

from lamarck.domain.rows import (
    Category,
    LessonFacts,
    LessonFilter,
    LessonRow,
    LessonStatus,
    lesson_sort_key,
)
from lamarck.learning.conflicts import has_local_evidence
from lamarck.learning.scopes import PROJECT_PREFIX
from lamarck.node.store.mem.tables import MemTables
from lamarck.node.store.port import LessonQueries

__all__ = ["RETIRED_PREFIX", "MemLessonQueries"]

#: ``superseded_by`` values starting with this mark a retirement, not a newer version.
RETIRED_PREFIX = "retired:"


class MemLessonQueries(MemTables, LessonQueries):
    """Queries over the lesson dict (part of ``InMemoryLessonStore``)."""

    async def list_lessons(self, flt: LessonFilter) -> list[LessonRow]:
        """Lessons matching the filter: highest confidence first, then newest, then id."""
        rows = sorted(self._matching(flt), key=lesson_sort_key)
        return rows[flt.offset : flt.offset + flt.limit]

    async def scan_lessons(self, flt: LessonFilter, after: str, limit: int) -> list[LessonRow]:
        """Lessons matching the filter in id order, the first ``limit`` above ``after``."""
        rows = sorted((r for r in self._matching(flt) if r.id > after), key=lambda r: r.id)
        return rows[:limit]

    async def count_lessons(self, flt: LessonFilter) -> int:
        """How many lessons match the filter (ignores limit/offset)."""
        return len(self._matching(flt))

    async def retired_evidence_ids(self, among: Sequence[str] | None = None) -> set[str]:
        """Outcome ids cited by any lesson whose ``superseded_by`` is ``retired:<who>``; with
        ``among``, only those ids."""
        ids: set[str] = set()
        for row in self._lessons.values():
            if row.superseded_by is not None and row.superseded_by.startswith(RETIRED_PREFIX):
                ids.update(row.evidence)
        return ids if among is None else ids.intersection(among)

    async def proven_operations(self, operations: Sequence[str]) -> set[str]:
        """Of ``operations``, those an active lesson this node's outcomes back is about."""
        wanted = set(operations)
        return {
            row.operation
            for row in self._lessons.values()
            if row.operation in wanted
            and row.status is LessonStatus.ACTIVE
            and row.category is Category.LESSON
            and has_local_evidence(row)
        }

    async def project_scopes(self, limit: int) -> list[str]:
        """Project scopes of own lessons and of outcomes, sorted, at most ``limit``."""
        scopes = {
            r.scope
            for r in self._lessons.values()
            if r.imported_from is None and r.scope.startswith(PROJECT_PREFIX)
        }
        scopes |= {PROJECT_PREFIX + o.project for o in self._outcomes.values() if o.project}
        return sorted(scopes)[:limit]

    async def lesson_facts(self, after: str, limit: int) -> list[LessonFacts]:
        """Lessons (category ``lesson``, any status) by id after ``after``: their facts."""
        found = sorted(
            (r for r in self._lessons.values() if r.category is Category.LESSON and r.id > after),
            key=lambda r: r.id,
        )[:limit]
        return [
            LessonFacts(
                r.id, r.status, r.confidence, r.created_at, r.last_used, dict(r.context), r.category
            )
            for r in found
        ]
