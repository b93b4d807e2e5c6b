"""The ``QuarantineStore`` port's contract (records held for review and the decisions on them): run
against the in-memory and the Postgres adapter (the ``store`` fixture)."""

from __future__ import annotations

import dataclasses

import pytest

from lamarck.errors import NotFound, StoreError
from lamarck.node.store.port import LessonStore
from tests.contract.contract_factories import (
    quarantined,
)


async def test_quarantine_round_trips_and_is_idempotent_by_hash(store: LessonStore) -> None:
    await store.quarantine(quarantined("q2", "h2", 2))
    await store.quarantine(quarantined("q1", "h1", 1))
    await store.quarantine(quarantined("q1-again", "h1", 3))
    assert await store.list_quarantine() == [quarantined("q1", "h1", 1), quarantined("q2", "h2", 2)]


async def test_quarantine_keeps_the_decision_taken_when_the_record_was_held(
    store: LessonStore,
) -> None:
    decided = dataclasses.replace(
        quarantined("q1", "h1", 1), confidence=0.21, transfer_rule="medium_reputation"
    )
    await store.quarantine(decided)
    await store.quarantine(quarantined("q2", "h2", 2))
    first, legacy = await store.list_quarantine()
    assert first == decided
    assert (legacy.confidence, legacy.transfer_rule) == (None, None)
    approved = await store.set_quarantine_state("q1", "approved")
    assert (approved.confidence, approved.transfer_rule) == (0.21, "medium_reputation")


async def test_quarantine_state_changes_and_filters(store: LessonStore) -> None:
    await store.quarantine(quarantined("q1", "h1", 1))
    await store.quarantine(quarantined("q2", "h2", 2))
    updated = await store.set_quarantine_state("q1", "approved")
    assert updated == dataclasses.replace(quarantined("q1", "h1", 1), state="approved")
    assert [q.id for q in await store.list_quarantine()] == ["q2"]
    assert [q.id for q in await store.list_quarantine("approved")] == ["q1"]
    assert [q.id for q in await store.list_quarantine(None)] == ["q1", "q2"]
    with pytest.raises(NotFound):
        await store.set_quarantine_state("ghost", "rejected")
    with pytest.raises(StoreError):
        await store.set_quarantine_state("q1", "maybe")


async def test_quarantine_reasons_count_the_held_records_per_reason_set(store: LessonStore) -> None:
    await store.quarantine(dataclasses.replace(quarantined("q1", "h1"), reasons=("b", "a")))
    await store.quarantine(dataclasses.replace(quarantined("q2", "h2"), reasons=("a", "b")))
    await store.quarantine(dataclasses.replace(quarantined("q3", "h3"), reasons=("a",)))
    await store.quarantine(dataclasses.replace(quarantined("q4", "h4"), reasons=("a",)))
    await store.set_quarantine_state("q4", "rejected")
    assert await store.quarantine_reasons("pending") == {("a", "b"): 2, ("a",): 1}
    assert await store.quarantine_reasons("rejected") == {("a",): 1}
    assert await store.quarantine_reasons("approved") == {}


async def test_a_quarantined_record_is_found_by_id_and_by_hash(store: LessonStore) -> None:
    await store.quarantine(quarantined("q1", "h1"))
    await store.quarantine(quarantined("q2", "h2"))
    await store.set_quarantine_state("q2", "approved")
    assert await store.get_quarantine("q1") == quarantined("q1", "h1")
    assert (await store.get_quarantine("q2")).state == "approved"  # any state
    assert await store.quarantine_of("h2") == await store.get_quarantine("q2")
    assert await store.quarantine_of("h3") is None
    with pytest.raises(NotFound):
        await store.get_quarantine("q3")
