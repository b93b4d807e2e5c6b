"""The Postgres ``LessonRows``: one lesson (or a batch) at a time, with its provenance and
events in the same statement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lamarck.domain.rows import LessonEvent, LessonRow, check_event_kinds
from lamarck.errors import ConflictError, NotFound
from lamarck.node.store.pg.sql import (
    LESSON_COLUMNS,
    PROVENANCE_COLUMNS,
    SELECT_LESSON,
    PgTables,
    db_guard,
    event_args,
    lesson_args,
    to_lesson,
)
from lamarck.node.store.port import LessonRows

__all__ = ["PgLessonRows"]

_INSERT_LESSON = "INSERT INTO lessons ({}) VALUES ({})".format(
    ", ".join(LESSON_COLUMNS), ", ".join(f"${i}" for i in range(1, len(LESSON_COLUMNS) + 1))
)
# Every column but the id (the key, first) and the embedding (last; kept unless a new one
# is given).
_UPDATE_LESSON = "UPDATE lessons SET {}, embedding = COALESCE(${}, embedding) WHERE id = $1".format(
    ", ".join(f"{c} = ${i + 1}" for i, c in enumerate(LESSON_COLUMNS[:-1]) if i > 0),
    len(LESSON_COLUMNS),
)
_INSERT_PROVENANCE = "INSERT INTO lesson_provenance ({}) VALUES ($1, $2, $3, $4, $5)".format(
    ", ".join(PROVENANCE_COLUMNS)
)
_N = len(LESSON_COLUMNS)
# A row and its events (and, for an update, its provenance) in ONE statement: atomic by
# itself, so an agent's write costs one round trip instead of a transaction's four or five.
# Events and provenance travel as parallel arrays, inserted in array order.
_EVENT_ROWS = (
    "SELECT * FROM unnest(${0}::text[], ${1}::timestamptz[], ${2}::text[], ${3}::text[],"
    " ${4}::float8[], ${5}::float8[], ${6}::text[], ${7}::text[], ${8}::bigint[])"
)
_EVENT_COLUMNS = (
    "lesson_id, at, kind, actor, confidence_before, confidence_after, reason, outcome_id, version"
)
_INSERT_LESSON_AND_EVENTS = (
    f"WITH l AS ({_INSERT_LESSON} RETURNING id) INSERT INTO lesson_events ({_EVENT_COLUMNS}) "
    + _EVENT_ROWS.format(*range(_N + 1, _N + 10))
    + " WHERE EXISTS (SELECT 1 FROM l)"
)
_INSERT_LESSON_ALL = (
    f"WITH l AS ({_INSERT_LESSON} RETURNING id),"
    f" p AS (INSERT INTO lesson_provenance ({', '.join(PROVENANCE_COLUMNS)})"
    f" SELECT $1, x.s, x.v, x.r, x.h FROM unnest(${_N + 1}::text[], ${_N + 2}::text[],"
    f" ${_N + 3}::timestamptz[], ${_N + 4}::text[]) AS x(s, v, r, h)"
    " WHERE EXISTS (SELECT 1 FROM l))"
    f" INSERT INTO lesson_events ({_EVENT_COLUMNS}) "
    + _EVENT_ROWS.format(*range(_N + 5, _N + 14))
    + " WHERE EXISTS (SELECT 1 FROM l)"
)
_UPDATE_LESSON_ALL = (
    f"WITH u AS ({_UPDATE_LESSON} RETURNING id),"
    " d AS (DELETE FROM lesson_provenance WHERE lesson_id = $1 AND EXISTS (SELECT 1 FROM u)),"
    f" p AS (INSERT INTO lesson_provenance ({', '.join(PROVENANCE_COLUMNS)})"
    f" SELECT $1, x.s, x.v, x.r, x.h FROM unnest(${_N + 1}::text[], ${_N + 2}::text[],"
    f" ${_N + 3}::timestamptz[], ${_N + 4}::text[]) AS x(s, v, r, h)"
    " WHERE EXISTS (SELECT 1 FROM u)),"
    f" e AS (INSERT INTO lesson_events ({_EVENT_COLUMNS}) "
    + _EVENT_ROWS.format(*range(_N + 5, _N + 14))
    + " WHERE EXISTS (SELECT 1 FROM u)) SELECT count(*) FROM u"
)
# Both directions of the supersede chain in one statement: back through ``supersedes``,
# forward through ``superseded_by`` (a 'retired:<who>' marker matches no id and ends it).
# The depth bound guards against a cycle written by hand.
_HISTORY = f"""
WITH RECURSIVE back(id, link, depth) AS (
    SELECT id, supersedes, 0 FROM lessons WHERE id = $1
    UNION ALL
    SELECT l.id, l.supersedes, b.depth - 1
    FROM lessons l JOIN back b ON l.id = b.link WHERE b.depth > -100000
), fwd(id, link, depth) AS (
    SELECT id, superseded_by, 0 FROM lessons WHERE id = $1
    UNION ALL
    SELECT l.id, l.superseded_by, f.depth + 1
    FROM lessons l JOIN fwd f ON l.id = f.link WHERE f.depth < 100000
), chain AS (
    SELECT id, min(depth) AS depth FROM (SELECT id, depth FROM back
                                         UNION ALL SELECT id, depth FROM fwd) c GROUP BY id
)
SELECT {SELECT_LESSON} FROM chain JOIN lessons l USING (id) ORDER BY chain.depth
"""


def _event_columns(events: Sequence[LessonEvent]) -> list[list[Any]]:
    """The events as nine parallel arrays (``_EVENT_ROWS``)."""
    rows = event_args(events)
    return [[r[i] for r in rows] for i in range(9)]


def _provenance_columns(row: LessonRow) -> list[list[Any]]:
    """The row's provenance as four parallel arrays (source, via, received, hash)."""
    return [
        [p.source_node_id for p in row.provenance],
        [p.via_node_id for p in row.provenance],
        [p.received_at for p in row.provenance],
        [p.content_hash for p in row.provenance],
    ]


