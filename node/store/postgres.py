"""Postgres + pgvector ``LessonStore`` on asyncpg.

Every asyncpg/Postgres/socket error is translated at this boundary into a
``lamarck.errors.StoreError`` subclass (``raise ... from e``): callers never see asyncpg.

Search uses the HNSW cosine index with ``hnsw.ef_search`` (default 100, raised to ``k`` when
``k`` is larger) so recall@5 stays >= 0.95; filters are applied in SQL. pgvector 0.6 filters
*after* the index scan, so a selective filter can leave fewer than ``k`` hits among the
``ef_search`` candidates: the adapter then re-runs the query as an exact scan, so a filter
never hides a matching lesson.

Recall's searches (recallable lessons by scope: ``recall_index.covers``) are answered from
memory while those lessons are few (``recall_index``, on in the node): exact cosine over a
copy of the rows that every write through this adapter keeps true. The adapter must then be
its database's only writer, as a node is (one node, one database): a row changed behind its
back is seen after the next ``reconnect()``.

Bulk loads: ``insert_lessons`` uses binary COPY in one transaction (~66k rows/s into a table
without a vector index). With the HNSW index present every row costs an index insertion
(~300 rows/s at 100k rows), so wrap large loads in ``async with store.bulk_load():`` which
drops the index and rebuilds it once at the end (``build_vector_index``, ~60 s at 100k rows
with ``maintenance_work_mem = 1GB``). Search stays correct (exact) while the index is absent.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Self

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from lamarck.domain.rows import (
    Category,
    ImportedRecord,
    LessonEvent,
    LessonFacts,
    LessonFilter,
    LessonRow,
    LessonStatus,
    OutcomeRow,
    ProvenanceEntry,
    QuarantineRow,
    RejectionRow,
    RelevanceFloor,
    ScoredLesson,
    Vector,
    check_event_kinds,
)
from lamarck.errors import ConflictError, NotFound, StoreError, StoreUnavailable
from lamarck.learning.mechanical import AVOID_TAG
from lamarck.node.store.memory import QUARANTINE_STATES
from lamarck.node.store.migrate import run_migrations
from lamarck.node.store.port import LessonStore
from lamarck.node.store.recall_index import (
    COVERED_STATUSES,
    RecallIndex,
    RecallIndexParams,
    RecallIndexState,
    RecallIndexStatus,
    VectorRow,
    covers,
)

__all__ = ["VECTOR_INDEX", "PostgresLessonStore", "db_guard", "translate_error"]

#: Name of the HNSW index created by migration 0001.
VECTOR_INDEX = "lessons_embedding_hnsw"

_log = logging.getLogger(__name__)

# pgvector refuses hnsw.ef_search above 1000.
_MAX_EF_SEARCH = 1000

_LESSON_COLUMNS = (
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
_PROVENANCE_COLUMNS = ("lesson_id", "source_node_id", "via_node_id", "received_at", "content_hash")

_SELECT_LESSON = (
    ", ".join(f"l.{c}" for c in _LESSON_COLUMNS)
    # An array of anonymous records, decoded by asyncpg from binary (text and timestamptz
    # as they are): a JSON aggregate cost a search of 30 rows ~0.1 ms to build and parse.
    + ", ARRAY(SELECT ROW(p.source_node_id, p.via_node_id, p.received_at, p.content_hash)"
    " FROM lesson_provenance p WHERE p.lesson_id = l.id ORDER BY p.id) AS provenance"
)
#: The rows the recall index holds (``recall_index.is_covered``), as SQL on alias ``l``: built
#: from the same statuses and category, so the two cannot drift apart.
_COVERED = (
    f"l.embedding IS NOT NULL AND l.category = '{Category.LESSON.value}'"
    f" AND l.status IN ({', '.join(repr(s.value) for s in COVERED_STATUSES)})"
)

_INSERT_LESSON = "INSERT INTO lessons ({}) VALUES ({})".format(
    ", ".join(_LESSON_COLUMNS), ", ".join(f"${i}" for i in range(1, len(_LESSON_COLUMNS) + 1))
)
# Every column but the id (the key, first) and the embedding (last; kept unless a new one
# is given).
_UPDATE_LESSON = "UPDATE lessons SET {}, embedding = COALESCE(${}, embedding) WHERE id = $1".format(
    ", ".join(f"{c} = ${i + 1}" for i, c in enumerate(_LESSON_COLUMNS[:-1]) if i > 0),
    len(_LESSON_COLUMNS),
)
_INSERT_PROVENANCE = "INSERT INTO lesson_provenance ({}) VALUES ($1, $2, $3, $4, $5)".format(
    ", ".join(_PROVENANCE_COLUMNS)
)
_N = len(_LESSON_COLUMNS)
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
    f" p AS (INSERT INTO lesson_provenance ({', '.join(_PROVENANCE_COLUMNS)})"
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
    f" p AS (INSERT INTO lesson_provenance ({', '.join(_PROVENANCE_COLUMNS)})"
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
SELECT {_SELECT_LESSON} FROM chain JOIN lessons l USING (id) ORDER BY chain.depth
"""


