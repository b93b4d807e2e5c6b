"""The node's one bounded LRU map."""

from __future__ import annotations

import threading

import pytest

from lamarck.domain.lru import Lru


def test_it_forgets_the_key_used_longest_ago_beyond_its_size() -> None:
    lru: Lru[str, int] = Lru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "a" is now the most recently used
    lru.put("c", 3)
    assert "b" not in lru and lru.get("a") == 1 and lru.get("c") == 3
    assert len(lru) == 2


def test_touch_marks_a_key_used_and_says_whether_it_is_kept() -> None:
    lru: Lru[str, None] = Lru(2)
    lru.put("a", None)
    lru.put("b", None)
    assert lru.touch("a") is True
    assert lru.touch("z") is False
    lru.put("c", None)
    assert "a" in lru and "b" not in lru


def test_get_or_put_makes_a_value_once_and_keeps_it() -> None:
    lru: Lru[str, list[int]] = Lru(4)
    made: list[int] = []
    first = lru.get_or_put("k", lambda: made.append(1) or [1])
    again = lru.get_or_put("k", lambda: made.append(2) or [2])
    assert first is again and made == [1]


def test_size_zero_keeps_nothing_and_a_negative_size_is_refused() -> None:
    lru: Lru[str, int] = Lru(0)
    lru.put("a", 1)
    assert lru.get("a") is None and len(lru) == 0
    with pytest.raises(ValueError):
        Lru(-1)


def test_threads_writing_at_once_never_leave_it_over_its_size() -> None:
    lru: Lru[int, int] = Lru(50)

    def write(base: int) -> None:
        for i in range(2000):
            lru.put(base + i, i)
            lru.get(base + i // 2)

    threads = [threading.Thread(target=write, args=(n * 10_000,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(lru) == 50
