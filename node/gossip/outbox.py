"""The durable outbox: a lesson committed for publishing reaches every intended peer at least
once, across crashes and peer outages.

One row per (record content hash, target peer). The worker takes the due rows, sends each
target its batch through an injected async ``send``, and marks rows delivered or schedules a
retry with exponential backoff (``retry_delay``). Receivers import idempotently, so a row
delivered twice after a crash between send and mark costs a DUPLICATE ack, nothing more.
"""

from __future__ import annotations

import abc
import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from lamarck.errors import LamarckError, NotFound
from lamarck.gossip.publisher import GossipParams
from lamarck.node.store.port import LessonStore
from lamarck.node.store.postgres import PostgresLessonStore, db_guard

__all__ = [
    "LAST_ERROR_MAX_CHARS",
    "InMemoryOutbox",
    "Outbox",
    "OutboxEntry",
    "OutboxWorker",
    "PostgresOutbox",
    "outbox_for",
    "retry_delay",
]

_log = logging.getLogger(__name__)

#: How much of a delivery error a row keeps (a storage bound, the same for every adapter):
#: enough to diagnose, never a peer's whole reply.
LAST_ERROR_MAX_CHARS = 500


def retry_delay(attempts: int, params: GossipParams) -> float:
    """Seconds to wait after the ``attempts``-th failure: base * 2**(attempts-1), capped."""
    if attempts < 1:
        return 0.0
    # Cap the exponent first: 2**attempts overflows a float long before the ceiling matters.
    exponent = min(attempts - 1, 62)
    return float(min(params.retry_max_s, params.retry_base_s * 2.0**exponent))


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """One pending or delivered (record, target) pair."""

    id: int
    lesson_id: str
    content_hash: str
    target_node_id: str
    attempts: int
    next_attempt_at: datetime
    delivered_at: datetime | None = None
    last_error: str | None = None
    #: When the row was enqueued (its age is how long a peer has waited for the record).
    created_at: datetime | None = None


class Outbox(abc.ABC):
    """Persistence of deliveries; adapters: :class:`InMemoryOutbox`, :class:`PostgresOutbox`.

    One contract suite runs against both (``tests/contract/test_outbox_contract.py``).
    """

    @abc.abstractmethod
    async def enqueue(
        self, lesson_id: str, content_hash: str, targets: Sequence[str], now: datetime
    ) -> int:
        """Add one row per new target (idempotent by (hash, target)); returns rows added."""

    @abc.abstractmethod
    async def due(self, now: datetime, limit: int) -> list[OutboxEntry]:
        """Undelivered rows whose next attempt is at or before ``now``, oldest first."""

    @abc.abstractmethod
    async def mark_delivered(self, entry_id: int, now: datetime) -> None:
        """Record a successful delivery; ``NotFound`` for an unknown row."""

    @abc.abstractmethod
    async def mark_failed(self, entry_id: int, error: str, next_attempt_at: datetime) -> None:
        """Count a failed attempt (keeping ``LAST_ERROR_MAX_CHARS`` of ``error``) and schedule
        the next one; ``NotFound`` for an unknown row."""

    @abc.abstractmethod
    async def pending(self) -> list[OutboxEntry]:
        """Every undelivered row (for status and tests)."""