def _selective(flt: LessonFilter) -> bool:
    """Whether ``flt`` names a key with its own index (an operation, a tag, an exact claim):
    then the matching rows are few whatever the store's size."""
    return any(x is not None for x in (flt.operation, flt.about, flt.tags, flt.content))


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


def _encode_jsonb(value: Any) -> bytes:
    return b"\x01" + json.dumps(value, separators=(",", ":")).encode()


def _decode_jsonb(data: bytes) -> Any:
    return json.loads(data[1:])


TRANSLATED_ERRORS = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    OSError,
    TimeoutError,
)


class _JoinedPool:
    """One connection in a transaction, answering the pool methods the adapter uses."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        #: Lessons the unit wrote: the recall index re-reads them once it has ended.
        self.touched: set[str] = set()

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[Any]:
        """The transaction's connection (``conn.transaction()`` inside it is a savepoint)."""
        yield self._conn

    def __getattr__(self, name: str) -> Any:
        # execute, executemany, fetch, fetchrow, fetchval: the connection has them all.
        return getattr(self._conn, name)


#: The store and connection of the unit of work the current task is in (see ``atomic``).
_UNIT: contextvars.ContextVar[tuple[PostgresLessonStore, _JoinedPool] | None] = (
    contextvars.ContextVar("lamarck_store_unit", default=None)
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


def _where(flt: LessonFilter, first: int = 1) -> tuple[str, list[Any]]:
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


def _lesson_args(row: LessonRow) -> list[Any]:
    """Column values of ``row`` in ``_LESSON_COLUMNS`` order."""
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


_INSERT_EVENT = (
    "INSERT INTO lesson_events (lesson_id, at, kind, actor, confidence_before,"
    " confidence_after, reason, outcome_id, version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
)


def _event_args(events: Sequence[LessonEvent]) -> list[tuple[Any, ...]]:
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


def _event_columns(events: Sequence[LessonEvent]) -> list[list[Any]]:
    """The events as nine parallel arrays (``_EVENT_ROWS``)."""
    rows = _event_args(events)
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


async def _keep_session(conn: Any) -> None:
    """The pool's reset on release, beyond asyncpg's own (which rolls back an open
    transaction): nothing. The store sets no session state (``SET LOCAL`` ends with its
    transaction; no LISTEN, no session advisory lock, cursors only inside transactions), so
    the default ``RESET ALL; CLOSE ALL; ...`` would only add a round trip to every call."""
    del conn


def _to_lesson(rec: Any) -> LessonRow:
    """A ``LessonRow`` from a record selected with ``_SELECT_LESSON``."""
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


def _to_outcome(rec: Any) -> OutcomeRow:
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


def _to_quarantine(rec: Any) -> QuarantineRow:
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


def _stored_vector(vector: Vector, dim: int) -> Vector:
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    if v.shape[0] != dim:
        raise StoreError(
            f"embedding has {v.shape[0]} dimensions, the store holds {dim}",
            reason="dimension_mismatch",
        )
    return v


def _query_vector(query: Vector, dim: int) -> Vector:
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if q.shape[0] != dim:
        raise StoreError(
            f"query has {q.shape[0]} dimensions, the store holds {dim}",
            reason="dimension_mismatch",
        )
    norm = float(np.linalg.norm(q))
    if not np.isfinite(norm) or norm == 0.0:
        raise StoreError("the query vector is zero or not finite", reason="invalid_query")
    return q


class PostgresLessonStore(LessonStore):
    """A ``LessonStore`` in PostgreSQL with pgvector; ``connect()`` is the usual entry point.

    ``dim`` is the embedding dimension of the node's embedder; a database created with another
    dimension is refused at ``migrate()``. ``ef_search`` is the HNSW candidate list size per
    query (recall against speed).
    """

    def __init__(
        self,
        dsn: str,
        dim: int,
        *,
        min_size: int = 1,
        max_size: int = 10,
        ef_search: int = 100,
        connect_timeout: float = 10.0,
        index_build_memory: str = "1GB",
        recall_index: RecallIndexParams | None = None,
        password: str | None = None,
    ) -> None:
        self.dsn = dsn
        self.dim = dim
        # Given apart from the DSN (from a Secret), so it is never in a URL or a log line;
        # None: the DSN's, else PGPASSWORD / PGPASSFILE.
        self._password = password or None
        self.ef_search = max(1, min(ef_search, _MAX_EF_SEARCH))
        self.index_build_memory = index_build_memory
        self._min_size = min_size
        self._max_size = max_size
        self._timeout = connect_timeout
        self._pool: Any = None
        self._vector_schema = "public"
        # Open bulk_load blocks, and the lock that orders their index drop and rebuild.
        self._bulk_users = 0
        self._bulk_lock = asyncio.Lock()
        # Lessons inserted through this store since it last analysed the table
        # (``refresh_statistics``).
        self._inserted = 0
        # Recallable lessons in memory (``recall_index``): recall's search without a round
        # trip. None: every search goes to Postgres.
        self._index = (
            RecallIndex(recall_index, dim)
            if recall_index is not None and recall_index.max_rows > 0
            else None
        )
        self._index_lock = asyncio.Lock()

    @classmethod
    async def connect(cls, dsn: str, dim: int, **options: Any) -> Self:
        """Create the store, run migrations and open the connection pool."""
        store = cls(dsn, dim, **options)
        await store.migrate()
        return store

    # -- lifecycle -------------------------------------------------------------------------
    async def _connect_one(self) -> Any:
        async with db_guard():
            return await asyncpg.connect(
                self.dsn,
                password=self._password,
                timeout=self._timeout,
                server_settings={"application_name": "lamarck"},
            )

    async def migrate(self) -> None:
        """Apply pending migrations (vector extension first), then open the pool if needed."""
        self._forget_index()
        conn = await self._connect_one()
        try:
            async with db_guard():
                await run_migrations(conn, self.dim)
                schema = await conn.fetchval(
                    "SELECT n.nspname FROM pg_extension e"
                    " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
                )
                self._vector_schema = schema or "public"
        finally:
            with contextlib.suppress(*TRANSLATED_ERRORS):
                await conn.close()
        if self._pool is None:
            async with db_guard():
                self._pool = await asyncpg.create_pool(
                    self.dsn,
                    password=self._password,
                    min_size=self._min_size,
                    max_size=self._max_size,
                    timeout=self._timeout,
                    init=self._init_connection,
                    reset=_keep_session,
                    # A startup parameter, not a SET: the pool's RESET ALL on release
                    # returns to it. Postgres keeps it as a placeholder until pgvector loads.
                    server_settings={
                        "application_name": "lamarck",
                        "hnsw.ef_search": str(self.ef_search),
                    },
                )
        if not self._bulk_users and not await self.has_vector_index():
            # A process killed inside bulk_load left the index dropped: build it again.
            await self._rebuild_vector_index()

    async def _init_connection(self, conn: Any) -> None:
        # The vector type exists only after migrate(), hence a pool opened after it.
        await register_vector(conn, schema=self._vector_schema)
        # Binary, so binary COPY (insert_lessons) can carry jsonb too: version byte 1 + text.
        await conn.set_type_codec(
            "jsonb",
            encoder=_encode_jsonb,
            decoder=_decode_jsonb,
            schema="pg_catalog",
            format="binary",
        )

    async def ping(self, timeout_s: float) -> None:
        """One cheap query (``SELECT 1``) within ``timeout_s``; ``StoreUnavailable`` if the
        database does not answer (the supervisor's probe: ``lamarck.node.supervision``)."""
        # A timeout is translated like any other outage (StoreUnavailable). asyncio.timeout,
        # not wait_for: on Python 3.11 wait_for returns the query's result instead of raising
        # when a cancel arrives as the query ends, and the supervisor's loop then never stops.
        try:
            async with db_guard(), asyncio.timeout(timeout_s):
                await self.pool.fetchval("SELECT 1")
        except StoreUnavailable:
            # Down: recall stops answering from the rows in memory, which nothing can keep
            # true meanwhile; its next search reads them again, and fails while it is down.
            self._forget_index()
            raise

    async def reconnect(self, dsn: str | None = None) -> None:
        """Drop every pooled connection (they died with the server) and prove the database
        answers again; with a new ``dsn`` (a restarted embedded server may move its socket),
        open a new pool there. ``StoreUnavailable`` while it still does not answer."""
        # Whatever happened to the server meanwhile, the rows are read again.
        self._forget_index()
        if dsn is not None and dsn != self.dsn:
            self.dsn = dsn
            old, self._pool = self._pool, None
            await self.migrate()
            if old is not None:
                old.terminate()
            return
        if self._pool is None:
            await self.migrate()
            return
        async with db_guard():
            # The pool reconnects each expired connection on its next acquire.
            await self._pool.expire_connections()
            async with asyncio.timeout(self._timeout):
                await self._pool.fetchval("SELECT 1")

    async def close(self) -> None:
        """Close the pool; the store can be reopened with ``migrate()``."""
        self._forget_index()
        pool, self._pool = self._pool, None
        if pool is not None:
            async with db_guard():
                await pool.close()

    @contextlib.asynccontextmanager
    async def atomic(self) -> AsyncIterator[None]:
        """Every store call of this task inside the block commits together, or none does.

        The block holds one connection in a transaction; ``pool`` hands it to every method
        (and to the outbox and reputation book, which read ``pool`` too) for this task only.
        A nested block joins the outer one.
        """
        held = _UNIT.get()
        if held is not None and held[0] is self:
            yield
            return
        touched: set[str] = set()
        try:
            async with db_guard(), self.pool.acquire() as conn, conn.transaction():
                unit = _JoinedPool(conn)
                token = _UNIT.set((self, unit))
                try:
                    yield
                finally:
                    touched = unit.touched
                    _UNIT.reset(token)
        finally:
            # Committed or rolled back, the unit's rows are read again: a search meanwhile
            # read them as they were before it.
            if touched and self._index is not None:
                self._index.touch(touched)

    @property
    def pool(self) -> Any:
        """The asyncpg pool (for the outbox and benchmarks); ``StoreUnavailable`` if closed.

        Inside :meth:`atomic`, the block's connection, behaving as a pool of one.
        """
        held = _UNIT.get()
        if held is not None and held[0] is self:
            return held[1]
        if self._pool is None:
            raise StoreUnavailable(
                "the lesson store is not open: call migrate() or connect() first",
                reason="not_connected",
            )
        return self._pool

    # -- bulk loading and the vector index -------------------------------------------------
    async def has_vector_index(self) -> bool:
        """Whether the HNSW index on ``lessons.embedding`` exists."""
        async with db_guard():
            found = await self.pool.fetchval(
                "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                " WHERE c.relname = $1",
                VECTOR_INDEX,
            )
        # An invalid one is what a concurrent build killed half-way leaves: not an index.
        return found is True

    async def drop_vector_index(self) -> None:
        """Drop the HNSW index (before a large load); search falls back to exact scans."""
        async with db_guard():
            await self.pool.execute(f"DROP INDEX IF EXISTS {VECTOR_INDEX}")

    async def build_vector_index(
        self, *, m: int = 16, ef_construction: int = 64, concurrently: bool = False
    ) -> None:
        """Create the HNSW cosine index if absent, with ``index_build_memory`` for the build;
        ``concurrently``: without blocking writes meanwhile (slower: two passes)."""
        how = "CONCURRENTLY " if concurrently else ""
        async with db_guard(), self.pool.acquire() as conn:
            await conn.execute(f"SET maintenance_work_mem = '{self.index_build_memory}'")
            try:
                await conn.execute(
                    f"CREATE INDEX {how}IF NOT EXISTS {VECTOR_INDEX} ON lessons"
                    " USING hnsw (embedding vector_cosine_ops)"
                    f" WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
                )
            finally:
                await conn.execute("RESET maintenance_work_mem")

    @contextlib.asynccontextmanager
    async def bulk_load(self) -> AsyncIterator[Self]:
        """Drop the HNSW index for the block; analyse and rebuild it at the end (even on error).

        Inserting into an HNSW index costs ~3 ms a row at 100k rows; one build afterwards is
        ~20x cheaper. Searches during the block are exact scans. Blocks may overlap (two
        catch-ups at once): the first to enter drops the index, the last to leave rebuilds
        it. A process killed inside a block leaves no index; ``migrate()`` (every start)
        builds it again.
        """
        async with self._bulk_lock:
            if self._bulk_users == 0:
                await self.drop_vector_index()
            self._bulk_users += 1
        try:
            yield self
        finally:
            async with self._bulk_lock:
                self._bulk_users -= 1
                if self._bulk_users == 0:
                    await self._rebuild_vector_index()

    @property
    def bulk_loading(self) -> bool:
        """Whether a ``bulk_load`` block is open (the vector index is down meanwhile)."""
        return self._bulk_users > 0

    async def refresh_statistics(self, share: float) -> bool:
        """ANALYZE the lessons table when the lessons inserted through this store since it
        last did are at least ``share`` of the rows the planner's statistics count (or the
        table was never analysed); True when it did.

        Without fresh statistics the planner does not pick the HNSW index for search: after
        an import into a young store it scanned every row of the scope and sorted them
        (2,000 lessons: 1.8 ms of execution against 1.0 with the index, growing with the
        store). Autovacuum refreshes them too, but only on its next round (a minute by
        default), while an agent recalls as soon as its node has caught up.
        """
        if self._inserted <= 0:
            return False
        async with db_guard():
            counted = await self.pool.fetchval(
                "SELECT reltuples FROM pg_class WHERE oid = 'lessons'::regclass"
            )
            # reltuples is -1 until the table is first analysed (PostgreSQL 14 and later).
            if counted is not None and counted >= 0 and self._inserted < share * counted:
                return False
            await self._analyze()
        return True

    async def _analyze(self) -> None:
        inserted = self._inserted
        await self.pool.execute("ANALYZE lessons")
        # Inserts made while it ran are counted again next time.
        self._inserted -= inserted

    async def _rebuild_vector_index(self) -> None:
        # Fresh statistics first: with stale ones the planner may pick a btree scan and a
        # sort over the HNSW index for search.
        async with db_guard():
            await self._analyze()
        # A live node keeps writing while the index builds (15 s at 67k lessons here):
        # concurrently, so RecordOutcome never waits on the build. What a killed build
        # left (an invalid index) goes first.
        await self.drop_vector_index()
        await self.build_vector_index(concurrently=True)

    # -- outcomes --------------------------------------------------------------------------
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

    # -- lessons ---------------------------------------------------------------------------
    async def insert_lesson(self, lesson: LessonRow, events: Sequence[LessonEvent] = ()) -> None:
        """Store a new lesson (and append ``events``, one transaction); a duplicate id or
        content hash raises ``ConflictError``."""
        check_event_kinds(events)
        # One statement, atomic by itself: no transaction round trips.
        async with db_guard():
            if lesson.provenance:
                await self.pool.execute(
                    _INSERT_LESSON_ALL,
                    *_lesson_args(lesson),
                    *_provenance_columns(lesson),
                    *_event_columns(events),
                )
            elif events:
                await self.pool.execute(
                    _INSERT_LESSON_AND_EVENTS, *_lesson_args(lesson), *_event_columns(events)
                )
            else:
                await self.pool.execute(_INSERT_LESSON, *_lesson_args(lesson))
        self._touch([lesson.id])
        self._inserted += 1

    async def insert_lessons(self, lessons: Sequence[LessonRow]) -> int:
        """Bulk insert with binary COPY in one transaction, all or nothing.

        Fast without the HNSW index; for large loads use ``bulk_load()`` (module docstring).
        """
        if not lessons:
            return 0
        records = [tuple(_lesson_args(row)) for row in lessons]
        provenance = [p for row in lessons for p in _provenance_args(row)]
        async with db_guard(), self.pool.acquire() as conn, conn.transaction():
            await conn.copy_records_to_table(
                "lessons", records=records, columns=list(_LESSON_COLUMNS)
            )
            if provenance:
                await conn.copy_records_to_table(
                    "lesson_provenance", records=provenance, columns=list(_PROVENANCE_COLUMNS)
                )
        self._touch(row.id for row in lessons)
        self._inserted += len(records)
        return len(records)

    async def get_lesson(self, lesson_id: str) -> LessonRow:
        """Return one lesson or raise ``NotFound``."""
        async with db_guard():
            rec = await self.pool.fetchrow(
                f"SELECT {_SELECT_LESSON} FROM lessons l WHERE l.id = $1", lesson_id
            )
        if rec is None:
            raise NotFound(f"lesson {lesson_id} not found", id=lesson_id)
        return _to_lesson(rec)

    async def get_lessons(self, ids: Sequence[str]) -> list[LessonRow]:
        """Return the stored lessons among ``ids`` (missing ids skipped), in input order."""
        if not ids:
            return []
        async with db_guard():
            recs = await self.pool.fetch(
                f"SELECT {_SELECT_LESSON} FROM lessons l WHERE l.id = ANY($1::text[])", list(ids)
            )
        by_id = {r["id"]: _to_lesson(r) for r in recs}
        return [by_id[i] for i in ids if i in by_id]

    async def update_lesson(self, lesson: LessonRow, events: Sequence[LessonEvent] = ()) -> None:
        """Replace an existing lesson's state and provenance (and append ``events``, one
        transaction); the embedding is kept if unset."""
        check_event_kinds(events)
        # One statement (row, provenance and events), atomic by itself: one round trip.
        async with db_guard():
            updated = await self.pool.fetchval(
                _UPDATE_LESSON_ALL,
                *_lesson_args(lesson),
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
            args = _lesson_args(new)
            args[_LESSON_COLUMNS.index("supersedes")] = old_id
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
        return [_to_lesson(r) for r in recs]

    async def list_lessons(self, flt: LessonFilter) -> list[LessonRow]:
        """Lessons matching the filter: highest confidence first, then newest, then id."""
        where, args = _where(flt)
        n = len(args)
        async with db_guard():
            recs = await self.pool.fetch(
                f"SELECT {_SELECT_LESSON} FROM lessons l WHERE {where}"
                f" ORDER BY l.confidence DESC, l.created_at DESC, l.id"
                f" LIMIT ${n + 1} OFFSET ${n + 2}",
                *args,
                flt.limit,
                flt.offset,
            )
        return [_to_lesson(r) for r in recs]

    async def scan_lessons(self, flt: LessonFilter, after: str, limit: int) -> list[LessonRow]:
        """Lessons matching the filter in id order, the first ``limit`` above ``after``
        (keyset pages on the primary key: a confidence-ordered OFFSET page sorted every
        matching row, whole, to skip to it: 0.13-0.28 s per page at 20,000 lessons, against
        0.015 s)."""
        where, args = _where(flt)
        n = len(args)
        async with db_guard():
            recs = await self.pool.fetch(
                f"SELECT {_SELECT_LESSON} FROM lessons l WHERE {where} AND l.id > ${n + 1}"
                f" ORDER BY l.id LIMIT ${n + 2}",
                *args,
                after,
                limit,
            )
        return [_to_lesson(r) for r in recs]

    async def _search_once(
        self,
        conn: Any,
        query: Vector,
        k: int,
        flt: LessonFilter,
        floor: RelevanceFloor | None,
        *,
        exact: bool,
    ) -> tuple[int, list[ScoredLesson]]:
        """How many of the top-``k`` the scan found, and those the floor keeps."""
        cut: list[Any] = [] if floor is None else [floor.minimum, floor.relative]
        # The index run's LIMIT is written into the statement, not bound: a bound LIMIT has
        # no row estimate for a generic plan, so Postgres planned the index run anew on
        # every call (custom plans), ~0.4 ms of a ~2 ms search. Written in, a statement per
        # k (one, in practice: ``candidate_pool``) gets its generic plan after five calls;
        # its shape cannot change with the values (the HNSW order and this LIMIT). The exact
        # run keeps its bound LIMIT: its plan may rightly depend on the filter's values.
        # The statement's arguments in order: each one's $-number is its place here.
        bound: list[Any] = [query, k] if exact else [query]
        limit = "$2" if exact else str(int(k))
        cut_at = [f"${len(bound) + 1 + i}" for i in range(len(cut))]
        bound += cut
        where, args = _where(flt, first=len(bound) + 1)
        keep = (
            ""
            if floor is None
            else f" AND 1 - h.distance >= GREATEST({cut_at[0]}::float8,"
            f" (1 - b.d) * {cut_at[1]}::float8)"
        )
        # "+ 0" hides the operator from the planner: the exact run cannot use HNSW.
        order = "(l.embedding <=> $1) + 0" if exact else "l.embedding <=> $1"
        # Only the winners the floor keeps are joined back for their full columns and
        # provenance: fetching (and decoding) the irrelevant rest cost recall a third of its
        # search time. NaN (a zero stored vector has no direction) is dropped, as in the
        # memory adapter.
        recs = await conn.fetch(
            f"WITH hits AS (SELECT l.id, l.embedding <=> $1 AS distance FROM lessons l"
            f" WHERE l.embedding IS NOT NULL AND {where} ORDER BY {order} LIMIT {limit}),"
            " found AS (SELECT count(*) AS n FROM hits),"
            " best AS (SELECT min(distance) AS d FROM hits WHERE distance <> 'NaN'::float8),"
            " kept AS (SELECT h.id, h.distance FROM hits h, best b"
            f" WHERE h.distance <> 'NaN'::float8{keep})"
            f" SELECT {_SELECT_LESSON}, k.distance, f.n FROM found f"
            " LEFT JOIN (kept k JOIN lessons l USING (id)) ON true"
            " ORDER BY k.distance, l.id",
            *bound,
            *args,
        )
        found = int(recs[0]["n"]) if recs else 0
        hits = [
            ScoredLesson(_to_lesson(r), 1.0 - float(r["distance"]))
            for r in recs
            if r["distance"] is not None
        ]
        return found, hits

    async def search(
        self, query: Vector, k: int, flt: LessonFilter, floor: RelevanceFloor | None = None
    ) -> list[ScoredLesson]:
        """Top-``k`` by cosine similarity among matching lessons (HNSW, exact fallback); with
        ``floor``, only the relevant ones among them are fetched.

        Ties are broken by id; ``flt.limit``/``offset`` do not apply (``k`` does).
        """
        if k <= 0:
            return []
        q = _query_vector(query, self.dim)
        if self._index is not None and covers(flt) and _UNIT.get() is None:
            index = await self._current_index()
            if index is not None and index.holds_rows:
                return index.search(q, k, flt, floor)
            if index is not None:
                # Compact: the winners' rows by id (a key lookup), scored exactly.
                wanted = index.shortlist(q, k, flt, floor)
                if not wanted:
                    return []
                # Rows read for earlier searches are kept (``rows_held`` of them); the rest
                # are read here, all of them, so that the next search finds them kept.
                held, missing = index.cached(wanted)
                if missing:
                    generation = index.generation
                    async with db_guard():
                        recs = await self.pool.fetch(
                            f"SELECT {_SELECT_LESSON} FROM lessons l"
                            f" WHERE l.id = ANY($1::text[]) AND {_COVERED}",
                            missing,
                        )
                    read = [_to_lesson(r) for r in recs]
                    index.remember(read, generation)
                    held += read
                return index.rank(q, held, k, flt, floor)
        async with db_guard(), self.pool.acquire() as conn:
            if _selective(flt):
                # An indexed key selects a few rows: ranking them exactly is cheaper than an
                # HNSW scan whose candidates the filter would mostly drop (and then the exact
                # run anyway).
                _, hits = await self._search_once(conn, q, k, flt, floor, exact=True)
                return hits
            if k > self.ef_search:
                async with conn.transaction():
                    # ef_search bounds how many rows the index scan can return.
                    await conn.execute(f"SET LOCAL hnsw.ef_search = {min(k, _MAX_EF_SEARCH)}")
                    found, hits = await self._search_once(conn, q, k, flt, floor, exact=False)
            else:
                found, hits = await self._search_once(conn, q, k, flt, floor, exact=False)
            if found < k:
                # The index scan filters after collecting ef_search candidates: with a
                # selective filter it can miss matches. Exact is cheap exactly then.
                _, hits = await self._search_once(conn, q, k, flt, floor, exact=True)
        return hits

    # -- the recall index ------------------------------------------------------------------
    @property
    def recall_index_state(self) -> RecallIndexState:
        """Whether recall searches in memory, and over how many lessons (``HasRecallIndex``)."""
        if self._index is None:
            return RecallIndexState(RecallIndexStatus.OFF, 0, 0)
        return self._index.state

    def _touch(self, ids: Iterable[str]) -> None:
        """These lessons were written: the recall index re-reads them before its next search
        (and, inside a unit of work, once more after the unit has ended)."""
        if self._index is None or not self._index.enabled:
            return
        ids = list(ids)
        self._index.touch(ids)
        held = _UNIT.get()
        if held is not None and held[0] is self:
            held[1].touched.update(ids)

    def _forget_index(self) -> None:
        if self._index is not None:
            self._index.reset()

    async def _current_index(self) -> RecallIndex | None:
        """The recall index with every write so far read in, or None once it is off.

        Outside any unit of work only: its reads go to the pool and see committed rows.
        """
        index = self._index
        if index is None:
            return None
        async with self._index_lock, db_guard():
            pool = self.pool
            if index.enabled and not index.loaded:
                since = index.generation
                count = await pool.fetchval(f"SELECT count(*) FROM lessons l WHERE {_COVERED}")
                fits, whole = index.fits(count)
                if not fits:
                    index.disable()
                    _log.info(
                        "recall index off: %d recallable lessons, more than max_rows %d;"
                        " searches go to the HNSW index",
                        count,
                        index.params.max_rows,
                    )
                elif whole:
                    recs = await pool.fetch(
                        f"SELECT {_SELECT_LESSON} FROM lessons l WHERE {_COVERED}"
                    )
                    index.load((_to_lesson(r) for r in recs), since)
                else:
                    # Past rows_held: the vectors and what filters them, not whole rows.
                    recs = await pool.fetch(
                        f"SELECT l.id, l.status, l.scope, l.embedding FROM lessons l"
                        f" WHERE {_COVERED}"
                    )
                    index.load(
                        (
                            VectorRow(
                                r["id"],
                                LessonStatus(r["status"]),
                                r["scope"],
                                r["embedding"].to_numpy(),
                            )
                            for r in recs
                        ),
                        since,
                    )
            dirty = index.dirty() if index.enabled and index.loaded else {}
            if dirty:
                recs = await pool.fetch(
                    f"SELECT {_SELECT_LESSON} FROM lessons l WHERE l.id = ANY($1::text[])",
                    list(dirty),
                )
                index.refresh(dirty, [_to_lesson(r) for r in recs])
        return index if index.enabled and index.loaded else None

    async def count_lessons(self, flt: LessonFilter) -> int:
        """How many lessons match the filter (ignores limit/offset)."""
        where, args = _where(flt)
        async with db_guard():
            count = await self.pool.fetchval(f"SELECT count(*) FROM lessons l WHERE {where}", *args)
        return int(count)

    async def retired_evidence_ids(self, among: Sequence[str] | None = None) -> set[str]:
        """Outcome ids cited by any lesson whose ``superseded_by`` is ``retired:<who>``; with
        ``among``, only those ids. Read from ``retired_evidence``, which a trigger keeps
        (migration 0010): no index of ``lessons`` reads its evidence."""
        async with db_guard():
            if among is None:
                recs = await self.pool.fetch(
                    "SELECT DISTINCT outcome_id AS id FROM retired_evidence"
                )
            elif not among:
                return set()
            else:
                recs = await self.pool.fetch(
                    "SELECT DISTINCT outcome_id AS id FROM retired_evidence"
                    " WHERE outcome_id = ANY($1::text[])",
                    list(among),
                )
        return {r["id"] for r in recs}

    async def find_by_content_hash(self, content_hash: str) -> LessonRow | None:
        """The lesson stored with this content hash, if any."""
        async with db_guard():
            rec = await self.pool.fetchrow(
                f"SELECT {_SELECT_LESSON} FROM lessons l WHERE l.content_hash = $1", content_hash
            )
        return None if rec is None else _to_lesson(rec)

    async def proven_operations(self, operations: Sequence[str]) -> set[str]:
        """Of ``operations``, those an active lesson this node's outcomes back is about (on
        the operation index; ``has_local_evidence`` in SQL)."""
        if not operations:
            return set()
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT DISTINCT l.operation FROM lessons l"
                " WHERE l.operation = ANY($1::text[]) AND l.status = 'active'"
                " AND l.category = 'lesson'"
                " AND ((l.imported_from IS NULL AND l.evidence <> '{}') OR l.confirmations > 0)",
                list(dict.fromkeys(operations)),
            )
        return {r["operation"] for r in recs}

    async def project_scopes(self, limit: int) -> list[str]:
        """Project scopes of own lessons and of outcomes, sorted, at most ``limit``."""
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT scope FROM (SELECT DISTINCT scope FROM lessons"
                " WHERE imported_from IS NULL AND scope LIKE 'project:%'"
                " UNION SELECT DISTINCT 'project:' || project FROM outcomes WHERE project <> '')"
                " AS s ORDER BY scope LIMIT $1",
                limit,
            )
        return [r["scope"] for r in recs]

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

    async def lesson_facts(self, after: str, limit: int) -> list[LessonFacts]:
        """Lessons (category ``lesson``, any status) by id after ``after``: six columns (keyset
        pages; the vector, record and provenance stay where they are)."""
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT id, status, confidence, created_at, last_used, context FROM lessons"
                " WHERE category = $1 AND id > $2 ORDER BY id LIMIT $3",
                Category.LESSON.value,
                after,
                limit,
            )
        return [
            LessonFacts(
                r["id"],
                LessonStatus(r["status"]),
                r["confidence"],
                r["created_at"],
                r["last_used"],
                r["context"],
            )
            for r in recs
        ]

    async def set_embeddings(self, vectors: Sequence[tuple[str, Vector]]) -> None:
        """Set each listed lesson's embedding only (one pipelined batch); unknown ids are
        skipped."""
        rows = [(i, _stored_vector(v, self.dim)) for i, v in vectors]
        if not rows:
            return
        async with db_guard():
            await self.pool.executemany("UPDATE lessons SET embedding = $2 WHERE id = $1", rows)
        self._touch(i for i, _ in rows)

    async def unembedded(self, limit: int) -> list[tuple[str, str]]:
        """Claimed or active lessons with no embedding, oldest first."""
        async with db_guard():
            recs = await self.pool.fetch(
                "SELECT id, content FROM lessons WHERE embedding IS NULL"
                " AND status IN ('claimed', 'active') ORDER BY created_at, id LIMIT $1",
                max(0, limit),
            )
        return [(r["id"], r["content"]) for r in recs]

    async def mark_uses(self, uses: Sequence[tuple[Sequence[str], datetime]]) -> None:
        """Every recall's uses in one statement (per lesson: how many, and the latest);
        unknown ids are skipped. ``updated_at`` stays: a use is not a signed field, so it must
        not make a newer record version."""
        counts: dict[str, int] = {}
        latest: dict[str, datetime] = {}
        for lesson_ids, at in uses:
            for lesson_id in dict.fromkeys(lesson_ids):
                counts[lesson_id] = counts.get(lesson_id, 0) + 1
                held = latest.get(lesson_id)
                latest[lesson_id] = at if held is None else max(held, at)
        if not counts:
            return
        ids = list(counts)
        reads = self._index.reads if self._index is not None else 0
        async with db_guard():
            await self.pool.execute(
                # The latest use wins: a use mark written behind a reply may arrive after a
                # newer one.
                "UPDATE lessons AS l SET last_used = GREATEST(COALESCE(l.last_used, u.at), u.at),"
                " use_count = l.use_count + u.n"
                " FROM unnest($1::text[], $2::int[], $3::timestamptz[]) AS u(id, n, at)"
                " WHERE l.id = u.id",
                ids,
                [counts[i] for i in ids],
                [latest[i] for i in ids],
            )
        index = self._index
        if (
            index is not None
            and _UNIT.get() is None
            and index.reads == reads
            and not self._index_lock.locked()
        ):
            # Committed, and no read of rows overlapped it: the same change in place, where
            # re-reading the rows would cost the next recall the round trip the index saves.
            index.apply_uses(counts, latest)
        else:
            self._touch(ids)

    async def hard_delete(self, lesson_id: str) -> None:
        """Remove a lesson, its provenance and pending outbox rows; ``NotFound`` if absent."""
        async with db_guard(), self.pool.acquire() as conn, conn.transaction():
            status = await conn.execute("DELETE FROM lessons WHERE id = $1", lesson_id)
            await conn.execute("DELETE FROM lesson_events WHERE lesson_id = $1", lesson_id)
        self._touch([lesson_id])
        if status == "DELETE 0":
            raise NotFound(f"lesson {lesson_id} not found", id=lesson_id)

    # -- quarantine and rejections ---------------------------------------------------------
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

    # -- lesson event log ------------------------------------------------------------------
    async def append_events(self, events: Sequence[LessonEvent]) -> None:
        """Append to the event log in one statement; an unknown kind refuses the whole batch."""
        check_event_kinds(events)
        if not events:
            return
        async with db_guard():
            await self.pool.executemany(_INSERT_EVENT, _event_args(events))

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

    # -- node state ------------------------------------------------------------------------
    async def get_state(self, key: str) -> dict[str, Any] | None:
        """The document stored under ``key`` in ``node_state``, or ``None``."""
        async with db_guard():
            doc = await self.pool.fetchval("SELECT document FROM node_state WHERE key = $1", key)
        return None if doc is None else dict(doc)

    async def put_state(self, key: str, document: dict[str, Any]) -> None:
        """Store ``document`` under ``key`` (one upsert); a value JSON cannot hold raises
        ``StoreError`` (``invalid_value``)."""
        try:
            json.dumps(document)
        except (TypeError, ValueError) as e:
            raise StoreError(f"state {key!r} is not JSON: {e}", reason="invalid_value") from e
        async with db_guard():
            await self.pool.execute(
                "INSERT INTO node_state (key, document, updated_at) VALUES ($1, $2, now())"
                " ON CONFLICT (key) DO UPDATE SET document = EXCLUDED.document,"
                " updated_at = EXCLUDED.updated_at",
                key,
                document,
            )

    # -- stats -----------------------------------------------------------------------------
    async def database_bytes(self) -> int:
        """The database's size on disk (``pg_database_size``), in bytes."""
        async with db_guard():
            size = await self.pool.fetchval("SELECT pg_database_size(current_database())")
        return int(size)

    async def stats(self) -> dict[str, int]:
        """Counts: ``lessons_<status>`` for every status, outcomes, quarantine, rejections."""
        async with db_guard(), self.pool.acquire() as conn:
            by_status = await conn.fetch("SELECT status, count(*) AS n FROM lessons GROUP BY 1")
            rec = await conn.fetchrow(
                "SELECT (SELECT count(*) FROM outcomes) AS outcomes,"
                " (SELECT count(*) FROM quarantine WHERE state = 'pending') AS quarantine_pending,"
                " (SELECT count(*) FROM quarantine) AS quarantine,"
                " (SELECT count(*) FROM rejections) AS rejections"
            )
        counts = {f"lessons_{status.value}": 0 for status in LessonStatus}
        for r in by_status:
            counts[f"lessons_{r['status']}"] = int(r["n"])
        counts.update({key: int(value) for key, value in rec.items()})
        return counts
