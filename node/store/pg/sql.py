"""What the Postgres adapter's per-port parts share: the lesson row's columns and codec, the
filter's SQL, the error translation, and the ``PgTables`` base every part builds on.

Every asyncpg/Postgres/socket error is translated at this boundary into a
``lamarck.errors.StoreError`` subclass (``raise ... from e``): callers never see asyncpg.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC
from typing import Any, Protocol

import asyncpg
import numpy as np

from lamarck.domain.rows import (
    Category,
    LessonEvent,
    LessonFilter,
    LessonRow,
    LessonStatus,
    ProvenanceEntry,
    Vector,
)
from lamarck.errors import ConflictError, StoreError, StoreUnavailable
from lamarck.learning.mechanical import AVOID_TAG

__all__ = [
    "LESSON_COLUMNS",
    "PROVENANCE_COLUMNS",
    "SELECT_LESSON",
    "TRANSLATED_ERRORS",
    "PgTables",
    "db_guard",
    "event_args",
    "lesson_args",
    "to_lesson",
    "translate_error",
    "where_clause",
]

LESSON_COLUMNS = (
    "id",
    "content",
    "operation",
    "scope",
    "status",
    "confidence",
    "created_at",
    "updated_at",
    "category",
    "evidence",
    "superseded_by",
    "supersedes",
    "last_used",
    "use_count",
    "confirmations",
    "contradictions",
    "confirmed_projects",
    "context",
    "situation",
    "tags",
    "memory_type",
    "access_level",
    "source_node_id",
    "imported_from",
    "original_confidence",
    "transferred_confidence",
    "signed_record",
    "content_hash",
    "recipients",
    "contested_with",
    "verified_against",
    "change_reason",
    "embedding",
)
PROVENANCE_COLUMNS = ("lesson_id", "source_node_id", "via_node_id", "received_at", "content_hash")

SELECT_LESSON = (
    ", ".join(f"l.{c}" for c in LESSON_COLUMNS)
    # An array of anonymous records, decoded by asyncpg from binary (text and timestamptz
    # as they are): a JSON aggregate cost a search of 30 rows ~0.1 ms to build and parse.
    + ", ARRAY(SELECT ROW(p.source_node_id, p.via_node_id, p.received_at, p.content_hash)"
    " FROM lesson_provenance p WHERE p.lesson_id = l.id ORDER BY p.id) AS provenance"
)


def translate_error(e: BaseException) -> StoreError:
    """The ``StoreError`` subclass for an asyncpg, Postgres or socket error."""
    if isinstance(e, StoreError):
        return e
    if isinstance(e, asyncpg.UniqueViolationError):
        constraint = getattr(e, "constraint_name", None) or ""
        reason = "duplicate_content_hash" if "content_hash" in constraint else "duplicate_id"
        return ConflictError(str(e), reason=reason, constraint=constraint)
    if isinstance(e, asyncpg.ForeignKeyViolationError):
        return ConflictError(str(e), reason="missing_reference")
    if isinstance(e, asyncpg.SerializationError | asyncpg.DeadlockDetectedError):
        return ConflictError(str(e), reason="concurrent_update")
    if isinstance(e, asyncpg.DataError) and "dimensions" in str(e):
        return StoreError(str(e), reason="dimension_mismatch")
    if isinstance(e, asyncpg.DataError | asyncpg.IntegrityConstraintViolationError):
        return StoreError(str(e), reason="invalid_value")
    if isinstance(
        e,
        asyncpg.PostgresConnectionError
        | asyncpg.InterfaceError
        # A connection whose backend was killed mid-protocol can surface as a client-state
        # error rather than a connection error; it is the same outage to the caller.
        | asyncpg.InternalClientError
        | asyncpg.CannotConnectNowError
        | asyncpg.TooManyConnectionsError
        | asyncpg.OperatorInterventionError
        | asyncpg.InsufficientResourcesError
        | asyncpg.InvalidAuthorizationSpecificationError
        | asyncpg.InvalidCatalogNameError
        | OSError
        | TimeoutError,
    ):
        return StoreUnavailable(f"the lesson database is unavailable: {e}")
    if isinstance(e, asyncpg.PostgresError):
        return StoreError(str(e), reason="database_error", sqlstate=getattr(e, "sqlstate", None))
    return StoreError(f"{type(e).__name__}: {e}", reason="database_error")


TRANSLATED_ERRORS = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    OSError,
    TimeoutError,
)


@contextlib.asynccontextmanager
async def db_guard() -> AsyncIterator[None]:
    """Translate the database's and its connection's failures raised in the block into
    ``StoreError``; anything else is a programming error and propagates as itself. Every
    Postgres adapter over the lesson store's pool guards its calls with this one."""
    try:
        yield
    except TRANSLATED_ERRORS as e:
        raise translate_error(e) from e


