"""The ``LessonRecall`` port's contract (vector search, embeddings written behind, and use marks):
run against the in-memory and the Postgres adapter (the ``store`` fixture)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lamarck.domain.rows import (
    LessonFilter,
    LessonRow,
    LessonStatus,
    RelevanceFloor,
)
from lamarck.errors import StoreError
from lamarck.node.store.port import LessonStore
from tests.contract.contract_factories import (
    DIM,
    at,
    exact_order,
    filter_fixture,
    lesson,
    vec,
)


async def _random_lessons(
    store: LessonStore, prefix: str, seed: int
) -> tuple[list[LessonRow], np.ndarray]:
    """Forty stored lessons with random vectors, and a random query (both from ``seed``)."""
    rng = np.random.default_rng(seed)
    rows = [
        lesson(f"{prefix}{i:02d}", embedding=rng.normal(size=DIM).astype(np.float32))
        for i in range(40)
    ]
    await store.insert_lessons(rows)
    return rows, rng.normal(size=DIM).astype(np.float32)


async def test_search_order_is_exact_cosine_order_on_small_data(store: LessonStore) -> None:
    rows, query = await _random_lessons(store, "l", seed=7)
    hits = await store.search(query, 10, LessonFilter())
    want = exact_order(rows, query)[:10]
    assert [h.lesson.id for h in hits] == [w[0] for w in want]
    for hit, (_, sim) in zip(hits, want, strict=True):
        assert hit.similarity == pytest.approx(sim, abs=1e-5)
    assert hits[0].lesson == next(r for r in rows if r.id == want[0][0])


async def test_search_applies_the_filter_and_skips_rows_without_embedding(
    store: LessonStore,
) -> None:
    await filter_fixture(store)
    await store.insert_lesson(lesson("no-vector", embedding=None, confidence=0.99))
    await store.insert_lesson(lesson("p1-far", scope="project:1", embedding=vec(-1.0, 0.1)))
    hits = await store.search(vec(1.0), 10, LessonFilter(scopes=("project:1",)))
    assert [h.lesson.id for h in hits] == ["p1", "p1-far"]
    assert hits[0].similarity == pytest.approx(1.0, abs=1e-6)
    assert hits[1].similarity < 0
    everything = await store.search(vec(1.0), 100, LessonFilter())
    assert {h.lesson.id for h in everything} == {
        "g-hi",
        "g-lo",
        "g-new",
        "g-old",
        "p1",
        "p2",
        "sit",
        "imp",
        "p1-far",
    }
    assert await store.search(vec(1.0), 0, LessonFilter()) == []


async def test_search_with_a_floor_returns_exactly_the_top_k_it_keeps(store: LessonStore) -> None:
    _, query = await _random_lessons(store, "f", seed=11)
    top = await store.search(query, 12, LessonFilter())
    for floor in (RelevanceFloor(-1.0, 0.5), RelevanceFloor(0.2, 0.0), RelevanceFloor(0.9, 0.9)):
        cut = floor.cut(top[0].similarity)
        kept = await store.search(query, 12, LessonFilter(), floor)
        # The same hits, in the same order, as cutting the unfloored top-k by the same rule.
        assert [h.lesson.id for h in kept] == [h.lesson.id for h in top if h.similarity >= cut]
        assert [h.similarity for h in kept] == pytest.approx(
            [h.similarity for h in top if h.similarity >= cut], abs=1e-6
        )
    # Nothing reaches a floor above every similarity; nothing is found in an empty filter.
    assert await store.search(query, 12, LessonFilter(), RelevanceFloor(1.01, 0.0)) == []
    empty = LessonFilter(scopes=("project:none",))
    assert await store.search(query, 12, empty, RelevanceFloor(0.0, 0.5)) == []


async def test_search_ties_are_broken_by_id(store: LessonStore) -> None:
    await store.insert_lessons([lesson(i, embedding=vec(2.0, 2.0)) for i in ("c", "a", "b")])
    hits = await store.search(vec(1.0, 1.0), 3, LessonFilter())
    assert [h.lesson.id for h in hits] == ["a", "b", "c"]


async def test_search_refuses_bad_queries(store: LessonStore) -> None:
    await store.insert_lesson(lesson("a"))
    with pytest.raises(StoreError) as zero:
        await store.search(np.zeros(DIM, dtype=np.float32), 3, LessonFilter())
    assert zero.value.reason == "invalid_query"
    with pytest.raises(StoreError) as wrong:
        await store.search(np.ones(DIM + 2, dtype=np.float32), 3, LessonFilter())
    assert wrong.value.reason == "dimension_mismatch"


async def test_set_embeddings_sets_only_the_vector_and_search_then_finds_the_row(
    store: LessonStore,
) -> None:
    # A claim stored before its vector (a deferred embedding), then confirmed meanwhile.
    await store.insert_lesson(lesson("late", status=LessonStatus.CLAIMED, embedding=None))
    await store.insert_lesson(lesson("other", embedding=vec(0.0, 1.0)))
    confirmed = dataclasses.replace(
        await store.get_lesson("late"), confidence=0.75, status=LessonStatus.ACTIVE
    )
    await store.update_lesson(confirmed)
    assert await store.search(vec(1.0), 5, LessonFilter()) == [
        h for h in await store.search(vec(1.0), 5, LessonFilter()) if h.lesson.id == "other"
    ]
    await store.set_embeddings([("late", vec(1.0)), ("no-such-lesson", vec(1.0))])
    row = await store.get_lesson("late")
    # The confirmation written meanwhile stays: only the vector was set.
    assert row.confidence == 0.75 and row.status is LessonStatus.ACTIVE
    assert row.embedding is not None and float(row.embedding[0]) == pytest.approx(1.0)
    hits = await store.search(vec(1.0), 1, LessonFilter())
    assert [h.lesson.id for h in hits] == ["late"]


async def test_set_embeddings_refuses_another_dimension_and_sets_nothing(
    store: LessonStore,
) -> None:
    await store.insert_lesson(lesson("a", embedding=None))
    await store.insert_lesson(lesson("b", embedding=None))
    with pytest.raises(StoreError) as caught:
        await store.set_embeddings([("a", vec(1.0)), ("b", np.ones(DIM + 1, dtype=np.float32))])
    assert caught.value.reason == "dimension_mismatch"
    assert (await store.get_lesson("a")).embedding is None


async def test_unembedded_lists_live_lessons_without_a_vector_oldest_first(
    store: LessonStore,
) -> None:
    await store.insert_lessons(
        [
            lesson("new-claim", status=LessonStatus.CLAIMED, embedding=None, created_at=at(20)),
            lesson("old-active", embedding=None, created_at=at(10)),
            lesson("retired", status=LessonStatus.RETIRED, embedding=None, created_at=at(5)),
            lesson("has-vector", created_at=at(1)),
        ]
    )
    assert await store.unembedded(10) == [
        ("old-active", "lesson old-active"),
        ("new-claim", "lesson new-claim"),
    ]
    assert await store.unembedded(1) == [("old-active", "lesson old-active")]


async def test_a_late_use_mark_keeps_the_latest_use(store: LessonStore) -> None:
    await store.insert_lesson(lesson("used"))
    await store.mark_used(["used"], at(50))
    await store.mark_used(["used"], at(10))  # written behind an earlier reply
    row = await store.get_lesson("used")
    assert row.last_used == at(50) and row.use_count == 2


async def test_many_recalls_uses_are_written_at_once(store: LessonStore) -> None:
    await store.insert_lesson(lesson("a"))
    await store.insert_lesson(lesson("b"))
    await store.mark_uses(
        [(["a", "b"], at(30)), (["a", "a", "gone"], at(50)), (["b"], at(20)), ([], at(99))]
    )
    a, b = await store.get_lessons(["a", "b"])
    # A repeated id within one recall is one use; an unknown id is skipped.
    assert (a.use_count, a.last_used) == (2, at(50))
    assert (b.use_count, b.last_used) == (2, at(30))
    await store.mark_uses([])
    assert (await store.get_lesson("a")).use_count == 2
