"""Contract: ``LessonFilter.content`` selects the exact content, in both adapters (the
Remember dedupe lookup is one such query with ``limit=1``)."""

from __future__ import annotations

from lamarck.domain.rows import (
    LessonFilter,
    LessonStatus,
)
from lamarck.node.store.port import LessonStore
from tests.contract.contract_factories import lesson


async def test_content_filter_finds_only_the_same_claim_in_its_scope_and_operation(
    store: LessonStore,
) -> None:
    """Same words in another scope, operation or status, or other words, never match."""
    claim = "Run pytest from the repo root"
    await store.insert_lessons(
        [
            lesson("a", content=claim, status=LessonStatus.CLAIMED, scope="project:aa"),
            lesson("b", content=claim + ".", status=LessonStatus.CLAIMED, scope="project:aa"),
            lesson("c", content=claim, status=LessonStatus.CLAIMED, scope="project:bb"),
            lesson("d", content=claim, operation="make", scope="project:aa"),
            lesson("e", content=claim, status=LessonStatus.RETIRED, scope="project:aa"),
        ]
    )
    found = await store.list_lessons(
        LessonFilter(
            statuses=(LessonStatus.CLAIMED, LessonStatus.ACTIVE),
            scopes=("project:aa",),
            operation="pytest",
            content=claim,
            limit=1,
        )
    )
    assert [r.id for r in found] == ["a"]
    assert await store.count_lessons(LessonFilter(statuses=None, content=claim)) == 4
