"""The recall index's compact form (past ``rows_held`` lessons): sign bits, int8 re-score,
then the winners' rows scored exactly.

The adapter's side (reading the winners' rows by id) is
``tests/contract/test_postgres_recall_index.py``.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonRow,
    LessonStatus,
    RelevanceFloor,
    ScoredLesson,
)
from lamarck.node.store.recall_index import (
    RecallIndex,
    RecallIndexParams,
    VectorRow,
    exact_top_k,
)

DIM = 48
T0 = datetime(2026, 3, 1, tzinfo=UTC)
RECALL = LessonFilter(
    statuses=(LessonStatus.ACTIVE, LessonStatus.CLAIMED), category=Category.LESSON
)


def lesson(lesson_id: str, vector: npt.NDArray[np.float32], **fields: object) -> LessonRow:
    base = LessonRow(
        id=lesson_id,
        content=lesson_id,
        operation="op",
        scope="global",
        status=LessonStatus.ACTIVE,
        confidence=0.5,
        created_at=T0,
        updated_at=T0,
        embedding=vector,
    )
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def clustered(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    """Vectors in a few dozen clusters around a shared offset, as sentence vectors are."""
    offset = rng.normal(size=DIM)
    centres = rng.normal(size=(40, DIM)) + 2.0 * offset
    picks = rng.integers(0, len(centres), size=n)
    return (centres[picks] + 0.6 * rng.normal(size=(n, DIM))).astype(np.float32)


def compact_search(
    index: RecallIndex,
    rows: dict[str, LessonRow],
    q: npt.NDArray[np.float32],
    k: int,
    flt: LessonFilter = RECALL,
    floor: RelevanceFloor | None = None,
) -> list[ScoredLesson]:
    """What the adapter does: the shortlist's rows read by id, then ranked."""
    wanted = index.shortlist(q, k, flt, floor)
    return index.rank(q, [rows[i] for i in wanted if i in rows], k, flt, floor)


def exact_ids(rows: list[LessonRow], q: npt.NDArray[np.float32], k: int) -> list[str]:
    matrix = np.stack([np.asarray(r.embedding) for r in rows])
    sims = (matrix @ q / np.linalg.norm(matrix, axis=1) / np.linalg.norm(q)).astype(np.float32)
    return [rows[i].id for i, _ in exact_top_k(sims, [r.id for r in rows], k, None)]


def test_compact_search_agrees_with_exact_top_k_on_a_seeded_set() -> None:
    rng = np.random.default_rng(2024)
    vectors = clustered(rng, 4000)
    rows = [lesson(f"l{i:05d}", v) for i, v in enumerate(vectors)]
    by_id = {r.id: r for r in rows}
    params = RecallIndexParams(max_rows=10_000, rows_held=100, shortlist=200)
    index = RecallIndex(params, DIM)
    index.load([VectorRow(r.id, r.status, r.scope, vectors[i]) for i, r in enumerate(rows)], 0)
    assert index.compact and not index.holds_rows and len(index) == 4000
    got = total = 0
    for qi in range(60):
        q = (vectors[rng.integers(0, 4000)] + 0.5 * rng.normal(size=DIM)).astype(np.float32)
        found = compact_search(index, by_id, q, 5)
        truth = exact_ids(rows, q, 5)
        total += 5
        got += len({h.lesson.id for h in found} & set(truth))
        # The scores are exact: the rows' own float vectors, not the int8 ones.
        for hit in found:
            v = np.asarray(hit.lesson.embedding)
            want = float(v @ q / np.linalg.norm(v) / np.linalg.norm(q))
            assert abs(hit.similarity - want) < 1e-5, qi
    assert got / total >= 0.95


def test_past_rows_held_it_lets_the_rows_go_and_keeps_answering() -> None:
    rng = np.random.default_rng(11)
    vectors = clustered(rng, 40)
    rows = [lesson(f"l{i:02d}", v) for i, v in enumerate(vectors)]
    index = RecallIndex(RecallIndexParams(max_rows=100, rows_held=30), DIM)
    index.load(rows[:30], 0)
    assert index.holds_rows
    q = vectors[35]
    assert [h.lesson.id for h in index.search(q, 3, RECALL, None)] == exact_ids(rows[:30], q, 3)
    small = index.memory_bytes()
    index.touch([r.id for r in rows[30:]])
    index.refresh(index.dirty(), rows[30:])
    assert index.compact and len(index) == 40 and index.memory_bytes() < small
    assert index.search(q, 3, RECALL, None) == []  # the adapter asks shortlist/rank now
    by_id = {r.id: r for r in rows}
    assert [h.lesson.id for h in compact_search(index, by_id, q, 3)] == exact_ids(rows, q, 3)
    # A reset forgets the form: the next load decides it again by size.
    index.reset()
    index.load(rows[:10], index.generation)
    assert index.holds_rows


