"""The ``EventLog`` port's contract (the lesson event log and the rejection log): run against the
in-memory and the Postgres adapter (the ``store`` fixture)."""

from __future__ import annotations

import pytest

from lamarck.domain.rows import (
    LessonEvent,
    RejectionRow,
)
from lamarck.errors import InvalidRecord
from lamarck.node.store.port import LessonStore
from tests.contract.contract_factories import (
    at,
)


async def test_lesson_events_round_trip_oldest_first_per_lesson(store: LessonStore) -> None:
    retired = LessonEvent("l1", at(5), "retired", "alice", 0.7, 0.7, reason="no longer true")
    confirmed = LessonEvent("l1", at(1), "confirmed", "loop", 0.5, 0.65, outcome_id="o1")
    imported = LessonEvent("l1", at(0), "imported", "lmk1src", None, 0.5, version=1234567)
    other = LessonEvent("l2", at(2), "edited", "agent", 0.5, 0.5, reason="typo")
    # Two events at one instant keep their append order.
    tie_a = LessonEvent("l1", at(5), "version", "lmk1src", 0.7, 0.72, version=2)
    await store.append_events([retired, confirmed])
    await store.append_events([imported, other, tie_a])
    assert await store.lesson_events(["l1"]) == [imported, confirmed, retired, tie_a]
    assert await store.lesson_events(["l2", "nope"]) == [other]
    assert await store.lesson_events([]) == []


async def test_an_unknown_event_kind_refuses_the_whole_batch(store: LessonStore) -> None:
    ok = LessonEvent("l1", at(0), "confirmed", "loop", 0.5, 0.6)
    with pytest.raises(InvalidRecord) as err:
        await store.append_events([ok, LessonEvent("l1", at(1), "exploded", "loop")])
    assert err.value.reason == "bad_event_kind"
    assert await store.lesson_events(["l1"]) == []


async def test_rejections_list_newest_first(store: LessonStore) -> None:
    for i in range(4):
        await store.record_rejection(RejectionRow("lmk1src", "bad_signature", f"h{i}", at(i)))
    await store.record_rejection(RejectionRow("lmk1src", "replay", "h4", at(3), detail="again"))
    got = await store.list_rejections(limit=3)
    assert [r.content_hash for r in got] == ["h4", "h3", "h2"]
    assert got[0] == RejectionRow("lmk1src", "replay", "h4", at(3), detail="again")
