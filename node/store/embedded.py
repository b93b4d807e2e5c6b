"""The node's embedded PostgreSQL 16 + pgvector, run from the ``pgserver`` package.

With no ``LAMARCK_DATABASE_URL`` the node starts its own server in ``<home>/pgdata`` and reuses
that data directory on the next start. How pgserver behaves, and what this module adds:

* It listens on a unix socket only (in ``pgdata``, or a short runtime path when that is too
  long): the DSN names the socket directory, no TCP port is opened.
* As root it creates a system user ``pgserver`` and runs Postgres as that user (Postgres
  refuses to run as root); to do so it chowns ``pgdata`` and makes every parent directory
  traversable (``o+rx``). Files inside ``home`` keep their own modes.
* It trusts a ``postmaster.pid`` whose pid is alive. After a crash or a container restart that
  pid may belong to an unrelated process, and a file cut short by a crash during start-up makes
  pgserver fail an assertion: ``_clear_stale_state`` removes such leftovers first.
* It stops the server when the last process holding a handle exits; a handle of a process
  that died is never released, so dead pids are pruned from its handle list on start.
* Server settings for the node (HNSW builds need ``maintenance_work_mem``) are written with
  ``ALTER SYSTEM``; a restart happens only when a restart-only setting changed.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import subprocess
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from lamarck.errors import StoreUnavailable

__all__ = ["DEFAULT_DATABASE", "EmbeddedPostgres", "default_server_settings"]

_log = logging.getLogger(__name__)

# psutil comes with pgserver and ships no type information.
psutil: Any = importlib.import_module("psutil")

#: The database the node uses inside the embedded server.
DEFAULT_DATABASE = "lamarck"

# Lines of a complete postmaster.pid (pid, pgdata, start, port, socket dir, host, shm, status).
_PID_FILE_LINES = 8


def _shm_bytes() -> int | None:
    try:
        stat = os.statvfs("/dev/shm")
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def default_server_settings() -> dict[str, str]:
    """Settings the node applies to its embedded server, sized for this machine.

    * ``maintenance_work_mem = 1GB``: an HNSW build at 100k lessons takes ~60 s instead of
      ~230 s with the 64MB default (the graph must fit in it to be built in memory).
    * ``max_parallel_maintenance_workers``: pgvector >= 0.6 builds HNSW in parallel, but the
      shared graph then lives in dynamic shared memory (``/dev/shm``); with a small
      ``/dev/shm`` (64MB in a default Docker container) a parallel build would fail, so it
      is turned off there.
    * ``shared_buffers = 256MB``: 100k 384-dim vectors are ~150MB of heap plus the index.
    """
    cpus = os.cpu_count() or 1
    shm = _shm_bytes()
    parallel = max(0, min(4, cpus - 1))
    if shm is not None and shm < 2 * 1024**3:
        parallel = 0
    return {
        "shared_buffers": "256MB",
        "maintenance_work_mem": "1GB",
        "max_parallel_maintenance_workers": str(parallel),
        "work_mem": "16MB",
        "effective_cache_size": "1GB",
        "random_page_cost": "1.1",
        "timezone": "UTC",
    }


def _is_our_postmaster(pid: int, pgdata: Path) -> bool:
    """Whether ``pid`` is a live postgres process serving ``pgdata``."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        cmdline = proc.cmdline()
        name = proc.name()
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        # Cannot look: assume it is the server rather than delete a live lock file.
        return True
    return "postgres" in name and str(pgdata) in " ".join(cmdline)


def _clear_stale_state(pgdata: Path) -> None:
    """Remove what a dead server left behind, so pgserver and Postgres start cleanly."""
    pid_file = pgdata / "postmaster.pid"
    if pid_file.exists():
        lines = pid_file.read_text(errors="replace").splitlines()
        try:
            pid = int(lines[0])
        except (IndexError, ValueError):
            pid = -1
        if pid > 0 and _is_our_postmaster(pid, pgdata):
            if len(lines) >= _PID_FILE_LINES:
                return  # a live server: pgserver reuses it
            raise StoreUnavailable(
                f"a PostgreSQL server (pid {pid}) is still starting in {pgdata}; retry",
                reason="embedded_starting",
            )
        _log.warning("removing stale postmaster.pid in %s (pid %s is not its server)", pgdata, pid)
        socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else pgdata
        pid_file.unlink(missing_ok=True)
        # The socket lock file holds the same dead pid and would block the new server too.
        for directory in {pgdata, socket_dir}:
            for leftover in directory.glob(".s.PGSQL.*"):
                leftover.unlink(missing_ok=True)
    handles = pgdata / ".handle_pids.json"
    if handles.exists():
        # pgserver stops the server when the last handle goes; a dead process's handle
        # would keep it from ever doing so.
        import json

        try:
            pids = [int(p) for p in json.loads(handles.read_text())]
        except (ValueError, TypeError):
            pids = []
        handles.write_text(json.dumps([p for p in pids if psutil.pid_exists(p)]))


