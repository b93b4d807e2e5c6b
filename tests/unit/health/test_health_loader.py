"""``load_health_inputs``: the report reads the whole store, so it reads each lesson's facts,
never its whole row (the vector, the signed record and the provenance stay in the store)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lamarck.domain.rows import (
    Category,
    LessonEvent,
    LessonFilter,
    LessonRow,
    LessonStatus,
)
from lamarck.errors import StoreError
from lamarck.health.params import HealthParams
from lamarck.node.api import health_loader
from lamarck.node.api.health_loader import current_report, load_health_inputs
from lamarck.node.store.memory import InMemoryLessonStore
from tests.factories import lesson_row

T0 = datetime(2026, 5, 1, tzinfo=UTC)


class FactsOnly(InMemoryLessonStore):
    """A store that refuses to list whole rows: the health loader must not need them."""

    async def list_lessons(self, flt: LessonFilter) -> list[LessonRow]:
        raise StoreError("the health report listed whole rows", reason="whole_rows")


def _row(n: int, **fields: Any) -> LessonRow:
    return lesson_row(f"l{n:04d}", content=f"lesson {n}", operation="shell:pytest", at=T0, **fields)


async def test_every_lesson_is_loaded_once_from_its_facts_across_pages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(health_loader, "LESSON_PAGE", 3)
    store = FactsOnly()
    for n in range(7):
        await store.insert_lesson(_row(n, confidence=0.5 + n / 20))
    await store.insert_lesson(_row(99, category=Category.SITUATION))
    await store.insert_lesson(_row(98, status=LessonStatus.RETIRED))
    await store.append_events(
        [LessonEvent("l0001", T0 + timedelta(hours=1), "confirmed", "loop", 0.55, 0.6)]
    )
    inputs = await load_health_inputs(store, HealthParams())
    # Seven active and the retired one, each once; the situation is not a belief.
    assert sorted(r.id for r in inputs.lessons) == [*(f"l{n:04d}" for n in range(7)), "l0098"]
    assert [e.lesson_id for e in inputs.events] == ["l0001"]
    report = await current_report(store, HealthParams(), T0 + timedelta(days=1))
    assert report.retention.live == 7 and report.retention.retired == 1
