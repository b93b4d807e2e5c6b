"""What only the Postgres adapter has: migrations, the vector extension, the HNSW index and
its bulk loads, error translation, and a ping that a cancel never loses."""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg
import numpy as np
import pytest

from lamarck.domain.rows import (
    LessonFilter,
)
from lamarck.errors import ConflictError, StoreError, StoreUnavailable
from lamarck.node.store.migrate import load_migrations, run_migrations
from lamarck.node.store.postgres import VECTOR_INDEX, PostgresLessonStore, translate_error
from tests.contract.contract_factories import (
    DIM,
    exact_order,
    lesson,
    vec,
)

pg = pytest.mark.integration


#: Every migration version this package ships, in order.
SHIPPED = [m.version for m in load_migrations()]


@pg
async def test_migrations_run_twice_change_nothing(fresh_database: str) -> None:
    conn = await asyncpg.connect(fresh_database)
    try:
        assert await run_migrations(conn, DIM) == SHIPPED
        before = [tuple(r) for r in await conn.fetch("SELECT * FROM schema_migrations")]
        tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        assert await run_migrations(conn, DIM) == []
        after = [tuple(r) for r in await conn.fetch("SELECT * FROM schema_migrations")]
    finally:
        await conn.close()
    assert before == after and len(before) == len(SHIPPED)
    assert {r["tablename"] for r in tables} >= {
        "lessons",
        "outcomes",
        "lesson_provenance",
        "quarantine",
        "rejections",
        "outbox",
        "schema_migrations",
        "store_settings",
    }


@pg
async def test_concurrent_starts_migrate_once(fresh_database: str) -> None:
    stores = await asyncio.gather(
        *(PostgresLessonStore.connect(fresh_database, DIM, max_size=2) for _ in range(4))
    )
    try:
        rows = await stores[0].pool.fetch("SELECT version FROM schema_migrations")
        assert [r["version"] for r in rows] == SHIPPED
    finally:
        for s in stores:
            await s.close()


@pg
async def test_a_different_embedding_dimension_is_refused_at_start(pg_dsn: str) -> None:
    with pytest.raises(StoreUnavailable) as info:
        await PostgresLessonStore.connect(pg_dsn, DIM * 2)
    assert info.value.reason == "embedding_dim_mismatch"
    assert f"stores {DIM}-dimensional" in str(info.value)


@pg
async def test_a_server_without_pgvector_fails_at_start_naming_the_extension() -> None:
    # The machine's system PostgreSQL 15 has no pgvector; the migration rolls back, so the
    # shared `test` database is left untouched.
    dsn = "postgresql://postgres@127.0.0.1:5432/test"
    try:
        probe = await asyncpg.connect(dsn, timeout=3)
    except (OSError, asyncpg.PostgresError, TimeoutError) as e:
        pytest.skip(f"system PostgreSQL at 127.0.0.1:5432 is unreachable: {e}")
    try:
        if await probe.fetchval("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"):
            pytest.skip("the system PostgreSQL has pgvector installed: nothing to prove")
    finally:
        await probe.close()
    with pytest.raises(StoreUnavailable) as info:
        await PostgresLessonStore.connect(dsn, DIM)
    assert info.value.reason == "vector_extension_missing"
    assert "the 'vector' extension (pgvector) is not installed on this server" in str(info.value)


@pg
async def test_an_unreachable_server_is_store_unavailable(tmp_path: object) -> None:
    with pytest.raises(StoreUnavailable):
        await PostgresLessonStore.connect(f"postgresql://postgres@/x?host={tmp_path}", DIM)


@pg
async def test_server_side_failures_are_translated(pg_store: PostgresLessonStore) -> None:
    await pg_store.insert_lesson(lesson("a"))
    async with pg_store.pool.acquire() as conn:
        await conn.execute("ALTER TABLE outcomes RENAME TO outcomes_gone")
    with pytest.raises(StoreError) as info:
        await pg_store.get_outcome("o1")
    assert info.value.reason == "database_error"
    assert info.value.details["sqlstate"] == "42P01"
    assert isinstance(info.value.__cause__, asyncpg.UndefinedTableError)
    # Kill the store's backends: each call either fails as StoreUnavailable or runs on a
    # replacement connection; either way the store recovers by itself.
    admin = await asyncpg.connect(pg_store.dsn)
    try:
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    finally:
        await admin.close()
    with contextlib.suppress(StoreUnavailable):
        await pg_store.get_lesson("a")
    assert (await pg_store.get_lesson("a")).id == "a"
    await pg_store.close()
    with pytest.raises(StoreUnavailable):
        await pg_store.get_lesson("a")


