"""``Lru``: the one bounded, least-recently-used map of the node.

Every cache and per-key table that a stream of distinct keys could grow (query vectors,
autonomy readings, per-peer rate buckets, gossip hashes seen) keeps at most ``size`` keys and
forgets the one used longest ago. Thread-safe: the embedder's query cache is read from worker
threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Lru"]

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """A map of at most ``size`` keys (0: keeps nothing); a read or write marks a key used."""

    __slots__ = ("_items", "_lock", "size")

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"an Lru size must be >= 0, got {size}")
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value kept for ``key`` (marked used), or None."""
        with self._lock:
            value = self._items.get(key)
            if value is not None or key in self._items:
                self._items.move_to_end(key)
            return value

    def touch(self, key: K) -> bool:
        """Whether ``key`` is kept (then marked used)."""
        with self._lock:
            if key not in self._items:
                return False
            self._items.move_to_end(key)
            return True

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key``, forgetting the least recently used beyond ``size``."""
        if self.size == 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def pop(self, key: K) -> V | None:
        """Forget ``key``; the value it had, or None."""
        with self._lock:
            return self._items.pop(key, None)

    def get_or_put(self, key: K, make: Callable[[], V]) -> V:
        """The value kept for ``key`` (marked used); else ``make()``, kept and returned."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()
        self.put(key, value)
        return value

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
