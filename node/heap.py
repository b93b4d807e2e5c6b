"""The process heap (glibc's allocator): give freed pages back, and bound its arenas.

Both are no-ops where the C library is not glibc (macOS, musl): the node runs there, with the
allocator's own behaviour.

glibc gives each thread that meets contention an arena of its own, up to eight per core. The
node's threads (the event loop, the store's and the embedder's workers, onnxruntime's
intra-op threads) each free a model run's activations into whichever arena they hold, and
``malloc_trim`` can give back only whole free pages, so with the default the node's resident
memory at rest after a burst of writes was 304-316 MB on two cores; with two arenas 244-294 MB
in ten of eleven runs of the same bench, one at 304 (``bench/peers.py``: at most
300 MB). Threads then share arenas,
and the catch-up bench, which allocates on every thread, measured no loss (``--quick``:
0.64 / 0.52 with the default, 0.67 / 0.58 with two).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

__all__ = ["M_ARENA_MAX", "limit_malloc_arenas", "release_memory"]

#: glibc's ``mallopt`` parameter for the most arenas (``<malloc.h>``).
M_ARENA_MAX = -8


@functools.cache
def _libc() -> Any | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc: nothing to trim or bound
        return None


def release_memory() -> None:
    """Give the heap's free pages back to the system (glibc ``malloc_trim``; elsewhere a
    no-op). Called once a batch of embeddings is done: its activations were freed, but the
    allocator would otherwise keep them as the node's resident memory."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def limit_malloc_arenas(arenas: int) -> bool:
    """Let the allocator make at most ``arenas`` arenas from now on (0: leave its default).

    Call it before the process starts its threads: a thread keeps the arena it already has.
    True when the limit was set (glibc accepted it), False otherwise or for 0.
    """
    if arenas < 0:
        raise ValueError(f"arenas must be >= 0, got {arenas}")
    libc = _libc()
    if arenas == 0 or libc is None:
        return False
    return bool(libc.mallopt(M_ARENA_MAX, arenas))
