"""The ``Outbox`` contract: one suite, run against the in-memory and the Postgres outbox.

The outbox comes from ``outbox_for(store)`` over the contract suite's ``store`` fixture (the
in-memory lesson store, then the embedded Postgres one), as the node builds it; the lessons
the rows deliver are inserted through the store first (Postgres keeps the reference).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from lamarck.errors import DeliveryFailed, NotFound
from lamarck.gossip.publisher import GossipParams
from lamarck.node.gossip.outbox import (
    LAST_ERROR_MAX_CHARS,
    InMemoryOutbox,
    Outbox,
    OutboxEntry,
    OutboxWorker,
    PostgresOutbox,
    outbox_for,
)
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.node.store.port import LessonStore
from tests.factories import lesson_row

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
L1 = "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"
L2 = "7a2b3c4d-5e6f-4a7b-8c9d-0123456789ab"


def at(seconds: float) -> datetime:
    """A fixed instant ``seconds`` after T0."""
    return T0 + timedelta(seconds=seconds)


async def _lesson(store: LessonStore, lesson_id: str) -> None:
    await store.insert_lesson(
        lesson_row(
            lesson_id,
            at=T0,
            content=f"Run database migrations before restarting the api service ({lesson_id}).",
            operation="deploy.restart",
            confidence=0.8,
        )
    )


@pytest.fixture
async def outbox(store: LessonStore) -> Outbox:
    """The outbox that lives with each contract store, with two lessons to deliver."""
    await _lesson(store, L1)
    await _lesson(store, L2)
    return outbox_for(store)


def _pairs(rows: Sequence[OutboxEntry]) -> list[tuple[str, str, str]]:
    return [(r.lesson_id, r.content_hash, r.target_node_id) for r in rows]


async def test_the_store_decides_which_outbox_a_node_gets(store: LessonStore) -> None:
    expected = InMemoryOutbox if isinstance(store, InMemoryLessonStore) else PostgresOutbox
    assert isinstance(outbox_for(store), expected)


async def test_enqueue_adds_one_row_per_new_target_and_is_idempotent(outbox: Outbox) -> None:
    assert await outbox.enqueue(L1, "h1", ["a", "b", "a"], at(0)) == 2
    assert await outbox.enqueue(L1, "h1", ["b", "c"], at(1)) == 1
    assert await outbox.enqueue(L1, "h1", [], at(2)) == 0
    rows = await outbox.pending()
    assert _pairs(rows) == [(L1, "h1", "a"), (L1, "h1", "b"), (L1, "h1", "c")]
    assert [r.id for r in rows] == sorted({r.id for r in rows})
    assert [r.next_attempt_at for r in rows] == [at(0), at(0), at(1)]
    # Each row knows when it was enqueued (how long its peer has waited: the status shows it).
    assert [r.created_at for r in rows] == [at(0), at(0), at(1)]
    assert all(r.attempts == 0 and r.delivered_at is None and r.last_error is None for r in rows)


async def test_a_new_version_is_a_new_row_for_the_same_target(outbox: Outbox) -> None:
    assert await outbox.enqueue(L1, "h1", ["a"], at(0)) == 1
    assert await outbox.enqueue(L1, "h2", ["a"], at(0)) == 1
    assert await outbox.enqueue(L2, "h3", ["a"], at(0)) == 1
    assert _pairs(await outbox.pending()) == [(L1, "h1", "a"), (L1, "h2", "a"), (L2, "h3", "a")]


async def test_concurrent_enqueues_of_the_same_pairs_add_each_once(outbox: Outbox) -> None:
    added = await asyncio.gather(*(outbox.enqueue(L1, "h1", ["a", "b"], at(0)) for _ in range(5)))
    assert sum(added) == 2
    assert len(await outbox.pending()) == 2


async def test_due_returns_undelivered_rows_at_or_before_now_oldest_first(outbox: Outbox) -> None:
    await outbox.enqueue(L1, "h1", ["a"], at(5))
    await outbox.enqueue(L2, "h2", ["b"], at(0))
    await outbox.enqueue(L2, "h2", ["c"], at(5))
    assert await outbox.due(at(-1), 10) == []
    assert _pairs(await outbox.due(at(0), 10)) == [(L2, "h2", "b")]
    # Same instant: by id, i.e. by enqueue order.
    assert _pairs(await outbox.due(at(5), 10)) == [
        (L2, "h2", "b"),
        (L1, "h1", "a"),
        (L2, "h2", "c"),
    ]
    assert _pairs(await outbox.due(at(5), 2)) == [(L2, "h2", "b"), (L1, "h1", "a")]


async def test_a_delivered_row_is_neither_due_nor_pending_nor_enqueued_again(
    outbox: Outbox,
) -> None:
    await outbox.enqueue(L1, "h1", ["a", "b"], at(0))
    first, second = await outbox.pending()
    await outbox.mark_delivered(first.id, at(1))
    assert await outbox.pending() == [second]
    assert await outbox.due(at(10), 10) == [second]
    assert await outbox.enqueue(L1, "h1", ["a"], at(2)) == 0
    assert await outbox.pending() == [second]


async def test_a_failure_counts_keeps_the_error_and_waits_for_its_retry(outbox: Outbox) -> None:
    await outbox.enqueue(L1, "h1", ["a"], at(0))
    (row,) = await outbox.pending()
    await outbox.mark_failed(row.id, "UNAVAILABLE: peer down", at(2))
    await outbox.mark_failed(row.id, "x" * (LAST_ERROR_MAX_CHARS * 3), at(6))
    (failed,) = await outbox.pending()
    assert failed == dataclasses.replace(
        row, attempts=2, last_error="x" * LAST_ERROR_MAX_CHARS, next_attempt_at=at(6)
    )
    assert await outbox.due(at(5), 10) == []
    assert await outbox.due(at(6), 10) == [failed]
    await outbox.mark_delivered(row.id, at(7))
    assert await outbox.pending() == []


async def test_marking_an_unknown_row_is_not_found(outbox: Outbox) -> None:
    with pytest.raises(NotFound):
        await outbox.mark_delivered(999_999, at(0))
    with pytest.raises(NotFound):
        await outbox.mark_failed(999_999, "boom", at(1))


async def test_the_worker_delivers_retries_with_backoff_and_drops_vanished_records(
    outbox: Outbox,
) -> None:
    params = GossipParams(retry_base_s=2.0, retry_max_s=60.0)
    down = {"b"}
    sent: list[tuple[str, list[bytes]]] = []

    async def send(target: str, records: Sequence[bytes]) -> None:
        if target in down:
            raise DeliveryFailed(f"{target} is down", reason="rpc_failed")
        sent.append((target, list(records)))

    async def load(lesson_id: str, content_hash: str) -> bytes | None:
        return None if lesson_id == L2 else f"{lesson_id}:{content_hash}".encode()

    worker = OutboxWorker(outbox, send, load, params)
    await outbox.enqueue(L1, "h1", ["a", "b"], at(0))
    await outbox.enqueue(L2, "h2", ["a"], at(0))  # its record is gone: marked done, not sent
    assert await worker.run_once(at(0)) == 1
    assert sent == [("a", [f"{L1}:h1".encode()])]
    (pending,) = await outbox.pending()
    assert (pending.target_node_id, pending.attempts) == ("b", 1)
    assert pending.next_attempt_at == at(2)
    assert pending.last_error == "DeliveryFailed: rpc_failed: b is down"

    assert await worker.run_once(at(1)) == 0  # not due yet
    down.clear()
    assert await worker.run_once(at(2)) == 1
    assert sent[-1] == ("b", [f"{L1}:h1".encode()])
    assert await outbox.pending() == []
