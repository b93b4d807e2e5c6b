"""The ``StoreLifecycle`` port's contract (opening a store twice, its counts, and refreshing the
planner's statistics): run against the in-memory and the Postgres adapter (the ``store``
fixture)."""

from __future__ import annotations

from lamarck.domain.rows import (
    LessonFilter,
    RejectionRow,
)
from lamarck.node.store.port import LessonStore
from tests.contract.contract_factories import (
    T0,
    filter_fixture,
    lesson,
    outcome,
    quarantined,
    vec,
)


async def test_migrate_twice_is_harmless(store: LessonStore) -> None:
    await store.insert_lesson(lesson("a"))
    await store.migrate()
    await store.migrate()
    assert (await store.get_lesson("a")).id == "a"


async def test_stats_count_everything(store: LessonStore) -> None:
    await filter_fixture(store)
    await store.insert_outcome(outcome("o1"))
    await store.quarantine(quarantined("q1", "h1"))
    await store.quarantine(quarantined("q2", "h2"))
    await store.set_quarantine_state("q2", "rejected")
    await store.record_rejection(RejectionRow("lmk1src", "replay", "h9", T0))
    assert await store.stats() == {
        "lessons_claimed": 1,
        "lessons_active": 8,
        "lessons_superseded": 0,
        "lessons_retired": 1,
        "outcomes": 1,
        "quarantine_pending": 1,
        "quarantine": 2,
        "rejections": 1,
    }


async def test_refreshing_statistics_changes_nothing_a_search_finds(store: LessonStore) -> None:
    """Every adapter takes the call after a burst of writes (the in-memory one has no
    planner: it says it gathered nothing); what is stored and found stays the same."""
    assert await store.refresh_statistics(0.1) is False  # nothing inserted yet
    await store.insert_lessons([lesson("a"), lesson("b", embedding=vec(0.0, 1.0))])
    before = [h.lesson.id for h in await store.search(vec(1.0, 0.5), 2, LessonFilter())]
    assert isinstance(await store.refresh_statistics(0.1), bool)
    after = [h.lesson.id for h in await store.search(vec(1.0, 0.5), 2, LessonFilter())]
    assert after == before == ["a", "b"]
    assert await store.refresh_statistics(0.1) is False  # nothing inserted since
