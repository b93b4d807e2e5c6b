"""``EmbeddedRedis`` with a server left behind: reuse or replace what is ours, never a stranger.

A node killed with SIGKILL leaves its redis-server (a daemon) running. These tests give
``EmbeddedRedis`` the states that follow: a server of the home that hangs, a pid file whose
pid now names another process, a pid file lost while the server runs, and a server of
someone else answering on the home's socket path.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from lamarck.errors import RegistryError
from lamarck.registry.embedded import EmbeddedRedis, is_home_server, redis_server_executable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

_WAIT_S = 10.0


async def eventually(check: Callable[[], Awaitable[bool] | bool], what: str) -> None:
    """Poll ``check`` until it holds; fail naming ``what`` after a bound."""
    deadline = time.monotonic() + _WAIT_S
    while True:
        result = check()
        if await result if isinstance(result, Awaitable) else result:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"not within {_WAIT_S}s: {what}")
        await asyncio.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[EmbeddedRedis]:
    """A running embedded server of a home of this test; stopped (or killed) at teardown."""
    first = EmbeddedRedis(tmp_path / "home")
    await first.start()
    pid = first.pid()
    assert pid is not None
    try:
        yield first
    finally:
        # A stopped (SIGSTOP) server left by a failed test must not outlive it.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
        await EmbeddedRedis(first.home, start_timeout_s=1.0).stop()


@pytest.fixture
def stranger(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process, working in the home's redis directory (not a redis-server)."""
    where = tmp_path / "home" / "redis"
    where.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(["sleep", "120"], cwd=where)
    try:
        yield process
    finally:
        process.kill()
        process.wait(timeout=10)


def _foreign_server(socket_path: Path, where: Path) -> subprocess.Popen[bytes]:
    """A redis-server of someone else (working in ``where``) listening on ``socket_path``."""
    where.mkdir()
    return subprocess.Popen(
        [
            redis_server_executable(),
            "--port",
            "0",
            "--unixsocket",
            str(socket_path),
            "--dir",
            str(where),
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        cwd=where,
    )


def test_only_a_redis_server_working_in_the_directory_is_the_homes(tmp_path: Path) -> None:
    assert not is_home_server(os.getpid(), Path.cwd())  # alive, right cwd, not redis-server
    assert not is_home_server(0, tmp_path)
    assert not is_home_server(2**22 + 1, tmp_path)  # above Linux's pid_max: never alive


async def test_the_homes_server_is_recognised_and_another_homes_is_not(
    server: EmbeddedRedis, tmp_path: Path
) -> None:
    pid = server.pid()
    assert pid is not None and is_home_server(pid, server.dir)
    assert not is_home_server(pid, tmp_path / "elsewhere" / "redis")


async def test_a_server_that_does_not_answer_is_replaced(server: EmbeddedRedis) -> None:
    old = server.pid()
    assert old is not None
    os.kill(old, signal.SIGSTOP)  # hung: alive, ours, and silent

    again = EmbeddedRedis(server.home, start_timeout_s=0.5)
    assert await again.start() == server.url
    new = again.pid()
    assert new is not None and new != old
    assert not _alive(old)  # replaced, not left running beside the new one
    assert await again.is_running()


async def test_stop_ends_a_server_that_does_not_answer(server: EmbeddedRedis) -> None:
    pid = server.pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)

    await EmbeddedRedis(server.home, start_timeout_s=0.5).stop()
    assert not _alive(pid)


async def test_a_lost_pid_file_is_recovered_from_the_server(server: EmbeddedRedis) -> None:
    pid = server.pid()
    server.pidfile.unlink()

    again = EmbeddedRedis(server.home)
    assert again.pid() is None and await again.server_pid() == pid
    await again.start()
    assert await again.server_pid() == pid  # reused, not a second server on the same data
    await again.stop()
    assert pid is not None and not _alive(pid)


async def test_a_stale_pid_file_naming_another_process_is_ignored(
    tmp_path: Path, stranger: subprocess.Popen[bytes]
) -> None:
    embedded = EmbeddedRedis(tmp_path / "home")
    embedded.pidfile.write_text(f"{stranger.pid}\n")
    assert embedded.pid() is None and await embedded.server_pid() is None

    await embedded.start()
    try:
        started = embedded.pid()
        assert started is not None and started != stranger.pid
    finally:
        await embedded.stop()
    assert stranger.poll() is None  # never signalled
    await embedded.stop()  # nothing of ours runs: a no-op
    assert stranger.poll() is None


async def test_a_foreign_server_on_the_socket_is_neither_used_nor_shut_down(
    tmp_path: Path,
) -> None:
    embedded = EmbeddedRedis(tmp_path / "home")
    embedded.dir.mkdir(parents=True)
    foreign = _foreign_server(embedded.socket_path, tmp_path / "elsewhere")
    try:
        await eventually(embedded.is_running, "the foreign server to answer")

        with pytest.raises(RegistryError) as refused:
            await embedded.start()
        assert refused.value.reason == "embedded_foreign"
        await embedded.stop()
        assert foreign.poll() is None and await embedded.is_running()
    finally:
        foreign.terminate()
        foreign.wait(timeout=10)