class EmbeddedPostgres:
    """A PostgreSQL 16 + pgvector server owned by the node, data in ``<home>/pgdata``.

    ``start()`` initialises the data directory on first use, starts (or reuses) the server,
    applies the node's settings and creates the ``lamarck`` database; it returns the DSN.
    ``stop()`` stops the server unless another process still holds it. It is a blocking
    call (about a second): from async code run it with ``asyncio.to_thread``.
    """

    def __init__(
        self,
        home: Path | str,
        *,
        database: str = DEFAULT_DATABASE,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        self.home = Path(home).expanduser().resolve()
        self.pgdata = self.home / "pgdata"
        self.database = database
        self.settings: dict[str, str] = (
            dict(settings) if settings is not None else default_server_settings()
        )
        self._server: Any = None
        self._dsn: str | None = None

    @property
    def dsn(self) -> str:
        """The DSN of the node's database; ``StoreUnavailable`` before ``start()``."""
        if self._dsn is None:
            raise StoreUnavailable("the embedded PostgreSQL is not started", reason="not_started")
        return self._dsn

    def dsn_for(self, database: str) -> str:
        """The DSN of another database on this server (``postgres`` for maintenance)."""
        if self._server is None:
            raise StoreUnavailable("the embedded PostgreSQL is not started", reason="not_started")
        return str(self._server.get_uri(database))

    def start(self) -> str:
        """Start or reuse the server and return the node database's DSN."""
        if self._dsn is not None:
            return self._dsn
        self.home.mkdir(parents=True, exist_ok=True)
        self.pgdata.mkdir(exist_ok=True)
        _clear_stale_state(self.pgdata)
        try:
            with warnings.catch_warnings():
                # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers).
                warnings.simplefilter("ignore")
                from pgserver.postgres_server import get_server

            self._server = get_server(self.pgdata, cleanup_mode="stop")
            self._apply_settings()
            self._ensure_database()
        except StoreUnavailable:
            raise
        except (AssertionError, OSError, subprocess.SubprocessError) as e:
            log = self.pgdata / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise StoreUnavailable(
                f"the embedded PostgreSQL in {self.pgdata} did not start: {e}\n{tail}",
                reason="embedded_start_failed",
            ) from e
        self._dsn = str(self._server.get_uri(self.database))
        _log.info("embedded PostgreSQL ready in %s", self.pgdata)
        return self._dsn

    def stop(self) -> None:
        """Release this process's handle; the server stops when no other process holds one."""
        server, self._server, self._dsn = self._server, None, None
        if server is not None:
            server.cleanup()

    def __enter__(self) -> Self:
        """Start the server."""
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the server."""
        self.stop()

    # -- helpers ---------------------------------------------------------------------------
    def psql(self, *commands: str, database: str = "postgres") -> str:
        """Run SQL commands (each its own transaction) through the bundled ``psql``."""
        from pgserver._commands import POSTGRES_BIN_PATH

        args = [str(POSTGRES_BIN_PATH / "psql"), str(self._server.get_uri(database))]
        args += ["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1"]
        for command in commands:
            args += ["-c", command]
        result = subprocess.run(args, check=False, capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise StoreUnavailable(
                f"embedded PostgreSQL refused {commands!r}: {result.stderr.strip()}",
                reason="embedded_setup_failed",
            )
        return result.stdout.strip()

    def _apply_settings(self) -> None:
        for name in self.settings:
            if not name.replace("_", "").replace(".", "").isalnum():
                raise StoreUnavailable(f"bad server setting name {name!r}", reason="bad_setting")
        # What ALTER SYSTEM wrote before: on a reused data directory usually all of it.
        written = self.psql(
            "SELECT name || '=' || setting FROM pg_file_settings "
            "WHERE sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno"
        )
        current = dict(line.split("=", 1) for line in written.splitlines() if "=" in line)
        changes = [
            "ALTER SYSTEM SET {} = '{}'".format(name, value.replace("'", "''"))
            for name, value in self.settings.items()
            if current.get(name.lower()) != value
        ]
        if not changes:
            return
        pending = self.psql(
            *changes,
            "SELECT pg_reload_conf()",
            "SELECT count(*) FROM pg_settings WHERE pending_restart",
        ).splitlines()
        if pending and pending[-1] not in ("", "0"):
            self._restart()

    def _restart(self) -> None:
        from pgserver import _commands

        # pgserver generates one function per bundled binary at import time.
        pg_ctl: Any = _commands.__dict__["pg_ctl"]
        # -w waits until the server accepts connections; restart reuses the start options.
        pg_ctl(["-w", "restart"], pgdata=self.pgdata, user=self._server.system_user, timeout=60)
        # pgserver caches the postmaster it saw; refresh it so stop() stops the new one.
        self._server.ensure_postgres_running()

    def _ensure_database(self) -> None:
        name = self.database
        if not name.replace("_", "").isalnum():
            raise StoreUnavailable(f"bad database name {name!r}", reason="bad_setting")
        exists = self.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}'")
        if exists != "1":
            self.psql(f'CREATE DATABASE "{name}"')

    def delete_data(self) -> None:
        """Stop the server and remove ``<home>/pgdata`` (tests and explicit resets only)."""
        self.stop()
        shutil.rmtree(self.pgdata, ignore_errors=True)
