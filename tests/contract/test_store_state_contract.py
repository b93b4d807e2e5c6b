"""The ``StateStore`` port's contract (the node's JSON documents under a key): run against the in-
memory and the Postgres adapter (the ``store`` fixture)."""

from __future__ import annotations

import pytest

from lamarck.errors import StoreError
from lamarck.node.store.port import LessonStore


async def test_state_documents_round_trip_and_replace(store: LessonStore) -> None:
    """Nothing stored reads ``None``; a put replaces; keys are independent."""
    assert await store.get_state("variables") is None
    doc = {"version": 1, "variables": {"domain": {"correct": 1, "incorrect": 3}}}
    await store.put_state("variables", doc)
    assert await store.get_state("variables") == doc
    await store.put_state("variables", {"version": 1, "variables": {}})
    await store.put_state("other", {"n": [1, 2.5, "x", None, True]})
    assert await store.get_state("variables") == {"version": 1, "variables": {}}
    assert await store.get_state("other") == {"n": [1, 2.5, "x", None, True]}


async def test_a_state_document_is_a_copy(store: LessonStore) -> None:
    """Mutating what was put or what was read never changes what the store holds."""
    doc = {"variables": {"domain": {"correct": 1}}}
    await store.put_state("k", doc)
    doc["variables"]["domain"]["correct"] = 99
    read = await store.get_state("k")
    assert read is not None
    read["variables"] = {}
    assert await store.get_state("k") == {"variables": {"domain": {"correct": 1}}}


async def test_a_state_document_json_cannot_hold_is_refused(store: LessonStore) -> None:
    """A non-JSON value is a ``StoreError`` (``invalid_value``) and stores nothing."""
    with pytest.raises(StoreError) as err:
        await store.put_state("k", {"bad": object()})
    assert err.value.reason == "invalid_value"
    assert await store.get_state("k") is None


async def test_state_rolls_back_with_a_failed_unit_of_work(store: LessonStore) -> None:
    """A state write inside ``atomic`` commits or rolls back with the rest of the block."""
    await store.put_state("k", {"v": 1})
    with pytest.raises(RuntimeError):
        async with store.atomic():
            await store.put_state("k", {"v": 2})
            raise RuntimeError("boom")
    assert await store.get_state("k") == {"v": 1}