@pg
async def test_a_cancelled_ping_is_never_lost(pg_store: PostgresLessonStore) -> None:
    # The supervisor's probe: a cancel that arrives as SELECT 1 returns must still cancel
    # (Python 3.11's wait_for returned the result instead, and the supervisor's stop hung).
    # Cancelled at 300 points spread over a ping's life; the lost cancel showed within ~25.
    lost = 0
    for i in range(300):
        ping = asyncio.ensure_future(pg_store.ping(5.0))
        for _ in range(i % 12):
            await asyncio.sleep(0)
        if ping.done():
            continue
        ping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ping
        lost += not ping.cancelled()
    assert lost == 0
    await pg_store.ping(5.0)  # and the pool is whole afterwards


@pytest.mark.parametrize(
    ("error", "kind", "reason"),
    [
        (asyncpg.UniqueViolationError("dup"), ConflictError, "duplicate_id"),
        (asyncpg.ForeignKeyViolationError("fk"), ConflictError, "missing_reference"),
        (asyncpg.DeadlockDetectedError("dl"), ConflictError, "concurrent_update"),
        (asyncpg.DataError("expected 8 dimensions, not 3"), StoreError, "dimension_mismatch"),
        (asyncpg.CheckViolationError("check"), StoreError, "invalid_value"),
        (asyncpg.CannotConnectNowError("starting"), StoreUnavailable, "store_unavailable"),
        (asyncpg.AdminShutdownError("bye"), StoreUnavailable, "store_unavailable"),
        (asyncpg.ConnectionDoesNotExistError("gone"), StoreUnavailable, "store_unavailable"),
        (ConnectionRefusedError("no"), StoreUnavailable, "store_unavailable"),
        (asyncpg.InternalClientError("state"), StoreUnavailable, "store_unavailable"),
        (asyncpg.UndefinedTableError("no table"), StoreError, "database_error"),
    ],
)
def test_backend_errors_map_to_store_errors(
    error: BaseException, kind: type[StoreError], reason: str
) -> None:
    translated = translate_error(error)
    assert type(translated) is kind
    assert translated.reason == reason


async def _index_only_store(dsn: str) -> PostgresLessonStore:
    # At test sizes the planner rightly prefers an exact seq scan; turning seq scans off for
    # the database makes the store's queries take the HNSW path they take at 100k rows.
    admin = await asyncpg.connect(dsn)
    try:
        await admin.execute(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET enable_seqscan = off',"
            " current_database()); END $$"
        )
    finally:
        await admin.close()
    return await PostgresLessonStore.connect(dsn, DIM, max_size=2)


@pg
async def test_search_through_hnsw_with_ef_search_keeps_recall(pg_dsn: str) -> None:
    store = await _index_only_store(pg_dsn)
    try:
        rng = np.random.default_rng(3)
        centers = rng.normal(size=(20, DIM))
        points = centers[rng.integers(0, 20, size=3000)] + 0.3 * rng.normal(size=(3000, DIM))
        rows = [lesson(f"l{i:05d}", embedding=p.astype(np.float32)) for i, p in enumerate(points)]
        async with store.bulk_load():
            assert not await store.has_vector_index()
            await store.insert_lessons(rows)
        assert await store.has_vector_index()
        async with store.pool.acquire() as conn:
            assert await conn.fetchval("SHOW hnsw.ef_search") == "100"
            plan = "\n".join(
                r[0]
                for r in await conn.fetch(
                    "EXPLAIN SELECT id FROM lessons l WHERE l.status = ANY($2::text[])"
                    " ORDER BY embedding <=> $1 LIMIT 5",
                    points[0].astype(np.float32),
                    ["active"],
                )
            )
        assert VECTOR_INDEX in plan
        found = 0
        # Queries near stored lessons, as recall queries are (not far-off random directions,
        # where near-ties make "the" top 5 arbitrary).
        picks = points[rng.integers(0, len(points), size=30)]
        queries = (picks + 0.2 * rng.normal(size=picks.shape)).astype(np.float32)
        for q in queries:
            hits = await store.search(q, 5, LessonFilter())
            want = {i for i, _ in exact_order(rows, q)[:5]}
            found += len(want & {h.lesson.id for h in hits})
        assert found / (5 * len(queries)) >= 0.95
    finally:
        await store.close()


@pg
async def test_overlapping_bulk_loads_rebuild_the_index_once_the_last_one_ends(
    pg_dsn: str,
) -> None:
    """Two catch-ups at once share one bulk load: the index goes down with the first and
    comes back (valid, built concurrently) when the last ends; search is exact meanwhile."""
    store = await PostgresLessonStore.connect(pg_dsn, DIM, max_size=3)
    try:
        await store.insert_lessons([lesson("a"), lesson("b", embedding=vec(0.0, 1.0))])
        async with store.bulk_load():
            assert store.bulk_loading and not await store.has_vector_index()
            async with store.bulk_load():
                await store.insert_lesson(lesson("c", embedding=vec(1.0, 1)))
            assert store.bulk_loading and not await store.has_vector_index()
            hits = await store.search(vec(1.0), 2, LessonFilter())
            assert [h.lesson.id for h in hits] == ["a", "c"]
        assert not store.bulk_loading and await store.has_vector_index()
    finally:
        await store.close()


