"""How the Postgres store's index search is planned: once, not at every recall.

A bound LIMIT gave Postgres no row estimate for a generic plan, so the HNSW search was planned
anew at every call (a custom plan each time, ~0.4 ms of a ~2 ms search). With the LIMIT
written into the statement, the statement of one ``k`` settles on its generic plan after
Postgres's five custom ones; the exact run keeps its bound LIMIT. The results are the
contract suite's business; this checks the planning, on a real server.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonRow,
    LessonStatus,
    RelevanceFloor,
)
from lamarck.node.store.postgres import PostgresLessonStore
from tests.factories import lesson_row

pytestmark = pytest.mark.integration

DIM = 8  # the conftest's template dimension
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
CALLS = 12
ROWS = 2000


def _row(i: int, rng: np.random.Generator) -> LessonRow:
    return lesson_row(
        f"l{i:03d}",
        content=f"lesson {i}",
        operation=f"op{i}",
        embedding=rng.standard_normal(DIM).astype(np.float32),
    )


async def _plans(store: PostgresLessonStore, marker: str) -> list[tuple[int, int]]:
    """(generic, custom) plan counts of this session's prepared statements holding
    ``marker``: the pool has one connection, so it is the searches' session."""
    recs = await store.pool.fetch(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
        " WHERE statement LIKE '%' || $1 || '%' AND statement NOT LIKE '%pg_prepared%'",
        marker,
    )
    return [(int(r["generic_plans"]), int(r["custom_plans"])) for r in recs]


@pytest.mark.parametrize("floor", [None, RelevanceFloor(0.0, 0.5)])
async def test_the_index_search_is_planned_once_not_at_every_call(
    pg_dsn: str, floor: RelevanceFloor | None
) -> None:
    store = await PostgresLessonStore.connect(pg_dsn, DIM, min_size=1, max_size=1)
    try:
        rng = np.random.default_rng(7)
        # Enough rows that a generic plan of a bound LIMIT looks dearer than a custom one.
        await store.insert_lessons([_row(i, rng) for i in range(ROWS)])
        await store.pool.execute("ANALYZE lessons")
        flt = LessonFilter(
            statuses=(LessonStatus.ACTIVE,), scopes=("global",), category=Category.LESSON
        )
        found = []
        for _ in range(CALLS):
            query = rng.standard_normal(DIM).astype(np.float32)
            found.append(await store.search(query, 50, flt, floor))
        assert all(hits for hits in found)
        plans = await _plans(store, "ORDER BY l.embedding <=> $1 LIMIT ")
        assert len(plans) == 1, plans
        generic, custom = plans[0]
        # Postgres tries five custom plans, then keeps the generic one: every later call
        # runs without planning (before: CALLS custom plans, no generic one).
        assert generic >= CALLS - 5 and custom <= 5, plans[0]
    finally:
        await store.close()


async def test_an_exact_search_still_binds_its_limit(pg_dsn: str) -> None:
    store = await PostgresLessonStore.connect(pg_dsn, DIM, min_size=1, max_size=1)
    try:
        rng = np.random.default_rng(8)
        for i in range(30):
            await store.insert_lesson(_row(i, rng))
        # An operation names an indexed key: ranked exactly ("+ 0" keeps HNSW out of it).
        flt = LessonFilter(operation="op3")
        hits = await store.search(rng.standard_normal(DIM).astype(np.float32), 2, flt)
        assert [h.lesson.id for h in hits] == ["l003"]
        assert await _plans(store, "+ 0 LIMIT $2")
    finally:
        await store.close()
