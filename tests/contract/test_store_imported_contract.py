"""The ``ImportedLessons`` port's contract (what import and sharing read about lessons from peers):
run against the in-memory and the Postgres adapter (the ``store`` fixture)."""

from __future__ import annotations

from lamarck.domain.rows import (
    LessonFilter,
    LessonRow,
    LessonStatus,
)
from lamarck.node.store.port import LessonStore
from tests.contract.contract_factories import (
    at,
    full_lesson,
    lesson,
)


async def test_find_by_content_hash(store: LessonStore) -> None:
    await store.insert_lesson(full_lesson())
    found = await store.find_by_content_hash("a" * 64)
    assert found is not None and found.id == "full"
    assert await store.find_by_content_hash("b" * 64) is None


async def test_imported_records_come_in_id_order_pages(store: LessonStore) -> None:
    def imported(lesson_id: str, **fields: object) -> LessonRow:
        base: dict[str, object] = {
            "imported_from": "lmk1" + "a" * 32,
            "signed_record": f'{{"id":"{lesson_id}"}}'.encode(),
            "content_hash": f"hash-{lesson_id}",
        }
        return lesson(lesson_id, **{**base, **fields})

    for lesson_id in ("c", "a", "b"):
        await store.insert_lesson(imported(lesson_id, created_at=at(1)))
    await store.insert_lesson(lesson("own"))  # not imported
    await store.insert_lesson(imported("d", signed_record=None))  # nothing to index
    first = await store.imported_records("", 2)
    assert [(r.lesson_id, r.content_hash) for r in first] == [("a", "hash-a"), ("b", "hash-b")]
    assert first[0].signed_record == b'{"id":"a"}' and first[0].created_at == at(1)
    rest = await store.imported_records(first[-1].lesson_id, 2)
    assert [r.lesson_id for r in rest] == ["c"]


async def test_imported_lessons_are_counted_per_source(store: LessonStore) -> None:
    def imported(lesson_id: str, source: str | None, **fields: object) -> LessonRow:
        return lesson(lesson_id, imported_from="lmk1" + "v" * 32, source_node_id=source, **fields)

    await store.insert_lesson(imported("a1", "lmk1" + "a" * 32))
    await store.insert_lesson(imported("a2", "lmk1" + "a" * 32, status=LessonStatus.SUPERSEDED))
    await store.insert_lesson(imported("b1", "lmk1" + "b" * 32))
    await store.insert_lesson(imported("x", None))  # no source: not counted
    await store.insert_lesson(lesson("own", source_node_id="lmk1" + "c" * 32))  # not imported
    assert await store.imported_per_source() == {"lmk1" + "a" * 32: 2, "lmk1" + "b" * 32: 1}


async def test_import_sources_and_the_source_and_hash_filters(store: LessonStore) -> None:
    a, b, c = ("lmk1" + x * 32 for x in "abc")

    def imported(lesson_id: str, via: str, **fields: object) -> LessonRow:
        return lesson(lesson_id, imported_from=via, content_hash=f"h-{lesson_id}", **fields)

    await store.insert_lesson(imported("a1", a))
    await store.insert_lesson(imported("a2", a, status=LessonStatus.CLAIMED))
    await store.insert_lesson(imported("b1", b, status=LessonStatus.RETIRED))
    await store.insert_lesson(imported("c1", c))
    await store.insert_lesson(lesson("own"))  # local: no source
    live = (LessonStatus.ACTIVE, LessonStatus.CLAIMED)
    assert await store.import_sources(live) == {a, c}
    assert await store.import_sources([LessonStatus.RETIRED]) == {b}
    assert await store.import_sources([LessonStatus.SUPERSEDED]) == set()
    by_source = LessonFilter(statuses=live, sources=(a, b))
    assert sorted(r.id for r in await store.list_lessons(by_source)) == ["a1", "a2"]
    assert [r.id for page in [await store.scan_lessons(by_source, "", 10)] for r in page] == [
        "a1",
        "a2",
    ]
    by_hash = LessonFilter(statuses=None, content_hashes=("h-b1", "h-c1", "h-none"))
    assert sorted(r.id for r in await store.list_lessons(by_hash)) == ["b1", "c1"]
    assert await store.list_lessons(LessonFilter(sources=())) == []