def test_compact_search_keeps_filters_the_floor_and_rows_as_read_now() -> None:
    rng = np.random.default_rng(5)
    vectors = clustered(rng, 60)
    rows = [
        lesson(
            f"l{i:02d}",
            v,
            scope="project:x" if i % 3 == 0 else "global",
            status=LessonStatus.CLAIMED if i % 5 == 0 else LessonStatus.ACTIVE,
        )
        for i, v in enumerate(vectors)
    ]
    by_id = {r.id: r for r in rows}
    index = RecallIndex(RecallIndexParams(max_rows=100, rows_held=10, shortlist=100), DIM)
    index.load(rows, 0)
    assert index.compact
    q = vectors[7]
    flt = dataclasses.replace(RECALL, statuses=(LessonStatus.ACTIVE,), scopes=("global",))
    found = compact_search(index, by_id, q, 5, flt)
    selected = [r for r in rows if r.status is LessonStatus.ACTIVE and r.scope == "global"]
    assert [h.lesson.id for h in found] == exact_ids(selected, q, 5)
    # The floor applies to exact scores: what survives is what exact search keeps.
    floor = RelevanceFloor(0.0, 0.97)
    kept = [h.lesson.id for h in compact_search(index, by_id, q, 20, RECALL, floor)]
    matrix = np.stack([np.asarray(r.embedding) for r in rows])
    sims = (matrix @ q / np.linalg.norm(matrix, axis=1) / np.linalg.norm(q)).astype(np.float32)
    want = [rows[i].id for i, _ in exact_top_k(sims, [r.id for r in rows], 20, floor)]
    assert kept == want and 0 < len(kept) < 20
    # A row retired since the index read it is left out when its row is read.
    best = found[0].lesson.id
    by_id[best] = dataclasses.replace(by_id[best], status=LessonStatus.RETIRED)
    assert best not in {h.lesson.id for h in compact_search(index, by_id, q, 5, flt)}


def test_a_zero_vector_has_no_direction_in_the_compact_form() -> None:
    rng = np.random.default_rng(3)
    vectors = clustered(rng, 12)
    vectors[4] = 0.0
    rows = [lesson(f"l{i:02d}", v) for i, v in enumerate(vectors)]
    index = RecallIndex(RecallIndexParams(max_rows=100, rows_held=5), DIM)
    index.load(rows, 0)
    found = compact_search(index, {r.id: r for r in rows}, vectors[0], 20)
    assert "l04" not in {h.lesson.id for h in found} and len(found) == 11
    assert compact_search(index, {}, np.zeros(DIM, dtype=np.float32), 5) == []


def test_rows_read_by_id_are_kept_the_most_recently_used_and_only_if_no_write_came_since() -> None:
    rng = np.random.default_rng(8)
    vectors = clustered(rng, 20)
    rows = [lesson(f"l{i:02d}", v) for i, v in enumerate(vectors)]
    index = RecallIndex(RecallIndexParams(max_rows=100, rows_held=3), DIM)
    index.load(rows, 0)
    assert index.compact
    assert index.cached(["l01", "l02"]) == ([], ["l01", "l02"])
    index.remember(rows[1:3], index.generation)
    held, missing = index.cached(["l01", "l02", "l03"])
    assert [r.id for r in held] == ["l01", "l02"] and missing == ["l03"]
    index.remember(rows[3:5], index.generation)  # four rows: the least recently used goes
    assert index.cached(["l01"])[1] == ["l01"]
    # A read that a write (a touch) overtook is not kept: it may predate the write.
    read_at = index.generation
    index.touch(["l09"])
    index.remember([rows[9]], read_at)
    assert index.cached(["l09"])[1] == ["l09"]
    # A kept row is re-read with the touched ones, and use marks apply to it in place.
    index.touch(["l02"])
    changed = dataclasses.replace(rows[2], confidence=0.9)
    index.refresh(index.dirty(), [changed])
    index.apply_uses({"l02": 2}, {"l02": T0})
    (row,) = index.cached(["l02"])[0]
    assert row.confidence == 0.9 and row.use_count == 2 and row.embedding is not None
