"""The ``OutcomeStore`` port's contract (outcomes stored, read back, listed newest first): run
against the in-memory and the Postgres adapter (the ``store`` fixture)."""

from __future__ import annotations

import pytest

from lamarck.errors import ConflictError, NotFound
from lamarck.node.store.port import LessonStore
from tests.contract.contract_factories import (
    at,
    outcome,
)


async def test_outcome_round_trips_and_duplicate_id_conflicts(store: LessonStore) -> None:
    await store.insert_outcome(outcome("o1"))
    assert await store.get_outcome("o1") == outcome("o1")
    with pytest.raises(ConflictError):
        await store.insert_outcome(outcome("o1", passed=False))
    assert (await store.get_outcome("o1")).passed is True


async def test_missing_outcome_is_not_found(store: LessonStore) -> None:
    with pytest.raises(NotFound):
        await store.get_outcome("nope")


async def test_existing_outcome_ids_is_the_stored_subset(store: LessonStore) -> None:
    await store.insert_outcome(outcome("o1"))
    await store.insert_outcome(outcome("o2"))
    assert await store.existing_outcome_ids(["o1", "planted", "o2"]) == {"o1", "o2"}
    assert await store.existing_outcome_ids([]) == set()


async def test_outcomes_list_newest_first_with_limit_and_offset(store: LessonStore) -> None:
    for i in range(5):
        await store.insert_outcome(outcome(f"o{i}", at(i)))
    assert [o.id for o in await store.list_outcomes()] == ["o4", "o3", "o2", "o1", "o0"]
    assert [o.id for o in await store.list_outcomes(limit=2, offset=1)] == ["o3", "o2"]