def where_clause(flt: LessonFilter, first: int = 1) -> tuple[str, list[Any]]:
    """SQL conditions (on alias ``l``) and their arguments, numbered from ``$first``."""
    conds: list[str] = []
    args: list[Any] = []

    def arg(value: Any) -> str:
        args.append(value)
        return f"${first + len(args) - 1}"

    if flt.statuses is not None:
        conds.append(f"l.status = ANY({arg([s.value for s in flt.statuses])}::text[])")
    if flt.scopes is not None:
        conds.append(f"l.scope = ANY({arg(list(flt.scopes))}::text[])")
    if flt.category is not None:
        conds.append(f"l.category = {arg(flt.category.value)}")
    if flt.operation is not None:
        conds.append(f"l.operation = {arg(flt.operation)}")
    if flt.content is not None:
        conds.append(f"l.content = {arg(flt.content)}")
    if flt.about is not None:
        # The three arms of node.learning.mechanical.is_about, each on its own index.
        key = arg(flt.about)
        avoid = arg([AVOID_TAG + flt.about])
        conds.append(
            f"(l.operation = {key} OR l.tags @> {avoid}::text[]"
            f" OR (l.situation ->> 'tool') = {key})"
        )
    if flt.min_confidence is not None:
        conds.append(f"l.confidence >= {arg(float(flt.min_confidence))}")
    if flt.tags is not None:
        conds.append(f"l.tags @> {arg(list(flt.tags))}::text[]")
    if flt.context is not None:
        conds.append(f"l.context @> {arg(dict(flt.context))}::jsonb")
    if flt.imported is not None:
        conds.append("l.imported_from IS NOT NULL" if flt.imported else "l.imported_from IS NULL")
    if flt.sources is not None:
        conds.append(f"l.imported_from = ANY({arg(list(flt.sources))}::text[])")
    if flt.content_hashes is not None:
        conds.append(f"l.content_hash = ANY({arg(list(flt.content_hashes))}::text[])")
    return (" AND ".join(conds) or "TRUE"), args


def lesson_args(row: LessonRow) -> list[Any]:
    """Column values of ``row`` in ``LESSON_COLUMNS`` order."""
    return [
        row.id,
        row.content,
        row.operation,
        row.scope,
        LessonStatus(row.status).value,
        float(row.confidence),
        row.created_at,
        row.updated_at,
        Category(row.category).value,
        list(row.evidence),
        row.superseded_by,
        row.supersedes,
        row.last_used,
        row.use_count,
        row.confirmations,
        row.contradictions,
        list(row.confirmed_projects),
        row.context,
        row.situation,
        list(row.tags),
        row.memory_type,
        row.access_level,
        row.source_node_id,
        row.imported_from,
        row.original_confidence,
        row.transferred_confidence,
        row.signed_record,
        row.content_hash,
        list(row.recipients),
        list(row.contested_with),
        list(row.verified_against),
        row.change_reason,
        None if row.embedding is None else np.asarray(row.embedding, dtype=np.float32),
    ]


def event_args(events: Sequence[LessonEvent]) -> list[tuple[Any, ...]]:
    """The events as rows of the ``lesson_events`` columns, in append order."""
    return [
        (
            e.lesson_id,
            e.at,
            e.kind,
            e.actor,
            e.confidence_before,
            e.confidence_after,
            e.reason,
            e.outcome_id,
            e.version,
        )
        for e in events
    ]


def to_lesson(rec: Any) -> LessonRow:
    """A ``LessonRow`` from a record selected with ``SELECT_LESSON``."""
    embedding = rec["embedding"]
    vector: Vector | None = None
    if embedding is not None:
        vector = embedding.to_numpy().copy()
        vector.setflags(write=False)
    signed = rec["signed_record"]
    return LessonRow(
        id=rec["id"],
        content=rec["content"],
        operation=rec["operation"],
        scope=rec["scope"],
        status=LessonStatus(rec["status"]),
        confidence=rec["confidence"],
        created_at=rec["created_at"],
        updated_at=rec["updated_at"],
        category=Category(rec["category"]),
        evidence=tuple(rec["evidence"]),
        superseded_by=rec["superseded_by"],
        supersedes=rec["supersedes"],
        last_used=rec["last_used"],
        use_count=rec["use_count"],
        confirmations=rec["confirmations"],
        contradictions=rec["contradictions"],
        confirmed_projects=tuple(rec["confirmed_projects"]),
        context=rec["context"],
        situation=rec["situation"],
        tags=tuple(rec["tags"]),
        memory_type=rec["memory_type"],
        access_level=rec["access_level"],
        source_node_id=rec["source_node_id"],
        imported_from=rec["imported_from"],
        original_confidence=rec["original_confidence"],
        transferred_confidence=rec["transferred_confidence"],
        signed_record=None if signed is None else bytes(signed),
        content_hash=rec["content_hash"],
        recipients=tuple(rec["recipients"]),
        contested_with=tuple(rec["contested_with"]),
        verified_against=tuple(rec["verified_against"]),
        change_reason=rec["change_reason"],
        provenance=tuple(
            ProvenanceEntry(src, via, at.astimezone(UTC), digest)
            for src, via, at, digest in rec["provenance"]
        ),
        embedding=vector,
    )


class PgTables(Protocol):
    """What every per-port part of the Postgres adapter reads from the store it is part of:
    the pool (inside ``atomic``, the unit's connection) and the recall index's write hook."""

    #: Lessons inserted through the store since it last analysed the table.
    _inserted: int

    @property
    @abc.abstractmethod
    def pool(self) -> Any:
        """The asyncpg pool, or the unit of work's connection behaving as one."""

    @abc.abstractmethod
    def _touch(self, ids: Iterable[str]) -> None:
        """These lessons were written: the recall index re-reads them."""

    def _touch_inserted(self, rows: Iterable[LessonRow]) -> None:
        """These lessons were just inserted: the recall index re-reads those it could hold.
        A lesson stored without its vector (written behind the reply) is in no index until
        ``set_embeddings`` writes one, which touches it then; re-reading it before would
        read a burst of writes row by row at the next search, to learn it holds none of them."""
        self._touch(row.id for row in rows if row.embedding is not None)