class InMemoryOutbox(Outbox):
    """An outbox in a dict: for tests, simulation and nodes without Postgres (not durable)."""

    def __init__(self) -> None:
        self._rows: dict[int, OutboxEntry] = {}
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()

    async def enqueue(
        self, lesson_id: str, content_hash: str, targets: Sequence[str], now: datetime
    ) -> int:
        """Add one row per new target."""
        async with self._lock:
            have = {(r.content_hash, r.target_node_id) for r in self._rows.values()}
            added = 0
            for target in dict.fromkeys(targets):
                if (content_hash, target) in have:
                    continue
                entry_id = next(self._ids)
                self._rows[entry_id] = OutboxEntry(
                    entry_id, lesson_id, content_hash, target, 0, now, created_at=now
                )
                added += 1
            return added

    async def due(self, now: datetime, limit: int) -> list[OutboxEntry]:
        """Due undelivered rows, oldest first."""
        rows = [
            r for r in self._rows.values() if r.delivered_at is None and r.next_attempt_at <= now
        ]
        return sorted(rows, key=lambda r: (r.next_attempt_at, r.id))[:limit]

    def _row(self, entry_id: int) -> OutboxEntry:
        row = self._rows.get(entry_id)
        if row is None:
            raise NotFound(f"no outbox row {entry_id}", reason="outbox_entry_not_found")
        return row

    async def mark_delivered(self, entry_id: int, now: datetime) -> None:
        """Record a delivery."""
        async with self._lock:
            row = self._row(entry_id)
            self._rows[entry_id] = replace(row, delivered_at=now, last_error=None)

    async def mark_failed(self, entry_id: int, error: str, next_attempt_at: datetime) -> None:
        """Count a failure and schedule a retry."""
        async with self._lock:
            row = self._row(entry_id)
            self._rows[entry_id] = replace(
                row,
                attempts=row.attempts + 1,
                last_error=error[:LAST_ERROR_MAX_CHARS],
                next_attempt_at=next_attempt_at,
            )

    async def pending(self) -> list[OutboxEntry]:
        """Undelivered rows by id."""
        return sorted(
            (r for r in self._rows.values() if r.delivered_at is None), key=lambda r: r.id
        )


def _updated(status: str, entry_id: int) -> None:
    """``NotFound`` unless an UPDATE touched a row."""
    if str(status).rsplit(" ", 1)[-1] == "0":
        raise NotFound(f"no outbox row {entry_id}", reason="outbox_entry_not_found")


def _entry(rec: Any) -> OutboxEntry:
    return OutboxEntry(
        id=rec["id"],
        lesson_id=rec["lesson_id"],
        content_hash=rec["content_hash"],
        target_node_id=rec["target_node_id"],
        attempts=rec["attempts"],
        next_attempt_at=rec["next_attempt_at"],
        delivered_at=rec["delivered_at"],
        last_error=rec["last_error"],
        created_at=rec["created_at"],
    )


class PostgresOutbox(Outbox):
    """The outbox over the ``outbox`` table, through the lesson store's asyncpg pool.

    ``pool`` is a callable returning the pool (``lambda: store.pool``), so the outbox follows
    the store across a reconnect. asyncpg errors become ``StoreError`` at this boundary.
    """

    def __init__(self, pool: Callable[[], Any]) -> None:
        self._pool = pool

    async def enqueue(
        self, lesson_id: str, content_hash: str, targets: Sequence[str], now: datetime
    ) -> int:
        """Insert one row per target, skipping (hash, target) pairs already present."""
        added = 0
        async with db_guard(), self._pool().acquire() as conn, conn.transaction():
            for target in dict.fromkeys(targets):
                status = await conn.execute(
                    "INSERT INTO outbox (lesson_id, content_hash, target_node_id,"
                    " next_attempt_at, created_at) VALUES ($1, $2, $3, $4, $4)"
                    " ON CONFLICT (content_hash, target_node_id) DO NOTHING",
                    lesson_id,
                    content_hash,
                    target,
                    now,
                )
                added += int(str(status).rsplit(" ", 1)[-1])
        return added

    async def due(self, now: datetime, limit: int) -> list[OutboxEntry]:
        """Due undelivered rows, oldest first."""
        async with db_guard():
            recs = await self._pool().fetch(
                "SELECT * FROM outbox WHERE delivered_at IS NULL AND next_attempt_at <= $1"
                " ORDER BY next_attempt_at, id LIMIT $2",
                now,
                limit,
            )
        return [_entry(r) for r in recs]

    async def mark_delivered(self, entry_id: int, now: datetime) -> None:
        """Record a delivery."""
        async with db_guard():
            status = await self._pool().execute(
                "UPDATE outbox SET delivered_at = $2, last_error = NULL WHERE id = $1",
                entry_id,
                now,
            )
        _updated(status, entry_id)

    async def mark_failed(self, entry_id: int, error: str, next_attempt_at: datetime) -> None:
        """Count a failure and schedule a retry."""
        async with db_guard():
            status = await self._pool().execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = $2,"
                " next_attempt_at = $3 WHERE id = $1",
                entry_id,
                error[:LAST_ERROR_MAX_CHARS],
                next_attempt_at,
            )
        _updated(status, entry_id)

    async def pending(self) -> list[OutboxEntry]:
        """Undelivered rows by id."""
        async with db_guard():
            recs = await self._pool().fetch(
                "SELECT * FROM outbox WHERE delivered_at IS NULL ORDER BY id"
            )
        return [_entry(r) for r in recs]


