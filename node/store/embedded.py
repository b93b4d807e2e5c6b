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
  that died (a node killed with SIGKILL) is never released, so on every start the handles of
  dead processes are pruned from its list (:func:`prune_handles`), whether or not the server
  still runs.
* A node killed with SIGKILL leaves its server running (``pg_ctl`` daemonized it). The next
  start reuses that server rather than restarting it: nothing in it belongs to the dead
  process (the kernel closed its connections, so its backends ended), other live holders of
  the list (a bench run on the same home) keep their server, and a restart would cost a
  shutdown checkpoint. Once the dead handle is pruned, the new node's clean stop stops it.
  A server still starting or stopping is waited for (bounded) instead of failing at once.
* Server settings for the node (HNSW builds need ``maintenance_work_mem``) are written with
  ``ALTER SYSTEM``; a restart happens only when a restart-only setting changed.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import subprocess
import time
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from lamarck.errors import StoreUnavailable

__all__ = [
    "DEFAULT_DATABASE",
    "HANDLE_CLOCK_SLACK_S",
    "HANDLE_LIST",
    "EmbeddedPostgres",
    "default_server_settings",
    "prune_handles",
]

_log = logging.getLogger(__name__)

# psutil comes with pgserver and ships no type information.
psutil: Any = importlib.import_module("psutil")

#: The database the node uses inside the embedded server.
DEFAULT_DATABASE = "lamarck"

#: pgserver's list of the pids holding a handle on the server, inside ``pgdata``.
HANDLE_LIST = ".handle_pids.json"

#: Tolerance between a process's start time and the handle list's mtime: the process table
#: derives start times from a boot time in whole seconds.
HANDLE_CLOCK_SLACK_S = 2.0

# Lines of a complete postmaster.pid (pid, pgdata, start, port, socket dir, host, shm, status).
_PID_FILE_LINES = 8
_SETTLE_POLL_S = 0.1


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


def prune_handles(
    pids: Iterable[int],
    *,
    listed_at: float,
    started_at: Mapping[int, float],
    slack_s: float = HANDLE_CLOCK_SLACK_S,
) -> list[int]:
    """The handles of pgserver's list that a live process may still hold, in list order.

    ``pids`` is the list as read, ``listed_at`` when it was last written (the file's mtime),
    ``started_at`` the start time of every listed pid that is alive (zombies are dead: they
    hold nothing). A pid is kept when it is alive and its process started before the list was
    last written: a process holding a handle wrote itself into the list, so one started later
    only reuses the pid of a dead holder. ``slack_s`` absorbs the coarse start times of the
    process table; within it a reused pid is kept, which only delays the server's stop.
    """
    return [p for p in pids if p in started_at and started_at[p] <= listed_at + slack_s]


def _process_start_times(pids: Iterable[int]) -> dict[int, float]:
    """Start time (epoch seconds) of each live, non-zombie process among ``pids``."""
    started: dict[int, float] = {}
    for pid in {p for p in pids if p > 0}:
        try:
            proc = psutil.Process(pid)
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            started[pid] = float(proc.create_time())
        except psutil.NoSuchProcess:
            continue
        except psutil.AccessDenied:
            # Cannot look: keep its handle rather than stop a server it may be using.
            started[pid] = float("-inf")
    return started


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


def _settle_postmaster(pgdata: Path, *, timeout_s: float) -> None:
    """Leave ``pgdata`` with either a ready server of its own or no server and no leftovers.

    A server still starting or stopping (its node was killed in the middle) is waited for,
    up to ``timeout_s``; a ``postmaster.pid`` of a dead server is removed with its sockets.
    """
    pid_file = pgdata / "postmaster.pid"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            lines = pid_file.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return  # no server (a stopping one removes the file as it exits)
        try:
            pid = int(lines[0])
        except (IndexError, ValueError):
            pid = -1
        if not (pid > 0 and _is_our_postmaster(pid, pgdata)):
            break
        status = lines[_PID_FILE_LINES - 1].strip() if len(lines) >= _PID_FILE_LINES else ""
        if status == "ready":
            # pgserver reuses it; an orphan of a killed node is as good as any other.
            _log.info("reusing the running PostgreSQL server (pid %s) in %s", pid, pgdata)
            return
        if time.monotonic() > deadline:
            raise StoreUnavailable(
                f"a PostgreSQL server (pid {pid}) in {pgdata} is still "
                f"{status or 'starting'} after {timeout_s}s; retry",
                reason="embedded_starting",
            )
        time.sleep(_SETTLE_POLL_S)
    _log.warning("removing stale postmaster.pid in %s (pid %s is not its server)", pgdata, pid)
    socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else pgdata
    pid_file.unlink(missing_ok=True)
    # The socket lock file holds the same dead pid and would block the new server too.
    for directory in {pgdata, socket_dir}:
        for leftover in directory.glob(".s.PGSQL.*"):
            leftover.unlink(missing_ok=True)


