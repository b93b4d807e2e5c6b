"""The reputation book contract: ``PostgresReputation`` behaves exactly like
``InMemoryReputation`` and, unlike it, survives a restart.

Tests taking ``harness`` run once per adapter; for Postgres, ``harness.restart`` flushes, drops
the book and loads a new one from the same database (a node restart). The tests at the end
prove what only the Postgres book has: durability, idempotent flushes, outages, migration 0002.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Protocol

import asyncpg
import pytest

from lamarck.errors import StoreError, StoreUnavailable
from lamarck.node.store.embedded import EmbeddedPostgres
from lamarck.node.store.migrate import load_migrations, run_migrations
from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.node.store.reputation import FLUSH_BATCH, PostgresReputation
from lamarck.proto.clock import FixedClock
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import InMemoryReputation, ReputationSink, ReputationView
from lamarck.reputation.scores import ScoreBreakdown, TrustBand

# The dimension and template database of the conftest (conftest.DIM, conftest.TEMPLATE).
DIM = 8
TEMPLATE = "lmk_template"
T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
PARAMS = ReputationParams()
# A newcomer below neutral and a fast decay: where a node's state starts, and how long ago,
# shows in its score (with the defaults a new state is all zeros and hides it).
SHARP = ReputationParams(initial_score=0.4, decay_per_day=0.9)
NODES = ("lmk1alice", "lmk1bob", "lmk1carol", "lmk1dave")
DOMAINS = ("postgres", "deploy", "")

_database_numbers = itertools.count()


class Book(Protocol):
    """What both adapters answer."""

    @property
    def params(self) -> ReputationParams: ...
    def emit(self, event: ReputationEvent) -> None: ...
    def score(self, node_id: str) -> float: ...
    def band(self, node_id: str) -> TrustBand: ...
    def explain(self, node_id: str) -> ScoreBreakdown: ...
    def expertise(self, node_id: str, domain: str) -> float: ...


class Harness:
    """Builds a book on one adapter and restarts it (a no-op for the in-memory book)."""

    def __init__(self, store: PostgresLessonStore | None) -> None:
        self.store = store

    def new(self, clock: FixedClock, params: ReputationParams = PARAMS) -> Book:
        """A fresh (empty or not yet loaded) book."""
        if self.store is None:
            return InMemoryReputation(params, clock)
        store = self.store
        return PostgresReputation(lambda: store.pool, params, clock)

    async def restart(self, book: Book, clock: FixedClock) -> Book:
        """The book a restarted node has: for Postgres, flushed, forgotten and reloaded."""
        if self.store is None:
            return book
        assert isinstance(book, PostgresReputation)
        await book.flush()
        store = self.store
        reborn = PostgresReputation(lambda: store.pool, book.params, clock)
        await reborn.load()
        return reborn


async def _copy_of_template(server: EmbeddedPostgres) -> str:
    name = f"lmk_rep_{next(_database_numbers)}"
    admin = await asyncpg.connect(server.dsn_for("postgres"))
    try:
        await admin.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    finally:
        await admin.close()
    return server.dsn_for(name)


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.integration)])
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    """Each adapter in turn; Postgres on a fresh migrated database."""
    if request.param == "memory":
        yield Harness(None)
        return
    # Requested lazily so a memory-only run (-k memory) never starts PostgreSQL.
    server: EmbeddedPostgres = request.getfixturevalue("embedded_pg")
    store = await PostgresLessonStore.connect(await _copy_of_template(server), DIM, max_size=2)
    try:
        yield Harness(store)
    finally:
        await store.close()


@pytest.fixture
async def pg_store(pg_dsn: str) -> AsyncIterator[PostgresLessonStore]:
    """A lesson store (for its pool) on a fresh migrated database."""
    store = await PostgresLessonStore.connect(pg_dsn, DIM, max_size=2)
    try:
        yield store
    finally:
        await store.close()


def snapshot(book: Book) -> dict[str, Any]:
    """Everything a reader can see of the book, per node, as plain values."""
    out: dict[str, Any] = {}
    for node in (*NODES, "lmk1stranger"):
        why = book.explain(node)
        out[node] = (
            book.score(node),
            book.band(node),
            why.score,
            why.band,
            dict(why.parts),
            dict(why.counts),
            {d: book.expertise(node, d) for d in DOMAINS},
        )
    return out


def script(clock: FixedClock) -> list[tuple[float, ReputationEvent]]:
    """A varied history: (seconds to advance the clock before emitting, event).

    It has every kind, relayed duplicates, a late event (``at`` before the node's state), an
    event dated after the clock (its node's state starts at the clock, not at ``at``), and the
    same instant under two UTC offsets (two distinct keys).
    """
    day = 86_400.0
    start = clock.now()
    plus2 = timezone(timedelta(hours=2))

    def ev(kind: EventKind, node: str, at: datetime, **kw: Any) -> ReputationEvent:
        return ReputationEvent(kind, node, at, **kw)

    steps: list[tuple[float, ReputationEvent]] = []
    t = start
    for i in range(12):
        t = t + timedelta(hours=7)
        steps.append(
            (7 * 3600, ev(EventKind.LESSON_CONFIRMED, "lmk1alice", t, weight=0.9, domain="deploy"))
        )
        if i % 3 == 0:
            steps.append(
                (
                    0,
                    ev(
                        EventKind.LESSON_CONTRADICTED, "lmk1alice", t, weight=0.4, domain="postgres"
                    ),
                )
            )
    t += timedelta(days=2)
    for relay in range(5):
        # One poisoned record relayed by five peers: one penalty.
        steps.append(
            (
                60,
                ev(EventKind.POISONED, "lmk1bob", t, record_hash="h-poison", detail=f"via {relay}"),
            )
        )
    steps.append(
        (day, ev(EventKind.EQUIVOCATION, "lmk1bob", t + timedelta(days=1), record_hash="h-eq"))
    )
    # Late: dated before bob's state; applied at the state's time, no rewind.
    steps.append((60, ev(EventKind.REPLAY, "lmk1bob", t - timedelta(days=3), record_hash="h-old")))
    for kind in (EventKind.BAD_SIGNATURE, EventKind.REJECTED, EventKind.VOTE_WRONG):
        steps.append(
            (3600, ev(kind, "lmk1carol", t + timedelta(days=1, hours=2), record_hash=f"h-{kind}"))
        )
    # Dated days after the clock reads: dave's state starts at the clock, not at ``at``.
    later = t + timedelta(days=5)
    steps.append(
        (0, ev(EventKind.LESSON_CONFIRMED, "lmk1dave", later + timedelta(days=5, hours=1)))
    )
    # The same instant under two offsets: two facts (their keys differ), as in memory.
    same = later + timedelta(days=6)
    steps.append((day, ev(EventKind.LESSON_CONTRADICTED, "lmk1dave", same, domain="deploy")))
    steps.append(
        (0, ev(EventKind.LESSON_CONTRADICTED, "lmk1dave", same.astimezone(plus2), domain="deploy"))
    )
    return steps


def play(book: Book, clock: FixedClock, steps: list[tuple[float, ReputationEvent]]) -> None:
    """Advance the clock and emit each step's event."""
    for advance, event in steps:
        clock.advance(advance)
        book.emit(event)


# -- both adapters ---------------------------------------------------------------------------


async def test_the_book_implements_both_ports(harness: Harness) -> None:
    book = harness.new(FixedClock(T0))
    assert isinstance(book, ReputationView)
    assert isinstance(book, ReputationSink)


async def test_the_same_events_give_the_same_book_as_in_memory_before_and_after_a_restart(
    harness: Harness,
) -> None:
    clock, ref_clock = FixedClock(T0), FixedClock(T0)
    book = harness.new(clock, SHARP)
    reference = InMemoryReputation(SHARP, ref_clock)
    steps = script(clock)
    play(book, clock, steps)
    play(reference, ref_clock, steps)
    assert snapshot(book) == snapshot(reference)
    # Exact equality, not approx: the replay runs the same arithmetic in the same order.
    book = await harness.restart(book, clock)
    assert snapshot(book) == snapshot(reference)
    clock.advance(40 * 86_400)
    ref_clock.advance(40 * 86_400)
    assert snapshot(book) == snapshot(reference)
    assert book.explain("lmk1bob").counts[EventKind.POISONED] == 1
    assert book.explain("lmk1dave").counts[EventKind.LESSON_CONTRADICTED] == 2


async def test_a_penalised_peer_stays_penalised_after_a_restart(harness: Harness) -> None:
    clock = FixedClock(T0)
    book = harness.new(clock)
    for _ in range(10):
        book.emit(ReputationEvent(EventKind.POISONED, "lmk1x", clock.now(), record_hash="h1"))
        clock.advance(60)
    book.emit(ReputationEvent(EventKind.EQUIVOCATION, "lmk1x", clock.now(), record_hash="h2"))
    book = await harness.restart(book, clock)
    assert book.explain("lmk1x").counts[EventKind.POISONED] == 1
    assert book.score("lmk1x") == pytest.approx(0.05, abs=1e-3)
    assert book.band("lmk1x") is TrustBand.LOW


async def test_one_outcome_judging_one_record_counts_once_whenever_each_path_reports_it(
    harness: Harness,
) -> None:
    clock = FixedClock(T0)
    book = harness.new(clock)

    def contradicted(at_s: float) -> ReputationEvent:
        return ReputationEvent(
            EventKind.LESSON_CONTRADICTED,
            "lmk1x",
            T0 + timedelta(seconds=at_s),
            weight=0.7,
            record_hash="h-lesson",
            cause="outcome-1",
        )

    book.emit(contradicted(0.0))
    book.emit(contradicted(0.004))  # the settlement's report of the same outcome, 4 ms later
    book = await harness.restart(book, clock)
    book.emit(contradicted(0.008))
    assert book.explain("lmk1x").counts[EventKind.LESSON_CONTRADICTED] == 1
    # Another outcome about the same record is another fact.
    book.emit(dataclasses.replace(contradicted(1.0), cause="outcome-2"))
    assert book.explain("lmk1x").counts[EventKind.LESSON_CONTRADICTED] == 2


async def test_an_operator_reset_survives_a_restart_and_keeps_reality_s_counts(
    harness: Harness,
) -> None:
    clock = FixedClock(T0)
    book = harness.new(clock)
    for k in range(3):
        book.emit(
            ReputationEvent(
                EventKind.LESSON_CONTRADICTED,
                "lmk1x",
                T0 + timedelta(minutes=k),
                cause=f"o{k}",
                record_hash=f"h{k}",
            )
        )
    assert book.band("lmk1x") is TrustBand.LOW and book.score("lmk1x") < PARAMS.graylist_threshold
    reset = ReputationEvent(
        EventKind.OPERATOR_RESET, "lmk1x", T0 + timedelta(hours=1), detail="operator reset: ok"
    )
    book.emit(reset)
    book = await harness.restart(book, clock)
    assert book.score("lmk1x") == pytest.approx(PARAMS.initial_score)
    assert book.explain("lmk1x").counts[EventKind.LESSON_CONTRADICTED] == 3


async def test_an_unknown_node_scores_the_admitted_newcomer_default(harness: Harness) -> None:
    book = await harness.restart(harness.new(FixedClock(T0)), FixedClock(T0))
    assert book.score("lmk1new") == PARAMS.initial_score
    assert book.expertise("lmk1new", "pg") == PARAMS.expertise_initial


# -- Postgres only ---------------------------------------------------------------------------

pg = pytest.mark.integration


async def _rows(store: PostgresLessonStore) -> int:
    return int(await store.pool.fetchval("SELECT count(*) FROM reputation_events"))


def _penalties(clock: FixedClock, n: int, node: str = "lmk1x") -> list[ReputationEvent]:
    return [
        ReputationEvent(EventKind.REJECTED, node, clock.now(), record_hash=f"h{i}")
        for i in range(n)
    ]


@pg
async def test_a_restart_keeps_the_seen_keys(pg_store: PostgresLessonStore) -> None:
    clock = FixedClock(T0)
    book = PostgresReputation(lambda: pg_store.pool, PARAMS, clock)
    events = _penalties(clock, 3)
    for event in events:
        book.emit(event)
    assert book.pending == 3
    assert await book.flush() == 3
    assert book.pending == 0 and await _rows(pg_store) == 3
    reborn = PostgresReputation(lambda: pg_store.pool, PARAMS, clock)
    assert await reborn.load() == 3
    before = reborn.explain("lmk1x")
    # The same facts reported again after the restart (a relay, a replayed outbox): nothing.
    for event in events:
        reborn.emit(event)
    assert reborn.pending == 0
    assert reborn.explain("lmk1x") == before
    assert await reborn.flush() == 0 and await _rows(pg_store) == 3


@pg
async def test_a_flush_while_the_database_is_down_keeps_every_event(
    pg_store: PostgresLessonStore, tmp_path: Any
) -> None:
    clock = FixedClock(T0)
    # The store's pool is swapped for one whose server is gone, as after a crash of Postgres.
    dead = await asyncpg.create_pool(f"postgresql://postgres@/x?host={tmp_path}", min_size=0)
    pools = {"now": dead}
    book = PostgresReputation(lambda: pools["now"], PARAMS, clock)
    events = _penalties(clock, FLUSH_BATCH + 500)
    for event in events:
        book.emit(event)
    score = book.score("lmk1x")
    try:
        for _ in range(2):
            with pytest.raises(StoreUnavailable) as info:
                await book.flush()
            assert info.value.details["pending"] == len(events)
            assert book.pending == len(events)
    finally:
        await dead.close()
    # The in-memory answers never depended on the database.
    assert book.score("lmk1x") == score
    pools["now"] = pg_store.pool
    assert await book.flush() == len(events)
    assert book.pending == 0 and await _rows(pg_store) == len(events)
    reborn = PostgresReputation(lambda: pg_store.pool, PARAMS, clock)
    assert await reborn.load() == len(events)
    assert reborn.explain("lmk1x") == book.explain("lmk1x")


@pg
async def test_a_flush_repeated_after_a_lost_acknowledgement_writes_nothing_twice(
    pg_store: PostgresLessonStore,
) -> None:
    clock = FixedClock(T0)
    events = _penalties(clock, 4)
    first = PostgresReputation(lambda: pg_store.pool, PARAMS, clock)
    for event in events:
        first.emit(event)
    await first.flush()
    # A book that never saw the commit queues the same events again: the keys dedupe them.
    again = PostgresReputation(lambda: pg_store.pool, PARAMS, clock)
    for event in events:
        again.emit(event)
    assert await again.flush() == 4
    assert await _rows(pg_store) == 4


@pg
async def test_events_emitted_before_load_are_applied_after_the_stored_ones(
    pg_store: PostgresLessonStore,
) -> None:
    clock, ref_clock = FixedClock(T0), FixedClock(T0)
    reference = InMemoryReputation(PARAMS, ref_clock)
    old = ReputationEvent(EventKind.LESSON_CONFIRMED, "lmk1x", T0, domain="pg")
    stored = PostgresReputation(lambda: pg_store.pool, PARAMS, clock)
    stored.emit(old)
    reference.emit(old)
    await stored.flush()
    clock.advance(3600)
    ref_clock.advance(3600)
    early = PostgresReputation(lambda: pg_store.pool, PARAMS, clock)
    new = ReputationEvent(EventKind.LESSON_CONTRADICTED, "lmk1x", clock.now(), domain="pg")
    early.emit(new)
    early.emit(old)  # not yet known to this book: queued too, deduped by the load
    reference.emit(new)
    assert await early.load() == 1
    assert early.explain("lmk1x") == reference.explain("lmk1x")
    await early.flush()
    seq = [
        r["kind"]
        for r in await pg_store.pool.fetch("SELECT kind FROM reputation_events ORDER BY seq")
    ]
    assert seq == ["lesson_confirmed", "lesson_contradicted"]


@pg
async def test_a_row_that_cannot_be_read_back_refuses_to_load(
    pg_store: PostgresLessonStore,
) -> None:
    clock = FixedClock(T0)
    book = PostgresReputation(lambda: pg_store.pool, PARAMS, clock)
    book.emit(ReputationEvent(EventKind.EQUIVOCATION, "lmk1x", T0, record_hash="h"))
    await book.flush()
    await pg_store.pool.execute("UPDATE reputation_events SET kind = 'from_the_future'")
    with pytest.raises(StoreError) as info:
        await PostgresReputation(lambda: pg_store.pool, PARAMS, clock).load()
    assert info.value.reason == "corrupt_reputation_event"
    await pg_store.pool.execute("UPDATE reputation_events SET kind = 'replay'")
    with pytest.raises(StoreError) as info:
        await PostgresReputation(lambda: pg_store.pool, PARAMS, clock).load()
    assert info.value.reason == "corrupt_reputation_event"


@pg
async def test_load_on_an_unreachable_database_is_store_unavailable(tmp_path: Any) -> None:
    dead = await asyncpg.create_pool(f"postgresql://postgres@/x?host={tmp_path}", min_size=0)
    try:
        with pytest.raises(StoreUnavailable):
            await PostgresReputation(lambda: dead, PARAMS, FixedClock(T0)).load()
    finally:
        await dead.close()


@pg
async def test_migration_0002_upgrades_a_version_1_database(fresh_database: str) -> None:
    versions = [m.version for m in load_migrations()]
    assert versions[:2] == [1, 2]
    conn = await asyncpg.connect(fresh_database)
    try:
        assert await run_migrations(conn, DIM) == versions
        # Back to a database migrated before 0002 existed.
        await conn.execute("DROP TABLE reputation_events")
        await conn.execute("DELETE FROM schema_migrations WHERE version >= 2")
        assert await run_migrations(conn, DIM) == versions[1:]
        assert await run_migrations(conn, DIM) == []
        assert await conn.fetchval("SELECT to_regclass('reputation_events') IS NOT NULL")
    finally:
        await conn.close()
