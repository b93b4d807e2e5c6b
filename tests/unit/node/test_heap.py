"""The node's heap: arenas bounded (glibc) before its threads start, pages given back, and
what it holds for life taken out of the garbage collector once it has started."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from lamarck.errors import ConfigError
from lamarck.node import daemon
from lamarck.node.config import load_settings
from lamarck.node.heap import _libc, limit_malloc_arenas, release_memory

glibc = pytest.mark.skipif(_libc() is None, reason="the arena bound is glibc's")

# Eight threads allocate at once, then the heaps glibc made are counted (malloc_info's XML
# has one <heap nr=...> per arena).
_COUNT_ARENAS = textwrap.dedent(
    """
    import ctypes, sys, tempfile, threading
    from lamarck.node.heap import limit_malloc_arenas
    limit_malloc_arenas(int(sys.argv[1]))
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.fopen.restype = ctypes.c_void_p
    barrier = threading.Barrier(8)
    def work():
        barrier.wait()
        for _ in range(2000):
            libc.free(ctypes.c_void_p(libc.malloc(4096)))
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    with tempfile.NamedTemporaryFile(suffix=".xml") as f:
        fp = libc.fopen(f.name.encode(), b"w")
        libc.malloc_info(0, ctypes.c_void_p(fp))
        libc.fclose(ctypes.c_void_p(fp))
        print(open(f.name).read().count("<heap nr="))
    """
)


def _arenas(limit: int) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _COUNT_ARENAS, str(limit)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return int(out.stdout.strip())


@glibc
def test_a_bounded_heap_makes_at_most_that_many_arenas() -> None:
    # The main arena is one of them. Unbounded, eight contending threads make more; the
    # contention is the scheduler's, so the unbounded count is only checked to exceed.
    assert _arenas(2) <= 2
    assert _arenas(1) == 1
    assert max(_arenas(0) for _ in range(3)) > 2


@glibc
def test_the_bound_is_set_and_zero_leaves_the_default() -> None:
    assert limit_malloc_arenas(0) is False
    # The test process's own bound: as many arenas as glibc's default would allow anyway.
    assert limit_malloc_arenas(64) is True


def test_a_negative_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="arenas"):
        limit_malloc_arenas(-1)


def test_releasing_memory_is_safe_to_call_at_any_time() -> None:
    release_memory()
    release_memory()


def test_the_node_setting_defaults_to_two_and_refuses_a_negative(tmp_path: Path) -> None:
    assert load_settings(home=tmp_path).malloc_arenas == 2
    assert load_settings(home=tmp_path, malloc_arenas=0).malloc_arenas == 0
    with pytest.raises(ConfigError, match="malloc_arenas"):
        load_settings(home=tmp_path, malloc_arenas=-1)


def test_the_node_bounds_its_arenas_before_it_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(daemon, "limit_malloc_arenas", lambda n: calls.append(("limit", n)))

    async def serve(settings: Any) -> bool:
        calls.append(("serve", settings.home))
        return False

    monkeypatch.setattr(daemon, "serve", serve)
    daemon.run_node(load_settings(home=tmp_path, malloc_arenas=3))
    assert calls == [("limit", 3), ("serve", tmp_path)]


class _StartedNode:
    """Stands in for ``Node``: starts at once, stops at once."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.abandoned: list[str] = []

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


def test_a_started_node_takes_what_it_holds_out_of_the_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(daemon, "Node", _StartedNode)
    monkeypatch.setattr(daemon, "_summary", lambda node: "started")
    monkeypatch.setattr(daemon, "logs_are_json", lambda: False)  # the text banner, faked above
    frozen: list[int] = []

    def ready(node: Any) -> None:
        frozen.append(gc.get_freeze_count())
        os.kill(os.getpid(), signal.SIGTERM)  # serve's own handler ends it

    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        assert asyncio.run(daemon.serve(load_settings(home=tmp_path), ready=ready)) == []
    finally:
        gc.unfreeze()
    assert frozen and frozen[0] > 0