@pg
async def test_refreshed_statistics_let_the_planner_search_through_the_vector_index(
    pg_dsn: str,
) -> None:
    """Lessons inserted since the planner's statistics were gathered, at least ``share`` of
    the rows they count (or a table never analysed): ``refresh_statistics`` gathers them,
    and a search then plans through the HNSW index. Below the share it leaves them to
    autovacuum."""
    store = await PostgresLessonStore.connect(pg_dsn, DIM, max_size=2)

    async def counted_and_plan() -> tuple[float, str]:
        async with store.pool.acquire() as conn:
            counted = await conn.fetchval(
                "SELECT reltuples FROM pg_class WHERE oid = 'lessons'::regclass"
            )
            plan = "\n".join(
                r[0]
                for r in await conn.fetch(
                    "EXPLAIN SELECT id FROM lessons l WHERE l.status = ANY($2::text[])"
                    " ORDER BY embedding <=> $1 LIMIT 5",
                    vec(1.0),
                    ["active"],
                )
            )
        return float(counted), plan

    try:
        assert await store.refresh_statistics(0.1) is False  # nothing inserted yet
        rng = np.random.default_rng(7)
        rows = [
            lesson(f"l{i:05d}", embedding=rng.normal(size=DIM).astype(np.float32))
            for i in range(3000)
        ]
        await store.insert_lessons(rows)
        counted, _ = await counted_and_plan()
        assert counted < 3000  # never analysed: the planner knows nothing of the rows
        assert await store.refresh_statistics(0.1) is True
        counted, plan = await counted_and_plan()
        assert counted == 3000
        assert VECTOR_INDEX in plan
        assert await store.refresh_statistics(0.1) is False  # nothing inserted since
        await store.insert_lesson(lesson("late", embedding=vec(1.0)))
        assert await store.refresh_statistics(0.1) is False  # 1 of 3,000: autovacuum's
        assert await store.refresh_statistics(0.0001) is True  # 1 >= 0.0001 x 3,000
        hits = await store.search(vec(1.0), 1, LessonFilter())
        assert [h.lesson.id for h in hits] == ["late"]
    finally:
        await store.close()


@pg
async def test_a_start_rebuilds_the_index_a_killed_bulk_load_left_down(pg_dsn: str) -> None:
    """A process killed inside ``bulk_load`` leaves no vector index (or an invalid one from a
    build killed half-way); the next ``migrate()`` (every start) builds it again."""
    store = await PostgresLessonStore.connect(pg_dsn, DIM, max_size=2)
    try:
        await store.insert_lesson(lesson("a"))
        await store.drop_vector_index()  # what the killed process left
    finally:
        await store.close()
    again = await PostgresLessonStore.connect(pg_dsn, DIM, max_size=2)
    try:
        assert await again.has_vector_index()
        hits = await again.search(vec(1.0), 1, LessonFilter())
        assert [h.lesson.id for h in hits] == ["a"]
    finally:
        await again.close()


@pg
async def test_selective_filter_finds_matches_the_index_scan_misses(pg_dsn: str) -> None:
    store = await _index_only_store(pg_dsn)
    try:
        rng = np.random.default_rng(5)
        rows = [
            lesson(f"l{i:04d}", embedding=rng.normal(size=DIM).astype(np.float32))
            for i in range(2000)
        ]
        # Three confident lessons pointing away from the query: the ef_search nearest
        # candidates of the index scan hold none of them.
        rare = [lesson(f"rare{i}", confidence=0.99, embedding=vec(-1.0, i)) for i in range(3)]
        async with store.bulk_load():
            await store.insert_lessons(rows + rare)
        hits = await store.search(vec(1.0), 5, LessonFilter(min_confidence=0.9))
        assert [h.lesson.id for h in hits] == ["rare2", "rare1", "rare0"]
    finally:
        await store.close()


@pg
async def test_search_with_k_above_ef_search_returns_k(pg_dsn: str) -> None:
    store = await _index_only_store(pg_dsn)
    try:
        rng = np.random.default_rng(9)
        rows = [
            lesson(f"l{i:04d}", embedding=rng.normal(size=DIM).astype(np.float32))
            for i in range(300)
        ]
        await store.insert_lessons(rows)
        hits = await store.search(vec(1.0), 150, LessonFilter())
        assert len(hits) == 150
        assert [h.lesson.id for h in hits] == [i for i, _ in exact_order(rows, vec(1.0))[:150]]
    finally:
        await store.close()