def outbox_for(store: LessonStore) -> Outbox:
    """The outbox that lives with ``store``: its ``outbox`` table for the Postgres store (the
    rows commit beside the lessons they deliver), else one in memory."""
    if isinstance(store, PostgresLessonStore):
        return PostgresOutbox(lambda: store.pool)
    return InMemoryOutbox()


Send = Callable[[str, Sequence[bytes]], Awaitable[None]]
"""Deliver a batch of signed records to a peer; raises on any failure."""

LoadRecord = Callable[[str, str], Awaitable[bytes | None]]
"""The signed bytes for (lesson id, content hash), or None if they can no longer be sent."""


class OutboxWorker:
    """Drains due outbox rows: one batch per target, retry with backoff on failure."""

    def __init__(self, outbox: Outbox, send: Send, load: LoadRecord, params: GossipParams) -> None:
        self._outbox = outbox
        self._send = send
        self._load = load
        self._params = params

    async def run_once(self, now: datetime) -> int:
        """One pass over the due rows at ``now``; returns how many were delivered.

        Targets are served concurrently (at most ``delivery_concurrency`` at once), each with
        its batches in order, so one slow or dead peer does not hold the others back. A record
        is loaded once per pass however many targets it goes to.
        """
        due = await self._outbox.due(now, self._params.batch_size * 16)
        by_target: dict[str, list[OutboxEntry]] = {}
        for entry in due:
            by_target.setdefault(entry.target_node_id, []).append(entry)
        loaded: dict[tuple[str, str], asyncio.Future[bytes | None]] = {}
        gate = asyncio.Semaphore(self._params.delivery_concurrency)

        async def serve(target: str, entries: list[OutboxEntry]) -> int:
            async with gate:
                done = 0
                for start in range(0, len(entries), self._params.batch_size):
                    chunk = entries[start : start + self._params.batch_size]
                    done += await self._deliver(target, chunk, now, loaded)
                return done

        counts = await asyncio.gather(*(serve(t, e) for t, e in by_target.items()))
        return sum(counts)

    async def _load_once(
        self, entry: OutboxEntry, loaded: dict[tuple[str, str], asyncio.Future[bytes | None]]
    ) -> bytes | None:
        key = (entry.lesson_id, entry.content_hash)
        future = loaded.get(key)
        if future is None:
            future = asyncio.ensure_future(self._load(*key))
            loaded[key] = future
        return await asyncio.shield(future)

    async def _deliver(
        self,
        target: str,
        entries: Sequence[OutboxEntry],
        now: datetime,
        loaded: dict[tuple[str, str], asyncio.Future[bytes | None]],
    ) -> int:
        sendable: list[tuple[OutboxEntry, bytes]] = []
        for entry in entries:
            raw = await self._load_once(entry, loaded)
            if raw is None:
                # The lesson changed or went away: nothing left to deliver for this row.
                await self._outbox.mark_delivered(entry.id, now)
                continue
            sendable.append((entry, raw))
        if not sendable:
            return 0
        try:
            await self._send(target, [raw for _, raw in sendable])
        except LamarckError as e:  # a failed delivery is retried; the receiver dedupes
            _log.info("outbox delivery to %s failed: %s", target, e)
            for entry, _ in sendable:
                delay = retry_delay(entry.attempts + 1, self._params)
                await self._outbox.mark_failed(
                    entry.id, f"{type(e).__name__}: {e}", now + timedelta(seconds=delay)
                )
            return 0
        for entry, _ in sendable:
            await self._outbox.mark_delivered(entry.id, now)
        return len(sendable)
