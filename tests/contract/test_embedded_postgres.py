"""The embedded PostgreSQL: reused across starts, and starts after a dead server's or holder's
leftovers."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from lamarck.node.store.embedded import EmbeddedPostgres, default_server_settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]

psutil: Any = importlib.import_module("psutil")

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


# A process holding the server, killed with SIGKILL once it is up (as a node would be).
_HOLDER = """
import json, sys, time
from pathlib import Path
from lamarck.node.store.embedded import EmbeddedPostgres
home, settings, ready = Path(sys.argv[1]), json.loads(sys.argv[2]), Path(sys.argv[3])
EmbeddedPostgres(home, settings=settings).start()
ready.write_text("ready")
time.sleep(600)
"""


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def _wait_for(check: Callable[[], bool], what: str, within_s: float = 60.0) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {within_s}s: {what}")
        time.sleep(0.05)


def _kill_a_holder_once_started(home: Path) -> int:
    """Run a process that starts the server, SIGKILL it once it is up; return its pid."""
    ready = home / "holder.ready"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(home), json.dumps(_SETTINGS), str(ready)]
    )
    try:
        _wait_for(ready.exists, "the holder to start the server")
    finally:
        holder.kill()
        holder.wait(timeout=10)
    return holder.pid


async def test_a_server_left_by_a_killed_holder_is_reused_and_stopped(home: Path) -> None:
    pgdata = home / "pgdata"
    holder = _kill_a_holder_once_started(home)
    orphan = _postmaster_pid(pgdata)
    assert orphan is not None and psutil.pid_exists(orphan)
    assert json.loads((pgdata / ".handle_pids.json").read_text()) == [holder]

    again = EmbeddedPostgres(home, settings=_SETTINGS)
    try:
        assert await _query(again.start(), "SELECT 1") == 1
        assert _postmaster_pid(pgdata) == orphan  # reused, not restarted
        assert json.loads((pgdata / ".handle_pids.json").read_text()) == [os.getpid()]
    finally:
        again.stop()
    # The dead holder's handle is gone, so this stop was the last one: the server stopped.
    _wait_for(lambda: not psutil.pid_exists(orphan), "the orphaned server to stop")
    assert not (pgdata / "postmaster.pid").exists()


async def test_an_unreadable_handle_list_is_rewritten(home: Path) -> None:
    (home / "pgdata").mkdir(exist_ok=True)
    (home / "pgdata" / ".handle_pids.json").write_text("[12, 3")  # cut short by a crash

    server = EmbeddedPostgres(home, settings=_SETTINGS)
    try:
        assert await _query(server.start(), "SELECT 1") == 1
        assert json.loads((home / "pgdata" / ".handle_pids.json").read_text()) == [os.getpid()]
    finally:
        server.stop()
