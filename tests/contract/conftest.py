"""Fixtures for the lesson-store contract suite: one embedded server, a fresh database per test.

The embedded PostgreSQL (pgserver) starts once per session. A template database is migrated
once; each test gets ``CREATE DATABASE ... TEMPLATE`` of it (a file copy, ~tens of ms), so
tests are independent without paying for migrations and an HNSW index build each time.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import asyncpg
import pytest

from lamarck.node.store.embedded import EmbeddedPostgres, default_server_settings
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.node.store.migrate import run_migrations
from lamarck.node.store.port import LessonStore
from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.node.store.recall_index import RecallIndexParams

#: Embedding dimension used by the contract suite.
DIM = 8
TEMPLATE = "lmk_template"
#: The database the contract tests share (a copy of the template made at session start).
SHARED = "lmk_contract"

_database_numbers = itertools.count()


async def _create_template(dsn_admin: str, dsn_template: str) -> None:
    admin = await asyncpg.connect(dsn_admin)
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        await admin.execute(f"CREATE DATABASE {TEMPLATE}")
    finally:
        await admin.close()
    conn = await asyncpg.connect(dsn_template)
    try:
        await run_migrations(conn, DIM)
    finally:
        await conn.close()
    admin = await asyncpg.connect(dsn_admin)
    try:
        await admin.execute(f"CREATE DATABASE {SHARED} TEMPLATE {TEMPLATE}")
    finally:
        await admin.close()


@pytest.fixture(scope="session")
def embedded_pg() -> Iterator[EmbeddedPostgres]:
    """The session's embedded PostgreSQL 16 + pgvector, with a migrated template database."""
    # Not under pytest's tmp dir: as root, Postgres runs as the user ``pgserver``, and pytest
    # resets /tmp/pytest-of-root to 0700 mid-session, which locks pg_ctl out of its pgdata.
    home = Path(tempfile.mkdtemp(prefix="lamarck-contract-"))
    # Durability is worthless for a throwaway server, and fsync dominates CREATE DATABASE
    # and the shutdown checkpoint.
    settings = default_server_settings() | {
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
    }
    server = EmbeddedPostgres(home, settings=settings)
    server.start()
    try:
        # A thread of its own: this fixture may be first requested inside a running loop.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(
                asyncio.run,
                _create_template(server.dsn_for("postgres"), server.dsn_for(TEMPLATE)),
            ).result()
        yield server
    finally:
        server.delete_data()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
async def fresh_database(embedded_pg: EmbeddedPostgres) -> str:
    """The DSN of a new, empty (unmigrated) database."""
    name = f"lmk_empty_{next(_database_numbers)}"
    admin = await asyncpg.connect(embedded_pg.dsn_for("postgres"))
    try:
        await admin.execute(f"CREATE DATABASE {name}")
    finally:
        await admin.close()
    return embedded_pg.dsn_for(name)


async def _copy_template(server: EmbeddedPostgres) -> str:
    name = f"lmk_test_{next(_database_numbers)}"
    admin = await asyncpg.connect(server.dsn_for("postgres"))
    try:
        await admin.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    finally:
        await admin.close()
    return server.dsn_for(name)


@pytest.fixture
async def pg_dsn(embedded_pg: EmbeddedPostgres) -> str:
    """The DSN of a new database already migrated at ``DIM`` (a copy of the template)."""
    return await _copy_template(embedded_pg)


@pytest.fixture
async def pg_store(pg_dsn: str) -> AsyncIterator[PostgresLessonStore]:
    """A ``PostgresLessonStore`` on a fresh database."""
    store = await PostgresLessonStore.connect(pg_dsn, DIM, max_size=4)
    try:
        yield store
    finally:
        await store.close()


#: Tables emptied between contract tests (the shared database's schema stays in place).
_TABLES = (
    "lessons, lesson_provenance, outcomes, quarantine, rejections, outbox, lesson_events,"
    " node_state, retired_evidence, attestations"
)


@pytest.fixture(
    params=[
        "memory",
        pytest.param("postgres", marks=pytest.mark.integration),
        pytest.param("postgres-indexed", marks=pytest.mark.integration),
    ]
)
async def store(request: pytest.FixtureRequest) -> AsyncIterator[LessonStore]:
    """Each adapter in turn: the contract suite runs once per adapter, and once more on
    Postgres with its recall index on (recall's searches answered from memory).

    The Postgres runs share one migrated database, emptied before each test: TRUNCATE takes
    milliseconds where a CREATE DATABASE per test takes ~0.4 s.
    """
    adapter: LessonStore
    if request.param == "memory":
        adapter = InMemoryLessonStore(dim=DIM)
        await adapter.migrate()
    else:
        # Requested lazily so a memory-only run (-k memory) never starts PostgreSQL.
        server: EmbeddedPostgres = request.getfixturevalue("embedded_pg")
        index = RecallIndexParams() if request.param == "postgres-indexed" else None
        pg = await PostgresLessonStore.connect(
            server.dsn_for(SHARED), DIM, max_size=4, recall_index=index
        )
        await pg.pool.execute(f"TRUNCATE {_TABLES} RESTART IDENTITY")
        adapter = pg
    try:
        yield adapter
    finally:
        await adapter.close()
