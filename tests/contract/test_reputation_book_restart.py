"""The reputation book's table survives a node restart on real Postgres: pairwise trust,
expertise, predictions, last seen and global trust come back from the replayed events, and a
peer's history reads back with its reasons (queued events included)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.node.store.reputation import PostgresReputation
from lamarck.proto.clock import FixedClock
from lamarck.reputation.book import TrustConfig
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import GlobalTrustParams, PairwiseParams, ReputationParams
from lamarck.reputation.table import row_to_obj

pytestmark = pytest.mark.integration

# The dimension of the conftest's template database (conftest.DIM).
DIM = 8
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SELF = "lmk1self"
TRUST = TrustConfig(SELF, PairwiseParams(), GlobalTrustParams())
PARAMS = ReputationParams()


def _book(store: PostgresLessonStore, clock: FixedClock) -> PostgresReputation:
    return PostgresReputation(lambda: store.pool, PARAMS, clock, trust=TRUST)


def _history(clock: FixedClock) -> list[ReputationEvent]:
    at = clock.now()
    out = []
    for k in range(9):
        out.append(
            ReputationEvent(
                EventKind.LESSON_CONFIRMED,
                "lmk1alice",
                at + timedelta(minutes=k),
                weight=0.8,
                domain="postgres",
                detail=f"outcome o{k} passed",
            )
        )
    out += [
        ReputationEvent(
            EventKind.LESSON_CONTRADICTED, "lmk1bob", at, weight=0.6, detail="outcome o9 failed"
        ),
        ReputationEvent(
            EventKind.POISONED, "lmk1bob", at, record_hash="h1", detail="injected instruction"
        ),
        ReputationEvent(EventKind.VOTE_WRONG, "lmk1bob", at, record_hash="h2", detail="vote r1"),
        ReputationEvent(EventKind.INTERNAL_AGREEMENT, "lmk1carol", at, detail="same lesson twice"),
    ]
    return out


async def test_the_table_reads_the_same_after_a_restart(pg_store: PostgresLessonStore) -> None:
    clock = FixedClock(T0)
    book = _book(pg_store, clock)
    await book.load()
    for event in _history(clock):
        book.emit(event)
    clock.advance(3600)
    book.recompute_global_trust(clock.now())
    before = [row_to_obj(r) for r in book.rows(principal_of={"lmk1alice": "op"})]
    assert book.pairwise("lmk1alice") > TRUST.pairwise.initial > book.pairwise("lmk1bob")
    assert book.global_of("lmk1alice") > 0.0
    await book.flush()

    reborn = _book(pg_store, clock)
    assert await reborn.load() == len(_history(clock))
    after = [row_to_obj(r) for r in reborn.rows(principal_of={"lmk1alice": "op"})]
    assert after == before
    alice = after[0]
    assert alice["peer"] == "lmk1alice" and alice["expert_domains"] == ["postgres"]
    assert (alice["predictions"], alice["correct"]) == (9, 9)
    assert reborn.ledger("lmk1alice").last_seen == T0 + timedelta(minutes=8)
    bob = after[1]
    assert bob["votes_wrong"] == 1 and bob["weighted_accuracy"] == 0.0


async def test_a_reload_recomputes_global_trust_with_the_last_summaries(
    pg_store: PostgresLessonStore,
) -> None:
    clock = FixedClock(T0)
    anchored = TrustConfig(SELF, PairwiseParams(), GlobalTrustParams(), ("lmk1anchor",))
    book = PostgresReputation(lambda: pg_store.pool, PARAMS, clock, trust=anchored)
    await book.load()
    for event in _history(clock):
        book.emit(event)
    await book.flush()
    # The pre-trusted peer vouches for this node: this node's own row then counts.
    book.recompute_global_trust(clock.now(), {"lmk1anchor": {SELF: 0.9}})
    vouched = book.global_of("lmk1alice")
    assert vouched is not None and vouched > 0.0
    await book.load()
    assert book.global_of("lmk1alice") == pytest.approx(vouched)


async def test_a_peers_history_reads_back_newest_first_with_its_reasons(
    pg_store: PostgresLessonStore,
) -> None:
    clock = FixedClock(T0)
    book = _book(pg_store, clock)
    await book.load()
    for event in _history(clock):
        book.emit(event)
    await book.flush()
    queued = ReputationEvent(
        EventKind.REJECTED, "lmk1bob", T0 + timedelta(hours=1), detail="operator rejected q1"
    )
    book.emit(queued)  # not flushed yet: still part of the history
    events = await book.history("lmk1bob")
    assert [e.kind for e in events] == [
        EventKind.REJECTED,
        EventKind.VOTE_WRONG,
        EventKind.POISONED,
        EventKind.LESSON_CONTRADICTED,
    ]
    assert events[0] == queued and events[2].detail == "injected instruction"
    assert [e.kind for e in await book.history("lmk1bob", limit=2)] == [
        EventKind.REJECTED,
        EventKind.VOTE_WRONG,
    ]
    assert await book.history("lmk1nobody") == []
