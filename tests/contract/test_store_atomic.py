"""``LessonStore.atomic``: a unit of work commits whole or not at all, on every adapter."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lamarck.domain.rows import (
    LessonEvent,
    OutcomeRow,
)
from lamarck.errors import ConflictError
from lamarck.node.store.port import LessonStore
from tests.factories import lesson_row

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DIM = 8


class _Crash(RuntimeError):
    """Stands in for a process dying in the middle of a unit of work."""


def _outcome(outcome_id: str) -> OutcomeRow:
    return OutcomeRow(
        id=outcome_id,
        session_id="s1",
        turn_index=1,
        project="project:ab12",
        passed=True,
        claim_ok=True,
        created_at=T0,
        record={"n": 1},
    )


async def test_a_failed_unit_leaves_nothing_of_its_writes(store: LessonStore) -> None:
    with pytest.raises(_Crash):
        async with store.atomic():
            await store.insert_outcome(_outcome("o1"))
            await store.insert_lesson(
                lesson_row("l1", at=T0, dim=DIM),
                [LessonEvent(lesson_id="l1", kind="created", at=T0, actor="loop")],
            )
            raise _Crash("killed between two writes")
    assert await store.existing_outcome_ids(["o1"]) == set()
    assert await store.get_lessons(["l1"]) == []
    assert await store.lesson_events(["l1"]) == []


async def test_a_unit_that_ends_commits_every_write_and_reads_its_own(store: LessonStore) -> None:
    async with store.atomic():
        await store.insert_outcome(_outcome("o1"))
        await store.insert_lesson(lesson_row("l1", at=T0, dim=DIM))
        async with store.atomic():  # a nested unit joins the outer one
            await store.insert_lesson(lesson_row("l2", at=T0, dim=DIM))
        assert [r.id for r in await store.get_lessons(["l1", "l2"])] == ["l1", "l2"]
    assert await store.existing_outcome_ids(["o1"]) == {"o1"}
    assert {r.id for r in await store.get_lessons(["l1", "l2"])} == {"l1", "l2"}


async def test_a_duplicate_inside_a_unit_undoes_the_unit(store: LessonStore) -> None:
    await store.insert_outcome(_outcome("o1"))
    with pytest.raises(ConflictError):
        async with store.atomic():
            await store.insert_lesson(lesson_row("l1", at=T0, dim=DIM))
            await store.insert_outcome(_outcome("o1"))
    assert await store.get_lessons(["l1"]) == []
