"""One node per home: an exclusive lock file holding the running node's pid.

``fcntl.flock`` is released by the kernel when the process dies, so a crashed node never
leaves a stale lock behind; the pid inside is only for the refusal message.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from lamarck.errors import ConfigError

__all__ = ["LOCK_FILE", "HomeLock"]

LOCK_FILE = "node.lock"


class HomeLock:
    """Holds the exclusive lock on ``<home>/node.lock`` for the node's lifetime."""

    def __init__(self, home: Path) -> None:
        self.path = home / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise ``ConfigError(reason="already_running")`` naming the pid."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise ConfigError(
                f"a node is already running on {self.path.parent} (pid {holder})",
                reason="already_running",
                pid=holder,
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (the file stays; an empty pid means no node runs)."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> HomeLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
