"""The ``LessonRows`` port's contract (a lesson row written, read back, updated, superseded and
deleted, with its events): run against the in-memory and the Postgres adapter (the ``store``
fixture)."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pytest

from lamarck.domain.rows import (
    LessonEvent,
    LessonRow,
    LessonStatus,
)
from lamarck.errors import ConflictError, NotFound, StoreError
from lamarck.node.store.port import LessonStore
from tests.contract.contract_factories import (
    ALL,
    DIM,
    at,
    full_lesson,
    lesson,
    vec,
)


def assert_same_embedding(got: LessonRow, want: LessonRow) -> None:
    """Embeddings are excluded from row equality; compare them separately."""
    assert got.embedding is not None and want.embedding is not None
    np.testing.assert_allclose(got.embedding, want.embedding, rtol=0, atol=1e-7)


async def test_every_lesson_field_round_trips(store: LessonStore) -> None:
    row = full_lesson()
    await store.insert_lesson(row)
    got = await store.get_lesson("full")
    assert got == row
    assert_same_embedding(got, row)


async def test_an_update_rewrites_access_and_recipients(store: LessonStore) -> None:
    await store.insert_lesson(lesson("shared"))
    row = await store.get_lesson("shared")
    await store.update_lesson(
        dataclasses.replace(
            row, access_level="private", recipients=("lmk1alice",), updated_at=at(9)
        )
    )
    got = await store.get_lesson("shared")
    assert (got.access_level, got.recipients, got.updated_at) == ("private", ("lmk1alice",), at(9))
    assert_same_embedding(got, row)  # an update without a new embedding keeps the old one


async def test_lesson_without_embedding_round_trips(store: LessonStore) -> None:
    await store.insert_lesson(lesson("bare", embedding=None))
    assert (await store.get_lesson("bare")).embedding is None


async def test_duplicate_lesson_id_conflicts(store: LessonStore) -> None:
    await store.insert_lesson(lesson("a"))
    with pytest.raises(ConflictError) as info:
        await store.insert_lesson(lesson("a", content="other"))
    assert info.value.reason == "duplicate_id"
    assert (await store.get_lesson("a")).content == "lesson a"


async def test_duplicate_content_hash_conflicts(store: LessonStore) -> None:
    await store.insert_lesson(lesson("a", content_hash="h1"))
    await store.insert_lesson(lesson("b", content_hash=None))
    await store.insert_lesson(lesson("c", content_hash=None))  # many local lessons: no hash
    with pytest.raises(ConflictError) as info:
        await store.insert_lesson(lesson("d", content_hash="h1"))
    assert info.value.reason == "duplicate_content_hash"


async def test_embedding_of_the_wrong_dimension_is_refused(store: LessonStore) -> None:
    with pytest.raises(StoreError) as info:
        await store.insert_lesson(lesson("a", embedding=np.ones(DIM + 1, dtype=np.float32)))
    assert info.value.reason == "dimension_mismatch"
    with pytest.raises(NotFound):
        await store.get_lesson("a")


async def test_bulk_insert_stores_all_rows(store: LessonStore) -> None:
    rows = [lesson(f"l{i}", confidence=i / 100, embedding=vec(1.0, i)) for i in range(50)]
    rows.append(full_lesson())
    assert await store.insert_lessons(rows) == 51
    assert await store.count_lessons(ALL) == 51
    assert await store.get_lesson("full") == full_lesson()
    assert await store.insert_lessons([]) == 0


async def test_bulk_insert_is_all_or_nothing(store: LessonStore) -> None:
    await store.insert_lesson(lesson("taken"))
    with pytest.raises(ConflictError):
        await store.insert_lessons([lesson("new1"), lesson("taken"), lesson("new2")])
    assert await store.count_lessons(ALL) == 1


async def test_get_lessons_keeps_input_order_and_skips_missing(store: LessonStore) -> None:
    await store.insert_lessons([lesson("a"), lesson("b"), lesson("c")])
    got = await store.get_lessons(["c", "missing", "a"])
    assert [r.id for r in got] == ["c", "a"]
    assert await store.get_lessons([]) == []


async def test_missing_lesson_is_not_found(store: LessonStore) -> None:
    with pytest.raises(NotFound):
        await store.get_lesson("nope")


async def test_update_replaces_state_and_keeps_embedding_when_unset(store: LessonStore) -> None:
    row = full_lesson()
    await store.insert_lesson(row)
    changed = dataclasses.replace(
        row,
        confidence=0.65,
        status=LessonStatus.ACTIVE,
        confirmations=3,
        updated_at=at(10),
        provenance=row.provenance[:1],
        context={"domain": "go"},
        situation=None,
        embedding=None,
    )
    await store.update_lesson(changed)
    got = await store.get_lesson("full")
    assert got == changed
    assert_same_embedding(got, row)


async def test_update_with_embedding_replaces_it(store: LessonStore) -> None:
    await store.insert_lesson(lesson("a"))
    await store.update_lesson(lesson("a", embedding=vec(0.0, 1.0)))
    assert_same_embedding(await store.get_lesson("a"), lesson("a", embedding=vec(0.0, 1.0)))


async def test_update_of_missing_lesson_is_not_found(store: LessonStore) -> None:
    with pytest.raises(NotFound):
        await store.update_lesson(lesson("ghost"))


async def test_supersede_links_both_rows(store: LessonStore) -> None:
    await store.insert_lesson(lesson("v1", evidence=("o1",)))
    await store.supersede("v1", lesson("v2", evidence=("o1",), updated_at=at(5)))
    old, new = await store.get_lessons(["v1", "v2"])
    assert old.superseded_by == "v2"
    assert old.status is LessonStatus.SUPERSEDED
    assert old.updated_at == at(5)
    assert new.supersedes == "v1"
    assert new.status is LessonStatus.ACTIVE


async def test_superseding_a_superseded_lesson_conflicts(store: LessonStore) -> None:
    await store.insert_lesson(lesson("v1"))
    await store.supersede("v1", lesson("v2"))
    with pytest.raises(ConflictError):
        await store.supersede("v1", lesson("v2b"))
    with pytest.raises(NotFound):
        await store.get_lesson("v2b")


async def test_superseding_a_retired_lesson_conflicts(store: LessonStore) -> None:
    await store.insert_lesson(lesson("v1"))
    retired = lesson("v1", status=LessonStatus.RETIRED, superseded_by="retired:user")
    await store.update_lesson(retired)
    with pytest.raises(ConflictError):
        await store.supersede("v1", lesson("v2"))


async def test_superseding_a_missing_lesson_is_not_found(store: LessonStore) -> None:
    with pytest.raises(NotFound):
        await store.supersede("ghost", lesson("v2"))
    with pytest.raises(NotFound):
        await store.get_lesson("v2")


async def test_concurrent_supersedes_of_one_lesson_let_exactly_one_win(
    store: LessonStore,
) -> None:
    await store.insert_lesson(lesson("v1"))
    results = await asyncio.gather(
        *(store.supersede("v1", lesson(f"edit{i}")) for i in range(4)), return_exceptions=True
    )
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, ConflictError) for r in results if r is not None)


async def test_history_is_the_whole_chain_oldest_first_from_any_member(
    store: LessonStore,
) -> None:
    await store.insert_lesson(lesson("v1"))
    await store.insert_lesson(lesson("unrelated"))
    await store.supersede("v1", lesson("v2", created_at=at(1)))
    await store.supersede("v2", lesson("v3", created_at=at(2)))
    await store.update_lesson(
        dataclasses.replace(
            await store.get_lesson("v3"),
            status=LessonStatus.RETIRED,
            superseded_by="retired:user",
        )
    )
    for member in ("v1", "v2", "v3"):
        assert [r.id for r in await store.history(member)] == ["v1", "v2", "v3"]
    assert [r.id for r in await store.history("unrelated")] == ["unrelated"]
    with pytest.raises(NotFound):
        await store.history("ghost")


async def test_hard_delete_removes_the_lesson(store: LessonStore) -> None:
    await store.insert_lesson(full_lesson())
    await store.hard_delete("full")
    with pytest.raises(NotFound):
        await store.get_lesson("full")
    assert await store.find_by_content_hash("a" * 64) is None
    with pytest.raises(NotFound):
        await store.hard_delete("full")


async def test_insert_and_update_append_their_events_with_the_row(store: LessonStore) -> None:
    imported = LessonEvent("l1", at(0), "imported", "lmk1src", None, 0.5)
    version = LessonEvent("l1", at(1), "version", "lmk1src", 0.5, 0.6, version=2)
    await store.insert_lesson(lesson("l1"), [imported])
    await store.update_lesson(lesson("l1", confidence=0.6, updated_at=at(1)), [version])
    assert await store.lesson_events(["l1"]) == [imported, version]
    # A refused write appends nothing.
    with pytest.raises(ConflictError):
        await store.insert_lesson(lesson("l1"), [LessonEvent("l1", at(2), "created", "loop")])
    with pytest.raises(NotFound):
        await store.update_lesson(lesson("nope"), [LessonEvent("nope", at(2), "edited", "x")])
    assert await store.lesson_events(["l1", "nope"]) == [imported, version]


async def test_hard_delete_drops_the_lessons_events(store: LessonStore) -> None:
    await store.insert_lesson(lesson("l1"))
    await store.append_events([LessonEvent("l1", at(0), "created", "loop", None, 0.5)])
    await store.hard_delete("l1")
    assert await store.lesson_events(["l1"]) == []
