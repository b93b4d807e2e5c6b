"""The recall index's pure core: what it holds, what a touch and a read do, how it ranks.

The adapter's side (every write path against a real Postgres) is
``tests/contract/test_postgres_recall_index.py``.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonRow,
    LessonStatus,
    RelevanceFloor,
)
from lamarck.errors import ConfigError
from lamarck.node.store.recall_index import (
    RecallIndex,
    RecallIndexParams,
    RecallIndexState,
    RecallIndexStatus,
    covers,
    exact_top_k,
    is_covered,
)
from tests.factories import lesson_row, unit_vector

DIM = 4
T0 = datetime(2026, 3, 1, tzinfo=UTC)
RECALL = LessonFilter(statuses=(LessonStatus.ACTIVE,), scopes=("global",), category=Category.LESSON)


def row(lesson_id: str, *values: float, **fields: object) -> LessonRow:
    """A lesson whose content is its id, its embedding starting with ``values``."""
    vector = unit_vector(DIM, *values) if values else np.zeros(DIM, dtype=np.float32)
    return lesson_row(
        lesson_id,
        **{"content": lesson_id, "operation": "op", "at": T0, "embedding": vector, **fields},
    )


def ids(index: RecallIndex, *query: float, flt: LessonFilter = RECALL, k: int = 10) -> list[str]:
    q = np.zeros(DIM, dtype=np.float32)
    q[: len(query)] = query
    return [h.lesson.id for h in index.search(q, k, flt, None)]


def loaded(*rows: LessonRow, max_rows: int = 100, rows_held: int = 100) -> RecallIndex:
    index = RecallIndex(RecallIndexParams(max_rows=max_rows, rows_held=rows_held), DIM)
    index.load(rows, index.generation)
    return index


def test_params_refuse_what_no_index_could_use() -> None:
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(ConfigError, match="max_rows"):
            RecallIndexParams(max_rows=bad)  # type: ignore[arg-type]
    assert not RecallIndex(RecallIndexParams(max_rows=0), DIM).enabled
    for field, bad in (("rows_held", -1), ("shortlist", 0), ("rescore_extra", 1.0)):
        with pytest.raises(ConfigError, match=field):
            RecallIndexParams(**{field: bad})
    for margin in (-0.1, 1.0, "0.1"):
        with pytest.raises(ConfigError, match="rescore_margin"):
            RecallIndexParams(rescore_margin=margin)  # type: ignore[arg-type]


def test_it_holds_recallable_lessons_with_a_vector_and_answers_only_their_filters() -> None:
    assert is_covered(row("a", 1))
    assert is_covered(row("c", 1, status=LessonStatus.CLAIMED))
    assert not is_covered(row("r", 1, status=LessonStatus.RETIRED))
    assert not is_covered(row("s", 1, category=Category.SITUATION))
    assert not is_covered(row("n", embedding=None))
    assert covers(RECALL)
    assert covers(dataclasses.replace(RECALL, scopes=None))
    assert not covers(dataclasses.replace(RECALL, statuses=None))
    assert not covers(dataclasses.replace(RECALL, statuses=(LessonStatus.SUPERSEDED,)))
    assert not covers(dataclasses.replace(RECALL, category=None))
    assert not covers(dataclasses.replace(RECALL, min_confidence=0.3))
    assert not covers(dataclasses.replace(RECALL, tags=("x",)))


def test_search_filters_by_status_and_scope_and_ranks_by_cosine() -> None:
    index = loaded(
        row("near", 1, 0.1),
        row("far", 0.2, 1),
        row("claim", 1, status=LessonStatus.CLAIMED),
        row("elsewhere", 1, scope="project:x"),
        row("retired", 1, status=LessonStatus.RETIRED),
    )
    assert len(index) == 4  # the retired row is not held
    assert ids(index, 1) == ["near", "far"]
    with_claims = dataclasses.replace(RECALL, statuses=(LessonStatus.ACTIVE, LessonStatus.CLAIMED))
    assert ids(index, 1, flt=with_claims) == ["claim", "near", "far"]
    both = dataclasses.replace(RECALL, scopes=("global", "project:x"))
    assert ids(index, 1, flt=both) == ["elsewhere", "near", "far"]
    assert ids(index, 1, flt=dataclasses.replace(RECALL, scopes=("project:none",))) == []


def test_a_touched_row_stays_dirty_until_a_read_taken_after_the_touch() -> None:
    index = loaded(row("a", 1))
    index.touch(["a"])
    snapshot = index.dirty()
    index.touch(["a"])  # written again while the read was in flight
    index.refresh(snapshot, [row("a", 0, 1)])
    assert index.dirty() == {"a": index.generation}
    index.refresh(index.dirty(), [row("a", 0, 1)])
    assert index.dirty() == {}
    assert ids(index, 0, 1) == ["a"]


def test_a_read_drops_deleted_and_no_longer_recallable_rows_and_keeps_one_block() -> None:
    index = loaded(row("a", 1), row("b", 1, 0.5), row("c", 1, 1))
    index.touch(["a", "b"])
    # "a" was deleted (no row), "b" retired: "c" moves into a freed place.
    index.refresh(index.dirty(), [row("b", 1, status=LessonStatus.RETIRED)])
    assert len(index) == 1
    assert ids(index, 1) == ["c"]
    index.touch(["d"])
    index.refresh(index.dirty(), [row("d", 1)])
    assert ids(index, 1) == ["d", "c"]


def test_a_load_keeps_rows_touched_while_it_read() -> None:
    index = RecallIndex(RecallIndexParams(max_rows=10), DIM)
    index.touch(["old"])
    since = index.generation
    index.touch(["during"])
    index.load([row("old", 1), row("during", 1)], since)
    assert index.loaded and set(index.dirty()) == {"during"}


def test_use_marks_apply_in_place_as_the_statement_does() -> None:
    index = loaded(row("a", 1, last_used=T0 + timedelta(days=2), use_count=3))
    index.apply_uses({"a": 2, "gone": 1}, {"a": T0 + timedelta(days=1), "gone": T0})
    q = np.ones(DIM, dtype=np.float32)
    (hit,) = index.search(q, 1, RECALL, None)
    assert hit.lesson.use_count == 5
    assert hit.lesson.last_used == T0 + timedelta(days=2)  # the latest use wins


def test_outgrowing_max_rows_turns_it_off_for_good() -> None:
    index = loaded(row("a", 1), row("b", 1), max_rows=2)
    assert index.enabled
    index.touch(["c"])
    index.refresh(index.dirty(), [row("c", 1)])
    assert not index.enabled and len(index) == 0
    index.touch(["d"])
    assert index.dirty() == {}


def test_its_state_says_where_recall_searches() -> None:
    """What ``lamarck node status`` shows: not read, on over n lessons, outgrown, off."""
    index = RecallIndex(RecallIndexParams(max_rows=2), DIM)
    assert index.state == RecallIndexState(RecallIndexStatus.NOT_READ, 0, 2)
    index.load([row("a", 1)], index.generation)
    assert index.state == RecallIndexState(RecallIndexStatus.ON, 1, 2)
    index.reset()  # a reconnect: read again on the next search
    assert index.state.status is RecallIndexStatus.NOT_READ
    index.load([row("a", 1), row("b", 1), row("c", 1)], index.generation)
    assert index.state == RecallIndexState(RecallIndexStatus.OUTGROWN, 0, 2)
    off = RecallIndex(RecallIndexParams(max_rows=0), DIM)
    assert off.state == RecallIndexState(RecallIndexStatus.OFF, 0, 0)


def test_exact_top_k_breaks_ties_by_id_drops_non_finite_and_applies_the_floor() -> None:
    sims = np.array([0.5, 0.9, np.nan, 0.9, 0.2, 0.5], dtype=np.float32)
    names = ["f", "e", "d", "c", "b", "a"]
    assert exact_top_k(sims, names, 3, None) == [
        (3, pytest.approx(0.9)),
        (1, pytest.approx(0.9)),
        (5, pytest.approx(0.5)),
    ]
    assert [i for i, _ in exact_top_k(sims, names, 10, None)] == [3, 1, 5, 0, 4]
    # The floor: at least 0.3 and at least 0.6 of the best (0.9): 0.54.
    assert [i for i, _ in exact_top_k(sims, names, 10, RelevanceFloor(0.3, 0.6))] == [3, 1]
    assert exact_top_k(np.array([np.nan], dtype=np.float32), ["x"], 1, None) == []
    assert exact_top_k(sims, names, 0, None) == []


def test_a_bulk_write_makes_it_read_everything_again_and_a_read_it_outran_is_dropped() -> None:
    index = loaded(row("a", 1), rows_held=3)
    since = index.generation  # a load begins reading here...
    index.touch(["b", "c", "d", "e"])  # ...and a bulk copy lands meanwhile
    assert not index.loaded and index.dirty() == {}
    index.load([row("a", 1)], since)  # what that load read may predate the copy
    assert not index.loaded
    index.load([row("a", 1), row("b", 1)], index.generation)
    assert index.loaded and ids(index, 1) == ["a", "b"]


def test_a_row_with_another_embedding_keeps_every_other_field() -> None:
    row = lesson_row(embedding=unit_vector(4, 1.0), tags=("a", "b"), confidence=0.7)
    vector = unit_vector(4, 0.0, 1.0)
    moved = row.with_embedding(vector)
    assert moved == dataclasses.replace(row, embedding=vector)  # embedding is not compared
    assert moved.embedding is vector
    assert row.embedding is not None and row.embedding[0] == 1.0  # the original is unchanged
    assert {
        f.name: getattr(moved, f.name) for f in dataclasses.fields(row) if f.name != "embedding"
    } == {f.name: getattr(row, f.name) for f in dataclasses.fields(row) if f.name != "embedding"}
    assert row.with_embedding(None).embedding is None
