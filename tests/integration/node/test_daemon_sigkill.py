"""A node killed with SIGKILL: its restart reuses the servers it left, a clean stop ends them.

The node runs with its embedded Postgres (``<home>/pgdata``) and, with no Redis URL, its
embedded redis-server (``<home>/redis``). Both are daemons and outlive a SIGKILL of the node.
The restarted node must reuse them (not start a second server on the same data), and its
clean stop must leave no server of that home running: pgserver's handle list would otherwise
still name the killed node and keep Postgres up forever.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

psutil: Any = importlib.import_module("psutil")

_WAIT_S = 30.0
_POLL_S = 0.05


def _wait_for(check: Callable[[], bool], what: str, within_s: float = _WAIT_S) -> None:
    """Poll ``check`` until it holds; fail naming ``what`` after ``within_s``."""
    deadline = time.monotonic() + within_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {within_s}s: {what}")
        time.sleep(_POLL_S)


def _servers_of(home: Path) -> dict[int, str]:
    """Live processes (zombies excluded) whose command line or working directory is in ``home``.

    Postgres changes into its data directory (every backend too), redis-server into its
    ``dir``; the postmaster also names ``-D <pgdata>`` on its command line.
    """
    found: dict[int, str] = {}
    root = str(home.resolve())
    for proc in psutil.process_iter():
        try:
            if proc.pid == os.getpid() or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            cmdline = " ".join(proc.cmdline())
            cwd = proc.cwd()
        except psutil.Error:
            continue
        if root in cmdline or cwd == root or cwd.startswith(root + os.sep):
            found[proc.pid] = cmdline
    return found


def _pid_in(path: Path) -> int:
    return int(path.read_text().splitlines()[0])


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """The node's home; whatever server of it a failed test leaves behind is killed."""
    path = tmp_path / "node"
    try:
        yield path
    finally:
        for pid in _servers_of(path):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_restart_after_sigkill_reuses_the_servers_and_a_clean_stop_ends_them(
    home: Path, node_process: Any
) -> None:
    # ``home`` first: its teardown (killing leftovers of a failed run) then runs after the
    # factory's, which stops the nodes.
    killed = node_process(home)
    pgdata, redis_dir = home / "pgdata", home / "redis"
    postmaster = _pid_in(pgdata / "postmaster.pid")
    redis_pid = _pid_in(redis_dir / "redis.pid")
    assert killed.pid in json.loads((pgdata / ".handle_pids.json").read_text())

    killed.process.send_signal(signal.SIGKILL)
    killed.returncode = killed.process.wait(timeout=30)
    assert killed.returncode == -signal.SIGKILL
    # The scenario: both servers outlive the node, and the handle list still names it.
    servers = _servers_of(home)
    assert postmaster in servers and redis_pid in servers
    assert killed.pid in json.loads((pgdata / ".handle_pids.json").read_text())

    restarted = node_process(home)
    # Reused, not replaced: the same postmaster and redis-server serve the new node.
    assert _pid_in(pgdata / "postmaster.pid") == postmaster
    assert _pid_in(redis_dir / "redis.pid") == redis_pid
    assert json.loads((pgdata / ".handle_pids.json").read_text()) == [restarted.pid]

    assert restarted.stop() == 0
    _wait_for(lambda: not _servers_of(home), f"no server of {home} running")
    assert not (pgdata / "postmaster.pid").exists()
    assert not (redis_dir / "redis.pid").exists()
