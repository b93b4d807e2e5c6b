"""The ``LessonQueries`` port's contract (filtered lists, keyset scans, counts and the aggregates
over lessons): run against the in-memory and the Postgres adapter (the ``store`` fixture)."""

from __future__ import annotations

import dataclasses

import pytest

from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonStatus,
)
from lamarck.node.store.port import LessonStore
from tests.contract.contract_factories import (
    ALL,
    at,
    filter_fixture,
    lesson,
    outcome,
)


async def test_list_orders_by_confidence_then_newest(store: LessonStore) -> None:
    await filter_fixture(store)
    ids = [r.id for r in await store.list_lessons(LessonFilter())]
    assert ids == ["g-hi", "sit", "p1", "p2", "g-new", "g-old", "imp", "g-lo"]


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (LessonFilter(statuses=(LessonStatus.CLAIMED, LessonStatus.RETIRED)), {"claim", "ret"}),
        (LessonFilter(statuses=()), set()),
        (LessonFilter(scopes=("project:1", "project:2")), {"p1", "p2"}),
        (LessonFilter(category=Category.SITUATION), {"sit"}),
        (LessonFilter(operation="git push"), {"p2"}),
        (LessonFilter(min_confidence=0.6), {"g-hi", "sit", "p1", "p2"}),
        (LessonFilter(imported=True), {"imp"}),
        (
            LessonFilter(imported=False, scopes=("global",), min_confidence=0.5),
            {"g-hi", "sit", "g-new", "g-old"},
        ),
        (ALL, {"g-hi", "g-lo", "g-new", "g-old", "p1", "p2", "claim", "sit", "imp", "ret"}),
    ],
)
async def test_filters_select_in_the_store(
    store: LessonStore, flt: LessonFilter, expected: set[str]
) -> None:
    await filter_fixture(store)
    assert {r.id for r in await store.list_lessons(flt)} == expected
    assert await store.count_lessons(flt) == len(expected)


async def test_limit_and_offset_page_through_the_order(store: LessonStore) -> None:
    await filter_fixture(store)
    everything = [r.id for r in await store.list_lessons(LessonFilter())]
    page = await store.list_lessons(LessonFilter(limit=3, offset=2))
    assert [r.id for r in page] == everything[2:5]
    assert await store.count_lessons(LessonFilter(limit=3, offset=2)) == len(everything)


async def test_lessons_are_selected_by_context_values(store: LessonStore) -> None:
    here = {"domain": "python", "environment": "ci", "tools": ["pytest"]}
    await store.insert_lesson(lesson("here", context=here))
    await store.insert_lesson(lesson("other-env", context={**here, "environment": "laptop"}))
    await store.insert_lesson(lesson("no-env", context={"domain": "python"}))
    await store.insert_lesson(lesson("empty-env", context={"domain": "python", "environment": ""}))
    found = await store.list_lessons(
        LessonFilter(operation="pytest", context=(("domain", "python"), ("environment", "ci")))
    )
    assert [r.id for r in found] == ["here"]
    empty = await store.list_lessons(
        LessonFilter(context=(("domain", "python"), ("environment", "")))
    )
    assert [r.id for r in empty] == ["empty-env"]  # an empty value is a value, not "any"


async def test_scan_pages_every_matching_lesson_once_in_id_order(store: LessonStore) -> None:
    for n, lesson_id in enumerate(["e", "b", "d", "a", "c"]):
        await store.insert_lesson(lesson(lesson_id, confidence=0.1 * (n + 1)))
    await store.insert_lesson(lesson("r", status=LessonStatus.RETIRED))
    first = await store.scan_lessons(LessonFilter(), "", 2)
    assert [r.id for r in first] == ["a", "b"]  # id order, whatever the confidence
    assert first[0] == await store.get_lesson("a")  # whole rows
    # A row whose confidence moves between two pages is still read exactly once.
    await store.update_lesson(dataclasses.replace(await store.get_lesson("c"), confidence=0.99))
    pages = [[r.id for r in page] async for page in store.scan(LessonFilter(), 2)]
    assert pages == [["a", "b"], ["c", "d"], ["e"]]
    every = [r.id async for page in store.scan(LessonFilter(statuses=None), 4) for r in page]
    assert every == ["a", "b", "c", "d", "e", "r"]
    assert [r.id for r in await store.scan_all(LessonFilter(statuses=None), 4)] == every
    assert await store.scan_lessons(LessonFilter(), "e", 2) == []


