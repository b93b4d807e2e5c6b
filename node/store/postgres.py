"""Postgres + pgvector ``LessonStore`` on asyncpg.

``PostgresLessonStore`` is every narrow store port at once: the parts that are plain tables
live one port to a module in ``lamarck.node.store.pg`` (lesson rows, queries, imported
lessons, outcomes, quarantine, event log, state); this module holds what needs the store's
own state: the pool and its units of work, migrations, bulk loads and the vector index, and
recall (search, the recall index, embeddings, use marks).

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
from datetime import datetime
from typing import Any, Self

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonStatus,
    RelevanceFloor,
    ScoredLesson,
    Vector,
)
from lamarck.errors import StoreError, StoreUnavailable
from lamarck.node.store.migrate import run_migrations
from lamarck.node.store.pg.events import PgEventLog
from lamarck.node.store.pg.imported import PgImportedLessons
from lamarck.node.store.pg.lessons import PgLessonRows
from lamarck.node.store.pg.outcomes import PgOutcomes
from lamarck.node.store.pg.quarantine import PgQuarantine
from lamarck.node.store.pg.queries import PgLessonQueries
from lamarck.node.store.pg.sql import SELECT_LESSON as _SELECT_LESSON
from lamarck.node.store.pg.sql import (
    TRANSLATED_ERRORS,
    PgTables,
    db_guard,
    translate_error,
)
from lamarck.node.store.pg.sql import to_lesson as _to_lesson
from lamarck.node.store.pg.sql import where_clause as _where
from lamarck.node.store.pg.state import PgState
from lamarck.node.store.port import LessonStore, checked_query
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

#: The rows the recall index holds (``recall_index.is_covered``), as SQL on alias ``l``: built
#: from the same statuses and category, so the two cannot drift apart.
_COVERED = (
    f"l.embedding IS NOT NULL AND l.category = '{Category.LESSON.value}'"
    f" AND l.status IN ({', '.join(repr(s.value) for s in COVERED_STATUSES)})"
)


def _selective(flt: LessonFilter) -> bool:
    """Whether ``flt`` names a key with its own index (an operation, a tag, an exact claim):
    then the matching rows are few whatever the store's size."""
    return any(x is not None for x in (flt.operation, flt.about, flt.tags, flt.content))


def _encode_jsonb(value: Any) -> bytes:
    return b"\x01" + json.dumps(value, separators=(",", ":")).encode()


def _decode_jsonb(data: bytes) -> Any:
    return json.loads(data[1:])


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


async def _keep_session(conn: Any) -> None:
    """The pool's reset on release, beyond asyncpg's own (which rolls back an open
    transaction): nothing. The store sets no session state (``SET LOCAL`` ends with its
    transaction; no LISTEN, no session advisory lock, cursors only inside transactions), so
    the default ``RESET ALL; CLOSE ALL; ...`` would only add a round trip to every call."""
    del conn


def _stored_vector(vector: Vector, dim: int) -> Vector:
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    if v.shape[0] != dim:
        raise StoreError(
            f"embedding has {v.shape[0]} dimensions, the store holds {dim}",
            reason="dimension_mismatch",
        )
    return v


class PostgresLessonStore(
    PgLessonRows,
    PgLessonQueries,
    PgImportedLessons,
    PgOutcomes,
    PgQuarantine,
    PgEventLog,
    PgState,
    PgTables,
    LessonStore,
):
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
        q = checked_query(query, self.dim)
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
