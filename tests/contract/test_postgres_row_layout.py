"""How the Postgres store lays out a lesson row, so a later write stays cheap.

A confirmation rewrites a row with its indexed values unchanged: it must be a heap-only update,
touching no index (the HNSW graph included). And the tags index answers a lookup without a
pending list that grows with every row written since the last vacuum.
"""

from __future__ import annotations

import dataclasses
import secrets
from datetime import UTC, datetime

import numpy as np
import pytest

from lamarck.node.store.postgres import PostgresLessonStore
from tests.factories import lesson_row

pytestmark = pytest.mark.integration

DIM = 8  # the conftest's template dimension
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


async def _updates(store: PostgresLessonStore) -> tuple[int, int]:
    """(all updates, heap-only updates) of ``lessons`` so far."""
    await store.pool.execute("SELECT pg_stat_force_next_flush()")
    rec = await store.pool.fetchrow(
        "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'lessons'"
    )
    assert rec is not None
    return int(rec["n_tup_upd"]), int(rec["n_tup_hot_upd"])


async def test_a_confirmation_of_a_two_kilobyte_row_is_heap_only(
    pg_store: PostgresLessonStore,
) -> None:
    # ~2 KB of content that does not compress, and a scope that does: under Postgres's
    # default the row was compressed in place, the scope with it, and every rewrite of the
    # same scope then counted as a change of an indexed value.
    row = lesson_row(
        "big",
        at=T0,
        content=secrets.token_hex(950),
        operation="pytest",
        scope="project:" + "be" * 32,
        confidence=0.5,
        evidence=("o1",),
        tags=("source:mechanical", "target:repo"),
        embedding=np.ones(DIM, dtype=np.float32),
    )
    await pg_store.insert_lesson(row)
    before = await _updates(pg_store)
    for n in range(3):
        stored = (await pg_store.get_lessons(["big"]))[0]
        await pg_store.update_lesson(
            dataclasses.replace(
                stored,
                confidence=stored.confidence + 0.1,
                evidence=(*stored.evidence, f"o{n + 2}"),
                confirmations=stored.confirmations + 1,
                embedding=None,
            )
        )
    after = await _updates(pg_store)
    assert after[0] - before[0] == 3
    assert after[1] - before[1] == 3  # none of them touched an index
    assert (await pg_store.get_lessons(["big"]))[0].evidence == ("o1", "o2", "o3", "o4")


async def test_the_tags_index_keeps_no_pending_list(pg_store: PostgresLessonStore) -> None:
    options = await pg_store.pool.fetchval(
        "SELECT reloptions FROM pg_class WHERE relname = 'lessons_tags_gin'"
    )
    assert "fastupdate=off" in (options or [])
