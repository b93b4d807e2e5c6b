"""``store_tallies``: the reputation table's accepted and refused records per source. The
accepted ones are counted by the store, never by listing every imported row."""

from __future__ import annotations

from datetime import UTC, datetime

from lamarck.domain.rows import LessonFilter, LessonRow, RejectionRow
from lamarck.errors import StoreError
from lamarck.node.api.reputation import store_tallies
from lamarck.node.store.memory import InMemoryLessonStore
from tests.factories import lesson_row

T0 = datetime(2026, 5, 1, tzinfo=UTC)
A, B = "lmk1" + "a" * 32, "lmk1" + "b" * 32


class CountsOnly(InMemoryLessonStore):
    """A store that refuses to list whole rows: counting must not need them."""

    async def list_lessons(self, flt: LessonFilter) -> list[LessonRow]:
        raise StoreError("the tallies listed whole rows", reason="whole_rows")


async def test_accepted_are_counted_per_source_and_refusals_per_reason() -> None:
    store = CountsOnly()
    for n, source in enumerate([A, A, B]):
        await store.insert_lesson(
            lesson_row(
                f"l{n}",
                at=T0,
                content=f"lesson {n}",
                operation="shell:pytest",
                confidence=0.5,
                imported_from=source,
                source_node_id=source,
            )
        )
    for n, reason in enumerate(["bad_signature", "bad_signature", "poisoned"]):
        await store.record_rejection(
            RejectionRow(source_node_id=B, reason=reason, content_hash=f"h{n}", received_at=T0)
        )
    tallies = await store_tallies(store, max_rows=10)
    assert tallies.accepted == {A: 2, B: 1}
    assert tallies.rejected == {B: {"bad_signature": 2, "poisoned": 1}}
    assert not tallies.truncated
    # The rejection log is read up to max_rows: beyond it the counts say "at least".
    assert (await store_tallies(store, max_rows=3)).truncated
