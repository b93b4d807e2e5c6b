"""The ``LessonStore`` contract: one suite, run against the in-memory and the Postgres adapter.

Tests taking the ``store`` fixture run once per adapter; the tests at the end prove what only
the Postgres adapter has (migrations, the vector extension, the HNSW index, error translation).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses

import asyncpg
import numpy as np
import pytest

from lamarck.domain.rows import (
    Category,
    LessonEvent,
    LessonFilter,
    LessonRow,
    LessonStatus,
    QuarantineRow,
    RejectionRow,
    RelevanceFloor,
)
from lamarck.errors import ConflictError, InvalidRecord, NotFound, StoreError, StoreUnavailable
from lamarck.node.store.migrate import load_migrations, run_migrations
from lamarck.node.store.port import LessonStore
from lamarck.node.store.postgres import VECTOR_INDEX, PostgresLessonStore, translate_error
from tests.contract.contract_factories import ALL, T0, at, full_lesson, lesson, outcome, vec

# The dimension the conftest migrates its template database with (conftest.DIM).
DIM = 8


def assert_same_embedding(got: LessonRow, want: LessonRow) -> None:
    """Embeddings are excluded from row equality; compare them separately."""
    assert got.embedding is not None and want.embedding is not None
    np.testing.assert_allclose(got.embedding, want.embedding, rtol=0, atol=1e-7)


# -- lifecycle -------------------------------------------------------------------------------


async def test_migrate_twice_is_harmless(store: LessonStore) -> None:
    await store.insert_lesson(lesson("a"))
    await store.migrate()
    await store.migrate()
    assert (await store.get_lesson("a")).id == "a"


# -- outcomes --------------------------------------------------------------------------------


async def test_outcome_round_trips_and_duplicate_id_conflicts(store: LessonStore) -> None:
    await store.insert_outcome(outcome("o1"))
    assert await store.get_outcome("o1") == outcome("o1")
    with pytest.raises(ConflictError):
        await store.insert_outcome(outcome("o1", passed=False))
    assert (await store.get_outcome("o1")).passed is True


async def test_missing_outcome_is_not_found(store: LessonStore) -> None:
    with pytest.raises(NotFound):
        await store.get_outcome("nope")


async def test_existing_outcome_ids_is_the_stored_subset(store: LessonStore) -> None:
    await store.insert_outcome(outcome("o1"))
    await store.insert_outcome(outcome("o2"))
    assert await store.existing_outcome_ids(["o1", "planted", "o2"]) == {"o1", "o2"}
    assert await store.existing_outcome_ids([]) == set()


async def test_outcomes_list_newest_first_with_limit_and_offset(store: LessonStore) -> None:
    for i in range(5):
        await store.insert_outcome(outcome(f"o{i}", at(i)))
    assert [o.id for o in await store.list_outcomes()] == ["o4", "o3", "o2", "o1", "o0"]
    assert [o.id for o in await store.list_outcomes(limit=2, offset=1)] == ["o3", "o2"]


# -- lessons: writes -------------------------------------------------------------------------


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


# -- supersede and history -------------------------------------------------------------------


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


async def test_find_by_content_hash(store: LessonStore) -> None:
    await store.insert_lesson(full_lesson())
    found = await store.find_by_content_hash("a" * 64)
    assert found is not None and found.id == "full"
    assert await store.find_by_content_hash("b" * 64) is None


async def test_hard_delete_removes_the_lesson(store: LessonStore) -> None:
    await store.insert_lesson(full_lesson())
    await store.hard_delete("full")
    with pytest.raises(NotFound):
        await store.get_lesson("full")
    assert await store.find_by_content_hash("a" * 64) is None
    with pytest.raises(NotFound):
        await store.hard_delete("full")


# -- listing and filters ---------------------------------------------------------------------


async def _filter_fixture(store: LessonStore) -> None:
    await store.insert_lessons(
        [
            lesson("g-hi", confidence=0.9),
            lesson("g-lo", confidence=0.2),
            lesson("g-new", confidence=0.5, created_at=at(10)),
            lesson("g-old", confidence=0.5, created_at=at(0)),
            lesson("p1", scope="project:1", confidence=0.6),
            lesson("p2", scope="project:2", confidence=0.6, operation="git push"),
            lesson("claim", status=LessonStatus.CLAIMED, confidence=0.3),
            lesson("sit", category=Category.SITUATION, confidence=0.7),
            lesson("imp", imported_from="lmk1peer", source_node_id="lmk1src", confidence=0.4),
            lesson("ret", status=LessonStatus.RETIRED, confidence=0.1),
        ]
    )


async def test_list_orders_by_confidence_then_newest(store: LessonStore) -> None:
    await _filter_fixture(store)
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
    await _filter_fixture(store)
    assert {r.id for r in await store.list_lessons(flt)} == expected
    assert await store.count_lessons(flt) == len(expected)


async def test_limit_and_offset_page_through_the_order(store: LessonStore) -> None:
    await _filter_fixture(store)
    everything = [r.id for r in await store.list_lessons(LessonFilter())]
    page = await store.list_lessons(LessonFilter(limit=3, offset=2))
    assert [r.id for r in page] == everything[2:5]
    assert await store.count_lessons(LessonFilter(limit=3, offset=2)) == len(everything)


# -- search ----------------------------------------------------------------------------------


def _exact_order(rows: list[LessonRow], query: np.ndarray) -> list[tuple[str, float]]:
    sims = []
    for row in rows:
        assert row.embedding is not None
        e = row.embedding.astype(np.float64)
        q = query.astype(np.float64)
        sims.append((row.id, float(e @ q / (np.linalg.norm(e) * np.linalg.norm(q)))))
    return sorted(sims, key=lambda p: (-p[1], p[0]))


async def _random_lessons(
    store: LessonStore, prefix: str, seed: int
) -> tuple[list[LessonRow], np.ndarray]:
    """Forty stored lessons with random vectors, and a random query (both from ``seed``)."""
    rng = np.random.default_rng(seed)
    rows = [
        lesson(f"{prefix}{i:02d}", embedding=rng.normal(size=DIM).astype(np.float32))
        for i in range(40)
    ]
    await store.insert_lessons(rows)
    return rows, rng.normal(size=DIM).astype(np.float32)


async def test_search_order_is_exact_cosine_order_on_small_data(store: LessonStore) -> None:
    rows, query = await _random_lessons(store, "l", seed=7)
    hits = await store.search(query, 10, LessonFilter())
    want = _exact_order(rows, query)[:10]
    assert [h.lesson.id for h in hits] == [w[0] for w in want]
    for hit, (_, sim) in zip(hits, want, strict=True):
        assert hit.similarity == pytest.approx(sim, abs=1e-5)
    assert hits[0].lesson == next(r for r in rows if r.id == want[0][0])


async def test_search_applies_the_filter_and_skips_rows_without_embedding(
    store: LessonStore,
) -> None:
    await _filter_fixture(store)
    await store.insert_lesson(lesson("no-vector", embedding=None, confidence=0.99))
    await store.insert_lesson(lesson("p1-far", scope="project:1", embedding=vec(-1.0, 0.1)))
    hits = await store.search(vec(1.0), 10, LessonFilter(scopes=("project:1",)))
    assert [h.lesson.id for h in hits] == ["p1", "p1-far"]
    assert hits[0].similarity == pytest.approx(1.0, abs=1e-6)
    assert hits[1].similarity < 0
    everything = await store.search(vec(1.0), 100, LessonFilter())
    assert {h.lesson.id for h in everything} == {
        "g-hi",
        "g-lo",
        "g-new",
        "g-old",
        "p1",
        "p2",
        "sit",
        "imp",
        "p1-far",
    }
    assert await store.search(vec(1.0), 0, LessonFilter()) == []


async def test_search_with_a_floor_returns_exactly_the_top_k_it_keeps(store: LessonStore) -> None:
    _, query = await _random_lessons(store, "f", seed=11)
    top = await store.search(query, 12, LessonFilter())
    for floor in (RelevanceFloor(-1.0, 0.5), RelevanceFloor(0.2, 0.0), RelevanceFloor(0.9, 0.9)):
        cut = floor.cut(top[0].similarity)
        kept = await store.search(query, 12, LessonFilter(), floor)
        # The same hits, in the same order, as cutting the unfloored top-k by the same rule.
        assert [h.lesson.id for h in kept] == [h.lesson.id for h in top if h.similarity >= cut]
        assert [h.similarity for h in kept] == pytest.approx(
            [h.similarity for h in top if h.similarity >= cut], abs=1e-6
        )
    # Nothing reaches a floor above every similarity; nothing is found in an empty filter.
    assert await store.search(query, 12, LessonFilter(), RelevanceFloor(1.01, 0.0)) == []
    empty = LessonFilter(scopes=("project:none",))
    assert await store.search(query, 12, empty, RelevanceFloor(0.0, 0.5)) == []


async def test_search_ties_are_broken_by_id(store: LessonStore) -> None:
    await store.insert_lessons([lesson(i, embedding=vec(2.0, 2.0)) for i in ("c", "a", "b")])
    hits = await store.search(vec(1.0, 1.0), 3, LessonFilter())
    assert [h.lesson.id for h in hits] == ["a", "b", "c"]


async def test_search_refuses_bad_queries(store: LessonStore) -> None:
    await store.insert_lesson(lesson("a"))
    with pytest.raises(StoreError) as zero:
        await store.search(np.zeros(DIM, dtype=np.float32), 3, LessonFilter())
    assert zero.value.reason == "invalid_query"
    with pytest.raises(StoreError) as wrong:
        await store.search(np.ones(DIM + 2, dtype=np.float32), 3, LessonFilter())
    assert wrong.value.reason == "dimension_mismatch"


# -- quarantine, rejections, stats -----------------------------------------------------------


def quarantined(qid: str, digest: str, seconds: float = 0) -> QuarantineRow:
    """A pending quarantine row."""
    return QuarantineRow(
        id=qid,
        content_hash=digest,
        source_node_id="lmk1src",
        reasons=("low_reputation", "unverified_claim"),
        received_at=at(seconds),
        signed_record=b'{"x": 1}',
    )


async def test_quarantine_round_trips_and_is_idempotent_by_hash(store: LessonStore) -> None:
    await store.quarantine(quarantined("q2", "h2", 2))
    await store.quarantine(quarantined("q1", "h1", 1))
    await store.quarantine(quarantined("q1-again", "h1", 3))
    assert await store.list_quarantine() == [quarantined("q1", "h1", 1), quarantined("q2", "h2", 2)]


async def test_quarantine_keeps_the_decision_taken_when_the_record_was_held(
    store: LessonStore,
) -> None:
    decided = dataclasses.replace(
        quarantined("q1", "h1", 1), confidence=0.21, transfer_rule="medium_reputation"
    )
    await store.quarantine(decided)
    await store.quarantine(quarantined("q2", "h2", 2))
    first, legacy = await store.list_quarantine()
    assert first == decided
    assert (legacy.confidence, legacy.transfer_rule) == (None, None)
    approved = await store.set_quarantine_state("q1", "approved")
    assert (approved.confidence, approved.transfer_rule) == (0.21, "medium_reputation")


async def test_quarantine_state_changes_and_filters(store: LessonStore) -> None:
    await store.quarantine(quarantined("q1", "h1", 1))
    await store.quarantine(quarantined("q2", "h2", 2))
    updated = await store.set_quarantine_state("q1", "approved")
    assert updated == dataclasses.replace(quarantined("q1", "h1", 1), state="approved")
    assert [q.id for q in await store.list_quarantine()] == ["q2"]
    assert [q.id for q in await store.list_quarantine("approved")] == ["q1"]
    assert [q.id for q in await store.list_quarantine(None)] == ["q1", "q2"]
    with pytest.raises(NotFound):
        await store.set_quarantine_state("ghost", "rejected")
    with pytest.raises(StoreError):
        await store.set_quarantine_state("q1", "maybe")


async def test_rejections_list_newest_first(store: LessonStore) -> None:
    for i in range(4):
        await store.record_rejection(RejectionRow("lmk1src", "bad_signature", f"h{i}", at(i)))
    await store.record_rejection(RejectionRow("lmk1src", "replay", "h4", at(3), detail="again"))
    got = await store.list_rejections(limit=3)
    assert [r.content_hash for r in got] == ["h4", "h3", "h2"]
    assert got[0] == RejectionRow("lmk1src", "replay", "h4", at(3), detail="again")


# -- lesson event log ------------------------------------------------------------------------


async def test_lesson_events_round_trip_oldest_first_per_lesson(store: LessonStore) -> None:
    retired = LessonEvent("l1", at(5), "retired", "alice", 0.7, 0.7, reason="no longer true")
    confirmed = LessonEvent("l1", at(1), "confirmed", "loop", 0.5, 0.65, outcome_id="o1")
    imported = LessonEvent("l1", at(0), "imported", "lmk1src", None, 0.5, version=1234567)
    other = LessonEvent("l2", at(2), "edited", "agent", 0.5, 0.5, reason="typo")
    # Two events at one instant keep their append order.
    tie_a = LessonEvent("l1", at(5), "version", "lmk1src", 0.7, 0.72, version=2)
    await store.append_events([retired, confirmed])
    await store.append_events([imported, other, tie_a])
    assert await store.lesson_events(["l1"]) == [imported, confirmed, retired, tie_a]
    assert await store.lesson_events(["l2", "nope"]) == [other]
    assert await store.lesson_events([]) == []


async def test_an_unknown_event_kind_refuses_the_whole_batch(store: LessonStore) -> None:
    ok = LessonEvent("l1", at(0), "confirmed", "loop", 0.5, 0.6)
    with pytest.raises(InvalidRecord) as err:
        await store.append_events([ok, LessonEvent("l1", at(1), "exploded", "loop")])
    assert err.value.reason == "bad_event_kind"
    assert await store.lesson_events(["l1"]) == []


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


async def test_stats_count_everything(store: LessonStore) -> None:
    await _filter_fixture(store)
    await store.insert_outcome(outcome("o1"))
    await store.quarantine(quarantined("q1", "h1"))
    await store.quarantine(quarantined("q2", "h2"))
    await store.set_quarantine_state("q2", "rejected")
    await store.record_rejection(RejectionRow("lmk1src", "replay", "h9", T0))
    assert await store.stats() == {
        "lessons_claimed": 1,
        "lessons_active": 8,
        "lessons_superseded": 0,
        "lessons_retired": 1,
        "outcomes": 1,
        "quarantine_pending": 1,
        "quarantine": 2,
        "rejections": 1,
    }


# -- Postgres only ---------------------------------------------------------------------------

pg = pytest.mark.integration


#: Every migration version this package ships, in order.
SHIPPED = [m.version for m in load_migrations()]


@pg
async def test_migrations_run_twice_change_nothing(fresh_database: str) -> None:
    conn = await asyncpg.connect(fresh_database)
    try:
        assert await run_migrations(conn, DIM) == SHIPPED
        before = [tuple(r) for r in await conn.fetch("SELECT * FROM schema_migrations")]
        tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        assert await run_migrations(conn, DIM) == []
        after = [tuple(r) for r in await conn.fetch("SELECT * FROM schema_migrations")]
    finally:
        await conn.close()
    assert before == after and len(before) == len(SHIPPED)
    assert {r["tablename"] for r in tables} >= {
        "lessons",
        "outcomes",
        "lesson_provenance",
        "quarantine",
        "rejections",
        "outbox",
        "schema_migrations",
        "store_settings",
    }


@pg
async def test_concurrent_starts_migrate_once(fresh_database: str) -> None:
    stores = await asyncio.gather(
        *(PostgresLessonStore.connect(fresh_database, DIM, max_size=2) for _ in range(4))
    )
    try:
        rows = await stores[0].pool.fetch("SELECT version FROM schema_migrations")
        assert [r["version"] for r in rows] == SHIPPED
    finally:
        for s in stores:
            await s.close()


@pg
async def test_a_different_embedding_dimension_is_refused_at_start(pg_dsn: str) -> None:
    with pytest.raises(StoreUnavailable) as info:
        await PostgresLessonStore.connect(pg_dsn, DIM * 2)
    assert info.value.reason == "embedding_dim_mismatch"
    assert f"stores {DIM}-dimensional" in str(info.value)


@pg
async def test_a_server_without_pgvector_fails_at_start_naming_the_extension() -> None:
    # The machine's system PostgreSQL 15 has no pgvector; the migration rolls back, so the
    # shared `test` database is left untouched.
    dsn = "postgresql://postgres@127.0.0.1:5432/test"
    try:
        probe = await asyncpg.connect(dsn, timeout=3)
    except (OSError, asyncpg.PostgresError, TimeoutError) as e:
        pytest.skip(f"system PostgreSQL at 127.0.0.1:5432 is unreachable: {e}")
    try:
        if await probe.fetchval("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"):
            pytest.skip("the system PostgreSQL has pgvector installed: nothing to prove")
    finally:
        await probe.close()
    with pytest.raises(StoreUnavailable) as info:
        await PostgresLessonStore.connect(dsn, DIM)
    assert info.value.reason == "vector_extension_missing"
    assert "the 'vector' extension (pgvector) is not installed on this server" in str(info.value)


@pg
async def test_an_unreachable_server_is_store_unavailable(tmp_path: object) -> None:
    with pytest.raises(StoreUnavailable):
        await PostgresLessonStore.connect(f"postgresql://postgres@/x?host={tmp_path}", DIM)


@pg
async def test_server_side_failures_are_translated(pg_store: PostgresLessonStore) -> None:
    await pg_store.insert_lesson(lesson("a"))
    async with pg_store.pool.acquire() as conn:
        await conn.execute("ALTER TABLE outcomes RENAME TO outcomes_gone")
    with pytest.raises(StoreError) as info:
        await pg_store.get_outcome("o1")
    assert info.value.reason == "database_error"
    assert info.value.details["sqlstate"] == "42P01"
    assert isinstance(info.value.__cause__, asyncpg.UndefinedTableError)
    # Kill the store's backends: each call either fails as StoreUnavailable or runs on a
    # replacement connection; either way the store recovers by itself.
    admin = await asyncpg.connect(pg_store.dsn)
    try:
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    finally:
        await admin.close()
    with contextlib.suppress(StoreUnavailable):
        await pg_store.get_lesson("a")
    assert (await pg_store.get_lesson("a")).id == "a"
    await pg_store.close()
    with pytest.raises(StoreUnavailable):
        await pg_store.get_lesson("a")


@pg
async def test_a_cancelled_ping_is_never_lost(pg_store: PostgresLessonStore) -> None:
    # The supervisor's probe: a cancel that arrives as SELECT 1 returns must still cancel
    # (Python 3.11's wait_for returned the result instead, and the supervisor's stop hung).
    # Cancelled at 300 points spread over a ping's life; the lost cancel showed within ~25.
    lost = 0
    for i in range(300):
        ping = asyncio.ensure_future(pg_store.ping(5.0))
        for _ in range(i % 12):
            await asyncio.sleep(0)
        if ping.done():
            continue
        ping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ping
        lost += not ping.cancelled()
    assert lost == 0
    await pg_store.ping(5.0)  # and the pool is whole afterwards


@pytest.mark.parametrize(
    ("error", "kind", "reason"),
    [
        (asyncpg.UniqueViolationError("dup"), ConflictError, "duplicate_id"),
        (asyncpg.ForeignKeyViolationError("fk"), ConflictError, "missing_reference"),
        (asyncpg.DeadlockDetectedError("dl"), ConflictError, "concurrent_update"),
        (asyncpg.DataError("expected 8 dimensions, not 3"), StoreError, "dimension_mismatch"),
        (asyncpg.CheckViolationError("check"), StoreError, "invalid_value"),
        (asyncpg.CannotConnectNowError("starting"), StoreUnavailable, "store_unavailable"),
        (asyncpg.AdminShutdownError("bye"), StoreUnavailable, "store_unavailable"),
        (asyncpg.ConnectionDoesNotExistError("gone"), StoreUnavailable, "store_unavailable"),
        (ConnectionRefusedError("no"), StoreUnavailable, "store_unavailable"),
        (asyncpg.InternalClientError("state"), StoreUnavailable, "store_unavailable"),
        (asyncpg.UndefinedTableError("no table"), StoreError, "database_error"),
    ],
)
def test_backend_errors_map_to_store_errors(
    error: BaseException, kind: type[StoreError], reason: str
) -> None:
    translated = translate_error(error)
    assert type(translated) is kind
    assert translated.reason == reason


async def _index_only_store(dsn: str) -> PostgresLessonStore:
    # At test sizes the planner rightly prefers an exact seq scan; turning seq scans off for
    # the database makes the store's queries take the HNSW path they take at 100k rows.
    admin = await asyncpg.connect(dsn)
    try:
        await admin.execute(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET enable_seqscan = off',"
            " current_database()); END $$"
        )
    finally:
        await admin.close()
    return await PostgresLessonStore.connect(dsn, DIM, max_size=2)


@pg
async def test_search_through_hnsw_with_ef_search_keeps_recall(pg_dsn: str) -> None:
    store = await _index_only_store(pg_dsn)
    try:
        rng = np.random.default_rng(3)
        centers = rng.normal(size=(20, DIM))
        points = centers[rng.integers(0, 20, size=3000)] + 0.3 * rng.normal(size=(3000, DIM))
        rows = [lesson(f"l{i:05d}", embedding=p.astype(np.float32)) for i, p in enumerate(points)]
        async with store.bulk_load():
            assert not await store.has_vector_index()
            await store.insert_lessons(rows)
        assert await store.has_vector_index()
        async with store.pool.acquire() as conn:
            assert await conn.fetchval("SHOW hnsw.ef_search") == "100"
            plan = "\n".join(
                r[0]
                for r in await conn.fetch(
                    "EXPLAIN SELECT id FROM lessons l WHERE l.status = ANY($2::text[])"
                    " ORDER BY embedding <=> $1 LIMIT 5",
                    points[0].astype(np.float32),
                    ["active"],
                )
            )
        assert VECTOR_INDEX in plan
        found = 0
        # Queries near stored lessons, as recall queries are (not far-off random directions,
        # where near-ties make "the" top 5 arbitrary).
        picks = points[rng.integers(0, len(points), size=30)]
        queries = (picks + 0.2 * rng.normal(size=picks.shape)).astype(np.float32)
        for q in queries:
            hits = await store.search(q, 5, LessonFilter())
            want = {i for i, _ in _exact_order(rows, q)[:5]}
            found += len(want & {h.lesson.id for h in hits})
        assert found / (5 * len(queries)) >= 0.95
    finally:
        await store.close()


@pg
async def test_overlapping_bulk_loads_rebuild_the_index_once_the_last_one_ends(
    pg_dsn: str,
) -> None:
    """Two catch-ups at once share one bulk load: the index goes down with the first and
    comes back (valid, built concurrently) when the last ends; search is exact meanwhile."""
    store = await PostgresLessonStore.connect(pg_dsn, DIM, max_size=3)
    try:
        await store.insert_lessons([lesson("a"), lesson("b", embedding=vec(0.0, 1.0))])
        async with store.bulk_load():
            assert store.bulk_loading and not await store.has_vector_index()
            async with store.bulk_load():
                await store.insert_lesson(lesson("c", embedding=vec(1.0, 1)))
            assert store.bulk_loading and not await store.has_vector_index()
            hits = await store.search(vec(1.0), 2, LessonFilter())
            assert [h.lesson.id for h in hits] == ["a", "c"]
        assert not store.bulk_loading and await store.has_vector_index()
    finally:
        await store.close()


@pg
async def test_refreshed_statistics_let_the_planner_search_through_the_vector_index(
    pg_dsn: str,
) -> None:
    """Lessons inserted since the planner's statistics were gathered, at least ``share`` of
    the rows they count (or a table never analysed): ``refresh_statistics`` gathers them,
    and a search then plans through the HNSW index. Below the share it leaves them to
    autovacuum."""
    store = await PostgresLessonStore.connect(pg_dsn, DIM, max_size=2)

    async def counted_and_plan() -> tuple[float, str]:
        async with store.pool.acquire() as conn:
            counted = await conn.fetchval(
                "SELECT reltuples FROM pg_class WHERE oid = 'lessons'::regclass"
            )
            plan = "\n".join(
                r[0]
                for r in await conn.fetch(
                    "EXPLAIN SELECT id FROM lessons l WHERE l.status = ANY($2::text[])"
                    " ORDER BY embedding <=> $1 LIMIT 5",
                    vec(1.0),
                    ["active"],
                )
            )
        return float(counted), plan

    try:
        assert await store.refresh_statistics(0.1) is False  # nothing inserted yet
        rng = np.random.default_rng(7)
        rows = [
            lesson(f"l{i:05d}", embedding=rng.normal(size=DIM).astype(np.float32))
            for i in range(3000)
        ]
        await store.insert_lessons(rows)
        counted, _ = await counted_and_plan()
        assert counted < 3000  # never analysed: the planner knows nothing of the rows
        assert await store.refresh_statistics(0.1) is True
        counted, plan = await counted_and_plan()
        assert counted == 3000
        assert VECTOR_INDEX in plan
        assert await store.refresh_statistics(0.1) is False  # nothing inserted since
        await store.insert_lesson(lesson("late", embedding=vec(1.0)))
        assert await store.refresh_statistics(0.1) is False  # 1 of 3,000: autovacuum's
        assert await store.refresh_statistics(0.0001) is True  # 1 >= 0.0001 x 3,000
        hits = await store.search(vec(1.0), 1, LessonFilter())
        assert [h.lesson.id for h in hits] == ["late"]
    finally:
        await store.close()


async def test_refreshing_statistics_changes_nothing_a_search_finds(store: LessonStore) -> None:
    """Every adapter takes the call after a burst of writes (the in-memory one has no
    planner: it says it gathered nothing); what is stored and found stays the same."""
    assert await store.refresh_statistics(0.1) is False  # nothing inserted yet
    await store.insert_lessons([lesson("a"), lesson("b", embedding=vec(0.0, 1.0))])
    before = [h.lesson.id for h in await store.search(vec(1.0, 0.5), 2, LessonFilter())]
    assert isinstance(await store.refresh_statistics(0.1), bool)
    after = [h.lesson.id for h in await store.search(vec(1.0, 0.5), 2, LessonFilter())]
    assert after == before == ["a", "b"]
    assert await store.refresh_statistics(0.1) is False  # nothing inserted since


@pg
async def test_a_start_rebuilds_the_index_a_killed_bulk_load_left_down(pg_dsn: str) -> None:
    """A process killed inside ``bulk_load`` leaves no vector index (or an invalid one from a
    build killed half-way); the next ``migrate()`` (every start) builds it again."""
    store = await PostgresLessonStore.connect(pg_dsn, DIM, max_size=2)
    try:
        await store.insert_lesson(lesson("a"))
        await store.drop_vector_index()  # what the killed process left
    finally:
        await store.close()
    again = await PostgresLessonStore.connect(pg_dsn, DIM, max_size=2)
    try:
        assert await again.has_vector_index()
        hits = await again.search(vec(1.0), 1, LessonFilter())
        assert [h.lesson.id for h in hits] == ["a"]
    finally:
        await again.close()


@pg
async def test_selective_filter_finds_matches_the_index_scan_misses(pg_dsn: str) -> None:
    store = await _index_only_store(pg_dsn)
    try:
        rng = np.random.default_rng(5)
        rows = [
            lesson(f"l{i:04d}", embedding=rng.normal(size=DIM).astype(np.float32))
            for i in range(2000)
        ]
        # Three confident lessons pointing away from the query: the ef_search nearest
        # candidates of the index scan hold none of them.
        rare = [lesson(f"rare{i}", confidence=0.99, embedding=vec(-1.0, i)) for i in range(3)]
        async with store.bulk_load():
            await store.insert_lessons(rows + rare)
        hits = await store.search(vec(1.0), 5, LessonFilter(min_confidence=0.9))
        assert [h.lesson.id for h in hits] == ["rare2", "rare1", "rare0"]
    finally:
        await store.close()


@pg
async def test_search_with_k_above_ef_search_returns_k(pg_dsn: str) -> None:
    store = await _index_only_store(pg_dsn)
    try:
        rng = np.random.default_rng(9)
        rows = [
            lesson(f"l{i:04d}", embedding=rng.normal(size=DIM).astype(np.float32))
            for i in range(300)
        ]
        await store.insert_lessons(rows)
        hits = await store.search(vec(1.0), 150, LessonFilter())
        assert len(hits) == 150
        assert [h.lesson.id for h in hits] == [i for i, _ in _exact_order(rows, vec(1.0))[:150]]
    finally:
        await store.close()


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


async def test_set_embeddings_sets_only_the_vector_and_search_then_finds_the_row(
    store: LessonStore,
) -> None:
    # A claim stored before its vector (a deferred embedding), then confirmed meanwhile.
    await store.insert_lesson(lesson("late", status=LessonStatus.CLAIMED, embedding=None))
    await store.insert_lesson(lesson("other", embedding=vec(0.0, 1.0)))
    confirmed = dataclasses.replace(
        await store.get_lesson("late"), confidence=0.75, status=LessonStatus.ACTIVE
    )
    await store.update_lesson(confirmed)
    assert await store.search(vec(1.0), 5, LessonFilter()) == [
        h for h in await store.search(vec(1.0), 5, LessonFilter()) if h.lesson.id == "other"
    ]
    await store.set_embeddings([("late", vec(1.0)), ("no-such-lesson", vec(1.0))])
    row = await store.get_lesson("late")
    # The confirmation written meanwhile stays: only the vector was set.
    assert row.confidence == 0.75 and row.status is LessonStatus.ACTIVE
    assert row.embedding is not None and float(row.embedding[0]) == pytest.approx(1.0)
    hits = await store.search(vec(1.0), 1, LessonFilter())
    assert [h.lesson.id for h in hits] == ["late"]


async def test_set_embeddings_refuses_another_dimension_and_sets_nothing(
    store: LessonStore,
) -> None:
    await store.insert_lesson(lesson("a", embedding=None))
    await store.insert_lesson(lesson("b", embedding=None))
    with pytest.raises(StoreError) as caught:
        await store.set_embeddings([("a", vec(1.0)), ("b", np.ones(DIM + 1, dtype=np.float32))])
    assert caught.value.reason == "dimension_mismatch"
    assert (await store.get_lesson("a")).embedding is None


async def test_unembedded_lists_live_lessons_without_a_vector_oldest_first(
    store: LessonStore,
) -> None:
    await store.insert_lessons(
        [
            lesson("new-claim", status=LessonStatus.CLAIMED, embedding=None, created_at=at(20)),
            lesson("old-active", embedding=None, created_at=at(10)),
            lesson("retired", status=LessonStatus.RETIRED, embedding=None, created_at=at(5)),
            lesson("has-vector", created_at=at(1)),
        ]
    )
    assert await store.unembedded(10) == [
        ("old-active", "lesson old-active"),
        ("new-claim", "lesson new-claim"),
    ]
    assert await store.unembedded(1) == [("old-active", "lesson old-active")]


async def test_a_late_use_mark_keeps_the_latest_use(store: LessonStore) -> None:
    await store.insert_lesson(lesson("used"))
    await store.mark_used(["used"], at(50))
    await store.mark_used(["used"], at(10))  # written behind an earlier reply
    row = await store.get_lesson("used")
    assert row.last_used == at(50) and row.use_count == 2


async def test_many_recalls_uses_are_written_at_once(store: LessonStore) -> None:
    await store.insert_lesson(lesson("a"))
    await store.insert_lesson(lesson("b"))
    await store.mark_uses(
        [(["a", "b"], at(30)), (["a", "a", "gone"], at(50)), (["b"], at(20)), ([], at(99))]
    )
    a, b = await store.get_lessons(["a", "b"])
    # A repeated id within one recall is one use; an unknown id is skipped.
    assert (a.use_count, a.last_used) == (2, at(50))
    assert (b.use_count, b.last_used) == (2, at(30))
    await store.mark_uses([])
    assert (await store.get_lesson("a")).use_count == 2


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


async def test_quarantine_reasons_count_the_held_records_per_reason_set(store: LessonStore) -> None:
    await store.quarantine(dataclasses.replace(quarantined("q1", "h1"), reasons=("b", "a")))
    await store.quarantine(dataclasses.replace(quarantined("q2", "h2"), reasons=("a", "b")))
    await store.quarantine(dataclasses.replace(quarantined("q3", "h3"), reasons=("a",)))
    await store.quarantine(dataclasses.replace(quarantined("q4", "h4"), reasons=("a",)))
    await store.set_quarantine_state("q4", "rejected")
    assert await store.quarantine_reasons("pending") == {("a", "b"): 2, ("a",): 1}
    assert await store.quarantine_reasons("rejected") == {("a",): 1}
    assert await store.quarantine_reasons("approved") == {}


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


async def test_a_quarantined_record_is_found_by_id_and_by_hash(store: LessonStore) -> None:
    await store.quarantine(quarantined("q1", "h1"))
    await store.quarantine(quarantined("q2", "h2"))
    await store.set_quarantine_state("q2", "approved")
    assert await store.get_quarantine("q1") == quarantined("q1", "h1")
    assert (await store.get_quarantine("q2")).state == "approved"  # any state
    assert await store.quarantine_of("h2") == await store.get_quarantine("q2")
    assert await store.quarantine_of("h3") is None
    with pytest.raises(NotFound):
        await store.get_quarantine("q3")