def _prune_handle_file(pgdata: Path) -> None:
    """Drop dead processes from pgserver's handle list (caller holds pgserver's lock)."""
    handles = pgdata / HANDLE_LIST
    try:
        listed_at = handles.stat().st_mtime
        raw = json.loads(handles.read_text())
        pids = [int(p) for p in raw] if isinstance(raw, list) else []
        broken = not isinstance(raw, list)
    except FileNotFoundError:
        return
    except (ValueError, TypeError, OSError):
        # Unreadable (cut short by a crash while written): pgserver would fail on it.
        pids, listed_at, broken = [], 0.0, True
    kept = prune_handles(pids, listed_at=listed_at, started_at=_process_start_times(pids))
    if kept != pids or broken:
        _log.warning("pruning dead handles %s from %s", sorted(set(pids) - set(kept)), handles)
        handles.write_text(json.dumps(kept))


def _clear_stale_state(pgdata: Path, *, timeout_s: float, lock: Any) -> None:
    """Remove what a dead server or a dead node left behind, so pgserver starts cleanly.

    Both steps run on every start: after a SIGKILL of the node the server lives on, and its
    handle list still names the dead node.
    """
    # Not under pgserver's lock: it is one lock for every server of this user, and the
    # wait for a starting or stopping server may take seconds.
    _settle_postmaster(pgdata, timeout_s=timeout_s)
    # Under it: pgserver adds and removes handles with a read-modify-write under that lock.
    with lock:
        _prune_handle_file(pgdata)


class EmbeddedPostgres:
    """A PostgreSQL 16 + pgvector server owned by the node, data in ``<home>/pgdata``.

    ``start()`` initialises the data directory on first use, starts (or reuses) the server,
    applies the node's settings and creates the ``lamarck`` database; it returns the DSN.
    ``stop()`` stops the server unless another process still holds it. It is a blocking
    call (about a second): from async code run it with ``asyncio.to_thread``. A server left
    running by a node killed with SIGKILL is reused by the next ``start()`` and stopped by
    its ``stop()``.
    """

    def __init__(
        self,
        home: Path | str,
        *,
        database: str = DEFAULT_DATABASE,
        settings: Mapping[str, str] | None = None,
        start_timeout_s: float = 30.0,
    ) -> None:
        self.home = Path(home).expanduser().resolve()
        self.pgdata = self.home / "pgdata"
        self.database = database
        self.settings: dict[str, str] = (
            dict(settings) if settings is not None else default_server_settings()
        )
        #: How long ``start()`` waits for a server of this ``pgdata`` that is still starting
        #: or stopping (left so by a node killed in the middle).
        self.start_timeout_s = start_timeout_s
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
        with warnings.catch_warnings():
            # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers).
            warnings.simplefilter("ignore")
            from pgserver.postgres_server import PostgresServer, get_server

        _clear_stale_state(self.pgdata, timeout_s=self.start_timeout_s, lock=PostgresServer._lock)
        try:
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

    def is_running(self) -> bool:
        """Whether this ``pgdata``'s server process is alive (its ``postmaster.pid`` names a
        live postgres serving it); False after it was killed."""
        try:
            pid = int((self.pgdata / "postmaster.pid").read_text(errors="replace").split()[0])
        except (FileNotFoundError, IndexError, ValueError):
            return False
        return pid > 0 and _is_our_postmaster(pid, self.pgdata)

    def restart(self) -> str:
        """Start the server again after it died under this process (killed, crashed); return
        the node database's DSN (a new server may listen elsewhere).

        What the dead server left (its ``postmaster.pid`` and sockets) is cleared first; a
        server still winding down, or backends of the dead one still holding its shared
        memory, make this fail with ``StoreUnavailable(reason="embedded_restart_failed")``:
        the caller retries with backoff. Blocking, like :meth:`start`.
        """
        if self._server is None:
            return self.start()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pgserver.postgres_server import PostgresServer

        _clear_stale_state(self.pgdata, timeout_s=self.start_timeout_s, lock=PostgresServer._lock)
        try:
            # pgserver's precondition: its lock is held while it starts a server.
            with PostgresServer._lock:
                self._server.ensure_postgres_running()
        except (AssertionError, OSError, subprocess.SubprocessError) as e:
            log = self.pgdata / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise StoreUnavailable(
                f"the embedded PostgreSQL in {self.pgdata} did not restart: {e}\n{tail}",
                reason="embedded_restart_failed",
            ) from e
        self._dsn = str(self._server.get_uri(self.database))
        _log.warning("embedded PostgreSQL restarted in %s", self.pgdata)
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