async def test_lesson_facts_come_in_id_order_pages_of_every_status(store: LessonStore) -> None:
    for lesson_id in ("c", "a", "b"):
        await store.insert_lesson(
            lesson(lesson_id, created_at=at(1), context={"domain": "python"}, confidence=0.7)
        )
    await store.insert_lesson(lesson("d", status=LessonStatus.RETIRED))
    await store.insert_lesson(lesson("s", category=Category.SITUATION))  # not a lesson
    await store.mark_used(["b"], at(5))
    first = await store.lesson_facts("", 2)
    assert [f.id for f in first] == ["a", "b"]
    a, b = first
    assert (a.status, a.confidence, a.created_at) == (LessonStatus.ACTIVE, 0.7, at(1))
    assert a.context == {"domain": "python"} and a.category is Category.LESSON
    assert a.last_used is None and b.last_used == at(5)
    rest = await store.lesson_facts(first[-1].id, 2)
    assert [(f.id, f.status) for f in rest] == [
        ("c", LessonStatus.ACTIVE),
        ("d", LessonStatus.RETIRED),
    ]
    assert await store.lesson_facts("d", 2) == []
    # The same facts a whole row holds.
    [row] = await store.get_lessons(["c"])
    [facts] = [f for f in rest if f.id == "c"]
    assert (facts.status, facts.confidence, facts.created_at, facts.context) == (
        row.status,
        row.confidence,
        row.created_at,
        row.context,
    )


async def test_retired_evidence_ids_come_only_from_retired_lessons(store: LessonStore) -> None:
    await store.insert_lesson(lesson("kept", evidence=("o1",)))
    await store.insert_lesson(lesson("gone", evidence=("o2", "o3")))
    await store.insert_lesson(lesson("old", evidence=("o4",)))
    await store.supersede("old", lesson("new", evidence=("o4",)))
    await store.update_lesson(
        lesson(
            "gone", evidence=("o2", "o3"), status=LessonStatus.RETIRED, superseded_by="retired:u"
        )
    )
    assert await store.retired_evidence_ids() == {"o2", "o3"}


async def test_proven_operations_are_those_of_lessons_this_nodes_outcomes_back(
    store: LessonStore,
) -> None:
    """A local lesson with evidence, or an imported copy confirmed here, makes its operation
    proven; a local lesson without evidence, an unconfirmed copy, a lesson no longer active
    or a situation does not."""
    peer = "lmk1" + "a" * 32
    rows = [
        lesson("p1", operation="op:local", evidence=("o1",), content_hash="h1"),
        lesson(
            "p2", operation="op:confirmed", imported_from=peer, confirmations=1, content_hash="h2"
        ),
        lesson("n1", operation="op:bare", evidence=(), content_hash="h3"),
        lesson("n2", operation="op:copy", imported_from=peer, evidence=("o2",), content_hash="h4"),
        lesson(
            "n3",
            operation="op:retired",
            evidence=("o3",),
            status=LessonStatus.RETIRED,
            content_hash="h5",
        ),
        lesson(
            "n4",
            operation="op:situation",
            evidence=("o4",),
            category=Category.SITUATION,
            content_hash="h6",
        ),
        lesson("p3", operation="op:unasked", evidence=("o5",), content_hash="h7"),
    ]
    await store.insert_lessons(rows)
    asked = [r.operation for r in rows if r.operation != "op:unasked"] + ["op:none"]
    assert await store.proven_operations(asked) == {"op:local", "op:confirmed"}
    assert await store.proven_operations([]) == set()


async def test_project_scopes_are_those_of_own_lessons_and_outcomes(store: LessonStore) -> None:
    own, imported, worked = "ab" * 8, "cd" * 8, "ef" * 8
    await store.insert_lesson(lesson("l1", scope=f"project:{own}", content_hash="h1"))
    await store.insert_lesson(
        lesson(
            "l2", scope=f"project:{imported}", imported_from="lmk1" + "a" * 32, content_hash="h2"
        )
    )
    await store.insert_lesson(lesson("l3", content_hash="h3"))  # global: no project
    await store.insert_outcome(outcome("o1", project=worked))
    await store.insert_outcome(outcome("o2", project=own))
    # Team sharing declares what this node works on: not the projects of others' lessons.
    assert await store.project_scopes(10) == [f"project:{own}", f"project:{worked}"]
    assert await store.project_scopes(1) == [f"project:{own}"]
