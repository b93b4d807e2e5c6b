"""The in-memory ``EventLog``: the lesson event log and the rejection log, as lists."""

from __future__ import annotations

from collections.abc import Sequence

from lamarck.domain.rows import LessonEvent, RejectionRow, check_event_kinds
from lamarck.node.store.mem.tables import MemTables
from lamarck.node.store.port import EventLog

__all__ = ["MemEventLog"]


class MemEventLog(MemTables, EventLog):
    """The event and rejection logs in lists (part of ``InMemoryLessonStore``)."""

    async def append_events(self, events: Sequence[LessonEvent]) -> None:
        """Append to the event log; an unknown kind refuses the whole batch."""
        check_event_kinds(events)
        async with self._lock:
            self._events.extend(events)

    async def lesson_events(self, lesson_ids: Sequence[str]) -> list[LessonEvent]:
        """The events about any of ``lesson_ids``, oldest first (ties in append order)."""
        wanted = set(lesson_ids)
        return sorted((e for e in self._events if e.lesson_id in wanted), key=lambda e: e.at)

    async def record_rejection(self, row: RejectionRow) -> None:
        """Append to the rejection log."""
        async with self._lock:
            self._rejections.append(row)

    async def list_rejections(self, limit: int = 100) -> list[RejectionRow]:
        """Newest first; equal times keep the newest-appended first."""
        indexed = list(enumerate(self._rejections))
        indexed.sort(key=lambda pair: (pair[1].received_at, pair[0]), reverse=True)
        return [row for _, row in indexed[:limit]]