def _provenance_args(row: LessonRow) -> list[tuple[Any, ...]]:
    return [
        (row.id, p.source_node_id, p.via_node_id, p.received_at, p.content_hash)
        for p in row.provenance
    ]


class PgLessonRows(PgTables, LessonRows):
    """Lesson rows in Postgres (part of ``PostgresLessonStore``)."""

    async def insert_lesson(self, lesson: LessonRow, events: Sequence[LessonEvent] = ()) -> None:
        """Store a new lesson (and append ``events``, one transaction); a duplicate id or
        content hash raises ``ConflictError``."""
        check_event_kinds(events)
        # One statement, atomic by itself: no transaction round trips.
        async with db_guard():
            if lesson.provenance:
                await self.pool.execute(
                    _INSERT_LESSON_ALL,
                    *lesson_args(lesson),
                    *_provenance_columns(lesson),
                    *_event_columns(events),
                )
            elif events:
                await self.pool.execute(
                    _INSERT_LESSON_AND_EVENTS, *lesson_args(lesson), *_event_columns(events)
                )
            else:
                await self.pool.execute(_INSERT_LESSON, *lesson_args(lesson))
        self._touch_inserted([lesson])
        self._inserted += 1

    async def insert_lessons(self, lessons: Sequence[LessonRow]) -> int:
        """Bulk insert with binary COPY in one transaction, all or nothing.

        Fast without the HNSW index; for large loads use ``bulk_load()`` (module docstring).
        """
        if not lessons:
            return 0
        records = [tuple(lesson_args(row)) for row in lessons]
        provenance = [p for row in lessons for p in _provenance_args(row)]
        async with db_guard(), self.pool.acquire() as conn, conn.transaction():
            await conn.copy_records_to_table(
                "lessons", records=records, columns=list(LESSON_COLUMNS)
            )
            if provenance:
                await conn.copy_records_to_table(
                    "lesson_provenance", records=provenance, columns=list(PROVENANCE_COLUMNS)
                )
        self._touch_inserted(lessons)
        self._inserted += len(records)
        return len(records)

    async def get_lesson(self, lesson_id: str) -> LessonRow:
        """Return one lesson or raise ``NotFound``."""
        async with db_guard():
            rec = await self.pool.fetchrow(
                f"SELECT {SELECT_LESSON} FROM lessons l WHERE l.id = $1", lesson_id
            )
        if rec is None:
            raise NotFound(f"lesson {lesson_id} not found", id=lesson_id)
        return to_lesson(rec)

    async def get_lessons(self, ids: Sequence[str]) -> list[LessonRow]:
        """Return the stored lessons among ``ids`` (missing ids skipped), in input order."""
        if not ids:
            return []
        async with db_guard():
            recs = await self.pool.fetch(
                f"SELECT {SELECT_LESSON} FROM lessons l WHERE l.id = ANY($1::text[])", list(ids)
            )
        by_id = {r["id"]: to_lesson(r) for r in recs}
        return [by_id[i] for i in ids if i in by_id]

    async def update_lesson(self, lesson: LessonRow, events: Sequence[LessonEvent] = ()) -> None:
        """Replace an existing lesson's state and provenance (and append ``events``, one
        transaction); the embedding is kept if unset."""
        check_event_kinds(events)
        # One statement (row, provenance and events), atomic by itself: one round trip.
        async with db_guard():
            updated = await self.pool.fetchval(
                _UPDATE_LESSON_ALL,
                *lesson_args(lesson),
                *_provenance_columns(lesson),
                *_event_columns(events),
            )
        if not updated:
            raise NotFound(f"lesson {lesson.id} not found", id=lesson.id)
        self._touch([lesson.id])

    async def supersede(self, old_id: str, new: LessonRow) -> None:
        """Insert ``new`` (its ``supersedes`` set to ``old_id``) and mark the old row superseded.

        ``NotFound`` if the old row is absent; ``ConflictError`` if it is already superseded or
        retired (the row lock serialises two concurrent edits of the same lesson).
        """
        async with db_guard(), self.pool.acquire() as conn, conn.transaction():
            old = await conn.fetchrow(
                "SELECT status, superseded_by FROM lessons WHERE id = $1 FOR UPDATE", old_id
            )
            if old is None:
                raise NotFound(f"lesson {old_id} not found", id=old_id)
            if old["superseded_by"] is not None or old["status"] in ("superseded", "retired"):
                raise ConflictError(
                    f"lesson {old_id} is already superseded or retired",
                    reason="already_superseded",
                    id=old_id,
                )
            args = lesson_args(new)
            args[LESSON_COLUMNS.index("supersedes")] = old_id
            await conn.execute(_INSERT_LESSON, *args)
            if new.provenance:
                await conn.executemany(_INSERT_PROVENANCE, _provenance_args(new))
            await conn.execute(
                "UPDATE lessons SET superseded_by = $2, status = 'superseded', updated_at = $3"
                " WHERE id = $1",
                old_id,
                new.id,
                new.updated_at,
            )
        self._touch([old_id, new.id])
        self._inserted += 1

    async def history(self, lesson_id: str) -> list[LessonRow]:
        """The supersede chain containing ``lesson_id``, oldest first, in one recursive query."""
        async with db_guard():
            recs = await self.pool.fetch(_HISTORY, lesson_id)
        if not recs:
            raise NotFound(f"lesson {lesson_id} not found", id=lesson_id)
        return [to_lesson(r) for r in recs]

    async def hard_delete(self, lesson_id: str) -> None:
        """Remove a lesson, its provenance and pending outbox rows; ``NotFound`` if absent."""
        async with db_guard(), self.pool.acquire() as conn, conn.transaction():
            status = await conn.execute("DELETE FROM lessons WHERE id = $1", lesson_id)
            await conn.execute("DELETE FROM lesson_events WHERE lesson_id = $1", lesson_id)
        self._touch([lesson_id])
        if status == "DELETE 0":
            raise NotFound(f"lesson {lesson_id} not found", id=lesson_id)
