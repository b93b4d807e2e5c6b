"""The Postgres store's recall index against the real server.

With the index on, recall's searches are answered from memory; these tests prove that they
cost no round trip once the rows are read, and that every way the adapter writes a lesson
(inserts, bulk copies, updates, supersedes, vectors written behind, use marks, deletes, units
of work committed or rolled back) shows in the next search exactly as a search in Postgres
shows it: a second adapter without the index, on the same database, is the reference.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import random
from collections.abc import Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonRow,
    LessonStatus,
    RelevanceFloor,
    ScoredLesson,
)
from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.node.store.recall_index import (
    HasRecallIndex,
    RecallIndexParams,
    RecallIndexState,
    RecallIndexStatus,
)
from tests.factories import lesson_row

pytestmark = pytest.mark.integration

DIM = 8  # the conftest's template dimension
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
SCOPES = ("global", "project:aa", "project:bb")
RECALL = LessonFilter(
    statuses=(LessonStatus.ACTIVE,), scopes=("global", "project:aa"), category=Category.LESSON
)
WITH_CLAIMS = dataclasses.replace(RECALL, statuses=(LessonStatus.ACTIVE, LessonStatus.CLAIMED))
FLOOR = RelevanceFloor(0.1, 0.5)


def _vector(rng: random.Random) -> np.ndarray:
    return np.array([rng.uniform(-1, 1) for _ in range(DIM)], dtype=np.float32)


def _lesson(i: int, rng: random.Random, **fields: Any) -> LessonRow:
    return lesson_row(
        f"l{i:04d}",
        **{
            "content": f"lesson {i}",
            "operation": f"op{i}",
            "scope": rng.choice(SCOPES),
            "status": rng.choice((LessonStatus.ACTIVE, LessonStatus.ACTIVE, LessonStatus.CLAIMED)),
            "embedding": _vector(rng),
            **fields,
        },
    )


def _seen(hits: list[ScoredLesson]) -> list[tuple[Any, ...]]:
    """What a search returned, row fields included (the index hands out its own copies)."""
    return [
        (
            h.lesson.id,
            h.lesson.status,
            h.lesson.scope,
            h.lesson.confidence,
            h.lesson.content,
            h.lesson.use_count,
            h.lesson.last_used,
            h.lesson.superseded_by,
            tuple(np.round(h.lesson.embedding, 5)) if h.lesson.embedding is not None else None,
        )
        for h in hits
    ]


class _Counting:
    """A pool that counts the statements it runs (the index's round trips)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._pool, name)
        if name in ("acquire", "fetch", "fetchrow", "fetchval", "execute", "executemany"):
            self.calls += 1
        return attr


@pytest.fixture(params=["whole", "compact"])
async def stores(pg_dsn: str, request: pytest.FixtureRequest) -> Any:
    """The indexed store holding whole rows, or (past ``rows_held`` 20: the tests hold more)
    only the compact form, which reads a search's winners by id and keeps 20 such rows; and
    a store without the index."""
    rows_held = 5000 if request.param == "whole" else 20
    indexed = await PostgresLessonStore.connect(
        pg_dsn,
        DIM,
        max_size=3,
        recall_index=RecallIndexParams(max_rows=500, rows_held=rows_held),
    )
    plain = await PostgresLessonStore.connect(pg_dsn, DIM, max_size=2)
    try:
        yield indexed, plain
    finally:
        await indexed.close()
        await plain.close()


def rows_held_of(store: PostgresLessonStore) -> int:
    return store._index.params.rows_held if store._index is not None else 0


async def _outside(coro: Coroutine[Any, Any, int]) -> int:
    """``coro`` in a fresh context: outside the caller's unit of work, as another task is."""
    return await asyncio.get_running_loop().create_task(coro, context=contextvars.Context())


async def _agree(indexed: PostgresLessonStore, plain: PostgresLessonStore, q: np.ndarray) -> int:
    for flt in (RECALL, WITH_CLAIMS):
        for floor in (None, FLOOR):
            got = await indexed.search(q, 10, flt, floor)
            want = await plain.search(q, 10, flt, floor)
            assert _seen(got) == _seen(want)
            assert np.allclose([h.similarity for h in got], [h.similarity for h in want], atol=1e-5)
    return len(await plain.search(q, 10, RECALL))


async def test_a_search_after_the_first_costs_no_round_trip(stores: Any) -> None:
    indexed, plain = stores
    rng = random.Random(1)
    await indexed.insert_lessons([_lesson(i, rng, scope="global") for i in range(30)])
    q = _vector(rng)
    assert indexed.recall_index_state.lessons == 0  # not read yet
    assert indexed.recall_index_state.status is RecallIndexStatus.NOT_READ
    first = await indexed.search(q, 5, RECALL, FLOOR)
    held = await indexed.count_lessons(dataclasses.replace(WITH_CLAIMS, scopes=None))
    assert indexed.recall_index_state.lessons == held
    assert indexed.recall_index_state == RecallIndexState(RecallIndexStatus.ON, held, 500)
    # The operator's status reads it through the protocol; a store without it says off.
    assert isinstance(indexed, HasRecallIndex)
    assert plain.recall_index_state == RecallIndexState(RecallIndexStatus.OFF, 0, 0)
    counting = _Counting(indexed._pool)
    indexed._pool = counting
    again = await indexed.search(q, 5, RECALL, FLOOR)
    # Compact too: the first search's winners' rows were read by id and kept.
    assert indexed._index is not None and indexed._index.compact is (rows_held_of(indexed) < 30)
    assert counting.calls == 0
    assert _seen(again) == _seen(first) and first
    # A filter the index does not keep goes to Postgres.
    await indexed.search(q, 5, dataclasses.replace(RECALL, min_confidence=0.4))
    assert counting.calls == 1


async def test_every_write_shows_in_the_next_search_as_in_postgres(stores: Any) -> None:
    indexed, plain = stores
    rng = random.Random(7)
    rows = {r.id: r for r in (_lesson(i, rng) for i in range(40))}
    await indexed.insert_lessons(list(rows.values()))
    n = len(rows)
    found = 0
    for step in range(120):
        q = _vector(rng)
        found += await _agree(indexed, plain, q)
        live = sorted(i for i, r in rows.items() if r.superseded_by is None)
        pick = rows[rng.choice(live)]
        action = rng.randrange(9)
        if action == 0:
            new = _lesson(n, rng)
            n += 1
            await indexed.insert_lesson(new)
            rows[new.id] = new
        elif action == 1:
            changed = dataclasses.replace(
                pick,
                status=rng.choice(list(LessonStatus)),
                scope=rng.choice(SCOPES),
                confidence=rng.random(),
                embedding=_vector(rng),
            )
            await indexed.update_lesson(changed)
            rows[pick.id] = changed
        elif action == 2 and pick.status in (LessonStatus.ACTIVE, LessonStatus.CLAIMED):
            new = _lesson(n, rng, content=f"edited {pick.id}")
            n += 1
            await indexed.supersede(pick.id, new)
            rows[new.id] = new
            rows[pick.id] = dataclasses.replace(
                pick, superseded_by=new.id, status=LessonStatus.SUPERSEDED
            )
        elif action == 3:
            await indexed.set_embeddings([(pick.id, _vector(rng))])
        elif action == 4:
            at = T0 + timedelta(minutes=step)
            await indexed.mark_uses([([pick.id], at), ([pick.id, rng.choice(live)], at)])
        elif action == 5:
            await indexed.hard_delete(pick.id)
            del rows[pick.id]
        elif action == 6:
            # A unit of work that commits: its writes show once it has.
            changed = dataclasses.replace(pick, scope="global", embedding=_vector(rng))
            async with indexed.atomic():
                await indexed.update_lesson(changed)
                await indexed.mark_uses([([pick.id], T0 + timedelta(hours=step))])
                # Searched from outside meanwhile: the index reads the row as it was.
                await _outside(_agree(indexed, plain, changed.embedding))
            rows[pick.id] = changed
        elif action == 7:
            # A unit of work that rolls back, searched from another task meanwhile.
            with pytest.raises(RuntimeError):
                async with indexed.atomic():
                    await indexed.update_lesson(
                        dataclasses.replace(pick, status=LessonStatus.RETIRED)
                    )
                    await indexed.set_embeddings([(pick.id, _vector(rng))])
                    await _outside(_agree(indexed, plain, _vector(rng)))
                    raise RuntimeError("roll back")
        else:
            bulk = [_lesson(n + j, rng) for j in range(3)]
            n += 3
            await indexed.insert_lessons(bulk)
            rows.update((r.id, r) for r in bulk)
    # The searches found something most of the time: the comparison was not of empty lists.
    assert found > 120 * 3


async def test_a_search_inside_a_unit_of_work_sees_its_writes(stores: Any) -> None:
    indexed, _ = stores
    rng = random.Random(3)
    row = _lesson(1, rng, scope="global", status=LessonStatus.ACTIVE)
    await indexed.insert_lesson(row)
    assert [h.lesson.id for h in await indexed.search(row.embedding, 5, RECALL)] == [row.id]
    async with indexed.atomic():
        await indexed.update_lesson(dataclasses.replace(row, status=LessonStatus.RETIRED))
        assert await indexed.search(row.embedding, 5, RECALL) == []
        # Another connection (the index's reads) still sees the committed row.
    assert await indexed.search(row.embedding, 5, RECALL) == []


async def test_past_max_rows_the_index_turns_off_and_search_stays_right(pg_dsn: str) -> None:
    small = await PostgresLessonStore.connect(
        pg_dsn, DIM, max_size=2, recall_index=RecallIndexParams(max_rows=10)
    )
    try:
        rng = random.Random(5)
        rows = [_lesson(i, rng, scope="global", status=LessonStatus.ACTIVE) for i in range(8)]
        await small.insert_lessons(rows)
        q = _vector(rng)
        assert len(await small.search(q, 20, RECALL)) == 8
        more = [_lesson(100 + i, rng, scope="global", status=LessonStatus.ACTIVE) for i in range(5)]
        await small.insert_lessons(more)
        assert len(await small.search(q, 20, RECALL)) == 13
        assert small._index is not None and not small._index.enabled
        assert small.recall_index_state.lessons == 0
        assert small.recall_index_state == RecallIndexState(RecallIndexStatus.OUTGROWN, 0, 10)
        counting = _Counting(small._pool)
        small._pool = counting
        await small.search(q, 20, RECALL)
        assert counting.calls == 1  # in Postgres now
    finally:
        await small.close()


async def test_a_reconnect_reads_the_rows_again(stores: Any) -> None:
    indexed, plain = stores
    rng = random.Random(9)
    row = _lesson(1, rng, scope="global", status=LessonStatus.ACTIVE)
    await indexed.insert_lesson(row)
    await indexed.search(row.embedding, 5, RECALL)
    # Written behind the adapter's back (another writer, as after a restore): only a
    # reconnect, which forgets the rows, shows it.
    await plain.update_lesson(dataclasses.replace(row, status=LessonStatus.RETIRED))
    await indexed.reconnect()
    assert await indexed.search(row.embedding, 5, RECALL) == []
