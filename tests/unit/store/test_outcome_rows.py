"""RecordOutcome's reply is built from the rows the outcome wrote (``OutcomeResult.rows``), not
read again: every row given there must be exactly the row the store now holds, and a lesson a
settlement or a supersede changed after it was written must not be given (the reply reads it)."""

from __future__ import annotations

import dataclasses

from lamarck.domain.rows import LessonRow
from lamarck.learning.scopes import project_scope
from lamarck.node.lessons.core import OutcomeResult
from lamarck.reputation.events import EventKind
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation
from tests.unit.store.lesson_service_harness import P1, Harness

SCOPE = project_scope(P1)
OP = "shell:uv sync"


def _bare(row: LessonRow) -> LessonRow:
    # The vector is written behind the reply (or kept by the store): not part of the reply.
    return dataclasses.replace(row, embedding=None)


async def _rows_are_stored(h: Harness, result: OutcomeResult) -> None:
    changed = {c.lesson_id for c in result.changes}
    assert set(result.rows) <= changed
    stored = {r.id: r for r in await h.store.get_lessons(list(result.rows))}
    for lesson_id, row in result.rows.items():
        assert _bare(row) == _bare(stored[lesson_id]), lesson_id


async def test_a_taught_lesson_is_given_as_stored() -> None:
    h = Harness()
    o = h.outcome(
        "s1", [("shell:pytest tests/", "failed", "suite"), ("shell:pytest", "ok", "suite")]
    )
    result = await h.service.record_outcome(o)
    [created] = result.ids("created")
    assert created in result.rows
    await _rows_are_stored(h, result)


async def test_confirmed_and_contradicted_lessons_are_given_as_stored() -> None:
    h = Harness()
    seed = h.outcome("seed", [("shell:true", "ok", "x")])
    await h.service.record_outcome(seed)
    good = await h.service.write_lesson("Run uv sync first.", OP, SCOPE, evidence=[seed.id])
    bad = await h.service.write_lesson(
        "Run make deps first.", "shell:make deps", SCOPE, evidence=[seed.id]
    )
    assert good is not None and bad is not None
    o = h.outcome(
        "s2", [(OP, "ok", "deps"), ("shell:make deps", "failed", "deps")], in_play=[good.id, bad.id]
    )
    result = await h.service.record_outcome(o)
    assert result.ids("confirmed") == [good.id] and result.ids("contradicted") == [bad.id]
    assert {good.id, bad.id} <= set(result.rows)
    await _rows_are_stored(h, result)


async def test_settled_lessons_are_left_to_be_read() -> None:
    h = Harness()
    seed = h.outcome("seed", [("shell:true", "ok", "x")])
    await h.service.record_outcome(seed)
    yes = await h.service.write_lesson(
        "`uv sync` works with the lockfile in this repo", OP, SCOPE, evidence=[seed.id]
    )
    no = await h.service.write_lesson(
        "`uv sync` does not work with the lockfile in this repo", OP, SCOPE, evidence=[seed.id]
    )
    assert yes is not None and no is not None
    o = h.outcome("S", [(OP, "ok", "deps")], in_play=[yes.id, no.id])
    result = await h.service.record_outcome(o)
    assert result.ids("superseded") == [no.id]
    assert no.id not in result.rows and yes.id not in result.rows
    await _rows_are_stored(h, result)


async def test_a_reversal_settled_against_the_lesson_it_reverses_is_left_to_be_read() -> None:
    # The new lesson is written, then its settlement with the lesson it reverses changes it
    # again: the row as first written must not be given.
    h = Harness()
    first = h.outcome("s1", [("shell:make a", "failed", "t"), ("shell:make b", "ok", "t")])
    [old] = (await h.service.record_outcome(first)).ids("created")
    again = h.outcome("s2", [("shell:make b", "failed", "t"), ("shell:make a", "ok", "t")])
    result = await h.service.record_outcome(again)
    [new] = result.ids("created")
    assert old in {c.lesson_id for c in result.changes}  # settled (or superseded) by it
    assert old not in result.rows and new not in result.rows
    await _rows_are_stored(h, result)


async def test_an_imported_lesson_disproved_and_reversed_by_one_outcome_is_charged_once() -> None:
    # The outcome contradicts the imported lesson (attribution) and teaches its reversal,
    # which then settles against it: one fact about one record, one event, one step down.
    h = Harness()
    first = h.outcome("s1", [("shell:make a", "failed", "t"), ("shell:make b", "ok", "t")])
    [old] = (await h.service.record_outcome(first)).ids("created")
    source = "lmk1" + "s" * 32
    row = await h.store.get_lesson(old)
    await h.store.update_lesson(
        dataclasses.replace(
            row, imported_from=source, original_confidence=0.7, content_hash="ab" * 32
        )
    )
    again = h.outcome(
        "s2", [("shell:make b", "failed", "t"), ("shell:make a", "ok", "t")], in_play=[old]
    )
    # A clock that moves between reads, as a real one does (the two paths read it apart).
    h.clock.now = lambda: h.clock.advance(0.004)  # type: ignore[method-assign]
    result = await h.service.record_outcome(again)
    contradicted = [e for e in result.reality if e.kind is EventKind.LESSON_CONTRADICTED]
    assert contradicted and {e.record_hash for e in contradicted} == {"ab" * 32}
    book = InMemoryReputation(ReputationParams(), h.clock)
    for event in result.reality:
        book.emit(event)
    assert book.explain(source).counts[EventKind.LESSON_CONTRADICTED] == 1
