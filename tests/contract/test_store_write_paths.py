"""The store's one-statement write paths and indexed lookups (§5), per adapter.

A lesson written with its events, an update carrying provenance and events, and the retired
evidence asked about only the ids at hand must answer exactly as the general paths do.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from lamarck.domain.rows import (
    LessonEvent,
    LessonFilter,
    LessonStatus,
    ProvenanceEntry,
    RelevanceFloor,
)
from lamarck.errors import ConflictError, InvalidRecord, NotFound
from lamarck.node.store.port import LessonStore
from tests.factories import lesson_row

DIM = 8  # the conftest's template dimension
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def _event(lesson_id: str, kind: str, seconds: int, **fields: object) -> LessonEvent:
    base = LessonEvent(lesson_id, T0 + timedelta(seconds=seconds), kind, "loop")
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def _prov(source: str, seconds: int) -> ProvenanceEntry:
    return ProvenanceEntry(source, "via", T0 + timedelta(seconds=seconds), "h" * 64)


async def test_a_lesson_written_with_its_events_keeps_them_in_order(store: LessonStore) -> None:
    events = [
        _event("a", "created", 0, confidence_after=0.5, reason="born"),
        _event("a", "contested", 0, confidence_before=None, outcome_id="o1", version=2),
    ]
    await store.insert_lesson(lesson_row("a", dim=DIM), events)
    assert (await store.get_lesson("a")).content == "lesson a"
    assert await store.lesson_events(["a"]) == events


async def test_a_duplicate_lesson_writes_no_events(store: LessonStore) -> None:
    await store.insert_lesson(lesson_row("a", dim=DIM))
    with pytest.raises(ConflictError):
        await store.insert_lesson(lesson_row("a", dim=DIM), [_event("a", "created", 1)])
    assert await store.lesson_events(["a"]) == []


async def test_an_unknown_event_kind_refuses_the_lesson_too(store: LessonStore) -> None:
    with pytest.raises(InvalidRecord):
        await store.insert_lesson(lesson_row("a", dim=DIM), [_event("a", "exploded", 0)])
    with pytest.raises(NotFound):
        await store.get_lesson("a")


async def test_an_update_replaces_provenance_and_appends_events(store: LessonStore) -> None:
    await store.insert_lesson(lesson_row("a", dim=DIM, provenance=(_prov("s1", 0),)))
    updated = lesson_row(
        "a", confidence=0.7, provenance=(_prov("s2", 1), _prov("s3", 2)), embedding=None
    )
    events = [_event("a", "confirmed", 3, confidence_before=0.5, confidence_after=0.7)]
    await store.update_lesson(updated, events)
    row = await store.get_lesson("a")
    assert row.confidence == pytest.approx(0.7)
    assert [p.source_node_id for p in row.provenance] == ["s2", "s3"]
    assert row.embedding is not None  # kept: the update carried none
    assert await store.lesson_events(["a"]) == events


async def test_updating_a_missing_lesson_writes_nothing(store: LessonStore) -> None:
    with pytest.raises(NotFound):
        await store.update_lesson(lesson_row("ghost", dim=DIM), [_event("ghost", "confirmed", 0)])
    assert await store.lesson_events(["ghost"]) == []


async def test_retired_evidence_among_answers_only_the_ids_asked(store: LessonStore) -> None:
    await store.insert_lesson(lesson_row("kept", dim=DIM, evidence=("o1",)))
    await store.insert_lesson(
        lesson_row(
            "gone",
            dim=DIM,
            evidence=("o2", "o3"),
            status=LessonStatus.RETIRED,
            superseded_by="retired:u",
        )
    )
    assert await store.retired_evidence_ids(among=("o1", "o3", "o9")) == {"o3"}
    assert await store.retired_evidence_ids(among=("o1",)) == set()
    assert await store.retired_evidence_ids(among=()) == set()
    assert await store.retired_evidence_ids() == {"o2", "o3"}


async def test_a_tags_filter_keeps_lessons_carrying_every_tag(store: LessonStore) -> None:
    await store.insert_lesson(lesson_row("both", dim=DIM, tags=("target:a", "avoid:x")))
    await store.insert_lesson(lesson_row("one", dim=DIM, tags=("target:a",)))
    await store.insert_lesson(lesson_row("other", dim=DIM, tags=("target:b", "avoid:x")))
    flt = LessonFilter(statuses=None, tags=("target:a",))
    assert {r.id for r in await store.list_lessons(flt)} == {"both", "one"}
    flt = LessonFilter(statuses=None, tags=("avoid:x", "target:a"))
    assert [r.id for r in await store.list_lessons(flt)] == ["both"]
    assert await store.count_lessons(flt) == 1


async def test_a_lesson_written_with_provenance_and_events_keeps_both(store: LessonStore) -> None:
    events = [_event("a", "imported", 0, reason="from s1")]
    await store.insert_lesson(
        lesson_row("a", dim=DIM, provenance=(_prov("s1", 0), _prov("s2", 1))), events
    )
    row = await store.get_lesson("a")
    assert [p.source_node_id for p in row.provenance] == ["s1", "s2"]
    assert await store.lesson_events(["a"]) == events
    with pytest.raises(ConflictError):
        await store.insert_lesson(lesson_row("a", dim=DIM, provenance=(_prov("s3", 2),)), events)
    assert [p.source_node_id for p in (await store.get_lesson("a")).provenance] == ["s1", "s2"]
    assert await store.lesson_events(["a"]) == events


async def test_retired_evidence_follows_retirement_evidence_and_deletion(
    store: LessonStore,
) -> None:
    row = lesson_row("later", dim=DIM, evidence=("o4",))
    await store.insert_lesson(row)
    assert await store.retired_evidence_ids(among=("o4",)) == set()
    # Retired by the user through an ordinary update: its evidence is never re-learned.
    retired = dataclasses.replace(
        row, status=LessonStatus.RETIRED, superseded_by="retired:u", evidence=("o4", "o5")
    )
    await store.update_lesson(retired)
    assert await store.retired_evidence_ids(among=("o4", "o5", "o6")) == {"o4", "o5"}
    # A later write of the retired row with less evidence: the answer follows the row.
    await store.update_lesson(dataclasses.replace(retired, evidence=("o5",)))
    assert await store.retired_evidence_ids(among=("o4", "o5")) == {"o5"}
    await store.hard_delete("later")
    assert await store.retired_evidence_ids() == set()


async def test_a_search_by_operation_ranks_every_match_exactly(store: LessonStore) -> None:
    # An operation filter selects a few rows among many: every one of them is ranked (the
    # conflict check's vector search may not miss a rival the index scan would drop).
    rng = np.random.default_rng(7)
    others = [
        lesson_row(f"n{i:03d}", operation="make", embedding=rng.standard_normal(DIM).astype("f4"))
        for i in range(120)
    ]
    await store.insert_lessons(others)
    query = np.ones(DIM, dtype=np.float32)
    near, far = query.copy(), -query.copy()
    near[0] = 0.5  # cosine 0.98 to the query
    await store.insert_lessons(
        [
            lesson_row("near", operation="pytest", embedding=near),
            lesson_row("far", operation="pytest", embedding=far),
            lesson_row("off", operation="pytest", status=LessonStatus.RETIRED, embedding=near),
        ]
    )
    flt = LessonFilter(operation="pytest")
    hits = await store.search(query, 50, flt)
    assert [h.lesson.id for h in hits] == ["near", "far"]
    assert hits[0].similarity == pytest.approx(0.98, abs=0.01)
    floored = await store.search(query, 50, flt, RelevanceFloor(0.9, 0.0))
    assert [h.lesson.id for h in floored] == ["near"]
