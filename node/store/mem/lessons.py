"""The in-memory ``LessonRows``: lessons by id, their versions and their removal."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from lamarck.domain.rows import LessonEvent, LessonRow, LessonStatus, check_event_kinds
from lamarck.errors import ConflictError, NotFound
from lamarck.node.store.mem.tables import MemTables
from lamarck.node.store.port import LessonRows

__all__ = ["MemLessonRows"]


class MemLessonRows(MemTables, LessonRows):
    """Lesson rows in a dict (part of ``InMemoryLessonStore``)."""

    async def insert_lesson(self, lesson: LessonRow, events: Sequence[LessonEvent] = ()) -> None:
        """Store a new lesson (and append ``events``); a duplicate id or content hash raises
        ``ConflictError``."""
        check_event_kinds(events)
        async with self._lock:
            row = self._check_new(lesson)
            self._lessons[row.id] = row
            self._events.extend(events)

    async def insert_lessons(self, lessons: Sequence[LessonRow]) -> int:
        """Bulk insert, all or nothing; returns the number inserted."""
        async with self._lock:
            accepted: list[LessonRow] = []
            for lesson in lessons:
                accepted.append(self._check_new(lesson, accepted))
            for row in accepted:
                self._lessons[row.id] = row
            return len(accepted)

    async def get_lesson(self, lesson_id: str) -> LessonRow:
        """Return one lesson or raise ``NotFound``."""
        try:
            return self._lessons[lesson_id]
        except KeyError:
            raise NotFound(f"lesson {lesson_id} not found", id=lesson_id) from None

    async def get_lessons(self, ids: Sequence[str]) -> list[LessonRow]:
        """Return the stored lessons among ``ids`` (missing ids skipped), in input order."""
        return [self._lessons[i] for i in ids if i in self._lessons]

    async def update_lesson(self, lesson: LessonRow, events: Sequence[LessonEvent] = ()) -> None:
        """Replace an existing lesson's state (and append ``events``); the embedding is kept
        unless one is given."""
        check_event_kinds(events)
        async with self._lock:
            current = self._lessons.get(lesson.id)
            if current is None:
                raise NotFound(f"lesson {lesson.id} not found", id=lesson.id)
            if lesson.content_hash is not None and any(
                other.content_hash == lesson.content_hash and other.id != lesson.id
                for other in self._lessons.values()
            ):
                raise ConflictError(
                    f"a lesson with content hash {lesson.content_hash} exists",
                    reason="duplicate_content_hash",
                )
            row = self._normalise(lesson)
            if row.embedding is None:
                row = dataclasses.replace(row, embedding=current.embedding)
            self._lessons[row.id] = row
            self._events.extend(events)

    async def supersede(self, old_id: str, new: LessonRow) -> None:
        """Insert ``new`` (its ``supersedes`` set to ``old_id``) and mark the old row superseded.

        ``NotFound`` if the old row is absent; ``ConflictError`` if it is already superseded or
        retired, or if ``new`` collides with a stored lesson.
        """
        async with self._lock:
            old = self._lessons.get(old_id)
            if old is None:
                raise NotFound(f"lesson {old_id} not found", id=old_id)
            if old.superseded_by is not None or old.status in (
                LessonStatus.SUPERSEDED,
                LessonStatus.RETIRED,
            ):
                raise ConflictError(
                    f"lesson {old_id} is already superseded or retired",
                    reason="already_superseded",
                    id=old_id,
                )
            row = self._check_new(dataclasses.replace(new, supersedes=old_id))
            self._lessons[row.id] = row
            self._lessons[old_id] = dataclasses.replace(
                old,
                superseded_by=row.id,
                status=LessonStatus.SUPERSEDED,
                updated_at=row.updated_at,
            )

    async def history(self, lesson_id: str) -> list[LessonRow]:
        """The supersede chain containing ``lesson_id``, oldest first; ``NotFound`` if absent."""
        start = await self.get_lesson(lesson_id)
        seen = {start.id}

        def walk(cursor: str | None, link: Callable[[LessonRow], str | None]) -> list[LessonRow]:
            """The rows from ``cursor`` on, following ``link``, each once."""
            found: list[LessonRow] = []
            while cursor is not None and cursor in self._lessons and cursor not in seen:
                row = self._lessons[cursor]
                found.append(row)
                seen.add(cursor)
                cursor = link(row)
            return found

        older = walk(start.supersedes, lambda r: r.supersedes)
        newer = walk(start.superseded_by, lambda r: r.superseded_by)
        return [*reversed(older), start, *newer]

    async def hard_delete(self, lesson_id: str) -> None:
        """Remove a lesson for good; ``NotFound`` if absent."""
        async with self._lock:
            if self._lessons.pop(lesson_id, None) is None:
                raise NotFound(f"lesson {lesson_id} not found", id=lesson_id)
            self._events = [e for e in self._events if e.lesson_id != lesson_id]
