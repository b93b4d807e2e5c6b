"""The embedded PostgreSQL: reused across starts, and starts after a dead server's leftovers."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from lamarck.node.store.embedded import EmbeddedPostgres, default_server_settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Fast throwaway settings; the node's own ones are exercised by the contract suite's server.
_SETTINGS = default_server_settings() | {"fsync": "off", "synchronous_commit": "off"}


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    """A node home outside pytest's 0700 tmp tree (Postgres runs as ``pgserver`` under root).

    Shared by the module's tests (initdb is the slow part); each test leaves it stopped.
    """
    path = Path(tempfile.mkdtemp(prefix="lamarck-embedded-"))
    try:
        yield path
    finally:
        EmbeddedPostgres(path, settings=_SETTINGS).stop()
        shutil.rmtree(path, ignore_errors=True)


async def _query(dsn: str, sql: str) -> object:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(sql)
    finally:
        await conn.close()


async def test_data_survives_a_stop_and_the_next_start_reuses_it(home: Path) -> None:
    first = EmbeddedPostgres(home, settings=_SETTINGS)
    dsn = first.start()
    await _query(dsn, "CREATE TABLE kept AS SELECT 42 AS answer")
    assert await _query(dsn, "SHOW maintenance_work_mem") == "1GB"
    first.stop()
    assert not (home / "pgdata" / "postmaster.pid").exists()

    second = EmbeddedPostgres(home, settings=_SETTINGS)
    try:
        assert await _query(second.start(), "SELECT answer FROM kept") == 42
    finally:
        second.stop()


@pytest.mark.parametrize(
    "pid_file",
    [
        # A complete file whose pid now belongs to an unrelated live process (this one).
        lambda pgdata: f"{os.getpid()}\n{pgdata}\n1700000000\n5432\n{pgdata}\n\n0 0\nready\n",
        # A file cut short by a crash during start-up.
        lambda pgdata: f"{os.getpid()}\n{pgdata}\n",
    ],
    ids=["reused-pid", "truncated"],
)
async def test_start_clears_a_dead_servers_postmaster_pid(home: Path, pid_file: object) -> None:
    server = EmbeddedPostgres(home, settings=_SETTINGS)
    server.start()
    server.stop()
    pgdata = home / "pgdata"
    assert callable(pid_file)
    (pgdata / "postmaster.pid").write_text(pid_file(pgdata))
    (pgdata / ".s.PGSQL.5432.lock").write_text(f"{os.getpid()}\n")

    again = EmbeddedPostgres(home, settings=_SETTINGS)
    try:
        assert await _query(again.start(), "SELECT 1") == 1
    finally:
        again.stop()
