"""Contract: what the knowledge rules store, in both adapters — a lesson's open conflicts and the
conflicts it won (``contested_with``, ``verified_against``) and the ``contested`` and ``merged``
event kinds."""

from __future__ import annotations

import dataclasses

from lamarck.domain.rows import (
    LessonEvent,
    LessonFilter,
)
from lamarck.node.store.port import LessonStore
from tests.contract.contract_factories import T0, lesson


async def test_conflict_columns_round_trip_through_insert_update_and_bulk_insert(
    store: LessonStore,
) -> None:
    """Both tuples come back as written, in order, by every write path."""
    a = lesson("a", contested_with=("b", "c"), verified_against=("z",))
    await store.insert_lesson(a)
    assert (await store.get_lesson("a")) == a
    settled = dataclasses.replace(a, contested_with=(), verified_against=("z", "b"))
    await store.update_lesson(settled)
    assert (await store.get_lesson("a")).contested_with == ()
    assert (await store.get_lesson("a")).verified_against == ("z", "b")
    await store.insert_lessons([lesson("d", contested_with=("e",)), lesson("e")])
    got = {r.id: r for r in await store.list_lessons(LessonFilter(statuses=None))}
    assert got["d"].contested_with == ("e",)
    assert got["e"].contested_with == () and got["e"].verified_against == ()


async def test_a_new_version_keeps_its_conflict_columns(store: LessonStore) -> None:
    """``supersede`` stores the new row's columns; the old row's stay as they were."""
    await store.insert_lesson(lesson("old", contested_with=("x",)))
    await store.supersede("old", lesson("new", verified_against=("x",)))
    old, new = await store.get_lessons(["old", "new"])
    assert old.contested_with == ("x",)
    assert new.verified_against == ("x",) and new.contested_with == ()


async def test_contested_and_merged_are_event_kinds(store: LessonStore) -> None:
    """The settlement and consolidation paths log these kinds; the store accepts them."""
    await store.append_events(
        [
            LessonEvent("a", T0, "contested", "loop", 0.5, 0.5, "semantic conflict with b"),
            LessonEvent("a", T0, "merged", "loop", 0.5, 0.5, "absorbed c"),
        ]
    )
    assert [e.kind for e in await store.lesson_events(["a"])] == ["contested", "merged"]
