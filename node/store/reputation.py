"""``PostgresReputation``: the reputation book that survives a node restart.

Both reputation ports are synchronous (the pure import pipeline calls ``emit`` and ``score``
without awaiting), so the book answers from memory and persists behind it:

* an :class:`~lamarck.reputation.port.InMemoryReputation` (composition, not a copy) holds the
  scores, so this adapter cannot drift from the in-memory one: the pure scorer stays the single
  source of truth;
* :meth:`PostgresReputation.emit` applies an event in memory and queues it;
  :meth:`PostgresReputation.flush` writes the queue to ``reputation_events`` (migration 0002),
  idempotent by ``event.key``; a failed flush keeps every queued event for the next one and
  raises the translated ``StoreError`` (``StoreUnavailable`` when Postgres is down);
* :meth:`PostgresReputation.load` rebuilds the book at start by replaying the stored events.

The inner book is a :class:`~lamarck.reputation.book.ReputationBook`: pairwise trust, per-domain
expertise, predictions and last seen are derived from the same events, so the replay brings
them back too (nothing of them is stored on its own, for the reasons below). Global trust is
recomputed from them by :meth:`PostgresReputation.recompute_global_trust` (once at ``load``,
then on the node's schedule); :meth:`PostgresReputation.history` reads one node's events back
for ``lamarck reputation show``.

Why an event log replayed, not per-node state snapshots: the replay runs the same pure
``apply`` the live book ran, so a restart cannot produce a score the running node would not
have had, and a change of ``ReputationParams`` (a retuned penalty) applies to the whole
history instead of being frozen into a snapshot written under the old parameters. Events are
replayed in emission order (``seq``), not in order of ``at``: the scorer applies a late event
at the state's time rather than rewinding, so the order of ``at`` would rebuild a different
state than the live book had. Each row also stores the book's clock reading at emission,
because a node's first event starts its state at ``min(at, now)``.

Growth: one row per distinct event key (a penalty about a record counts once however many
peers relay it; each reality outcome is one row), ~380 bytes per row with its indexes. The
replay is linear and blocks the loop at start; measured on the embedded Postgres 16 of the
test suite (shared 2-core machine, best of 3), 1 000 nodes: 10 000 events load in 0.2 s;
100 000 events load in 2.2 s (cursor fetch 0.3 s, decoding and key checks 0.5 s, the pure
scorer 1.4 s) and hold 33 MB (mostly event keys, kept twice: here and in the inner book),
while writing that many as one backlog takes 2.6 s. Past a few hundred thousand events the
bound is a per-node snapshot of ``ReputationState`` plus the events after it (``seq`` is the
cut point, keyed by the parameters it was computed under), with only the keys of older events
loaded for dedupe; that needs a way to seed ``InMemoryReputation`` with states.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from lamarck.errors import StoreError
from lamarck.node.store.pg.sql import TRANSLATED_ERRORS, db_guard, translate_error
from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.proto.clock import Clock
from lamarck.reputation.book import PeerLedger, ReputationBook, TrustConfig, table_rows
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.global_trust import GlobalTrust
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import ScoreBreakdown, TrustBand
from lamarck.reputation.table import ReputationRow
from lamarck.reputation.transfer import TrackRecord

__all__ = [
    "FLUSH_BATCH",
    "HISTORY_MAX",
    "LOAD_PREFETCH",
    "UNANCHORED",
    "PostgresReputation",
    "reputation_book_for",
]

#: Events written per transaction: a long outage's backlog commits in steps, so a failure
#: midway keeps what was already written.
FLUSH_BATCH = 1000
#: Rows fetched per round trip while replaying at start.
LOAD_PREFETCH = 2000
#: Most events ``history`` returns (newest first) when asked for more.
HISTORY_MAX = 1000
#: The trust configuration of a book not told whose it is: the seed's pairwise steps, no
#: global trust (``TrustConfig.self_id`` empty). The daemon passes its own.
UNANCHORED = TrustConfig("")

_INSERT = (
    "INSERT INTO reputation_events (key, kind, node_id, at, at_offset_s, weight, record_hash,"
    " domain, detail, emitted_at, cause) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    " ON CONFLICT (key) DO NOTHING"
)
_SELECT = (
    "SELECT seq, key, kind, node_id, at, at_offset_s, weight, record_hash, domain, detail,"
    " emitted_at, cause FROM reputation_events ORDER BY seq"
)
# reputation_events_node_idx (node_id, seq) serves it.
_HISTORY = (
    "SELECT seq, key, kind, node_id, at, at_offset_s, weight, record_hash, domain, detail,"
    " emitted_at, cause FROM reputation_events WHERE node_id = $1 ORDER BY seq DESC LIMIT $2"
)


class _ReplayClock:
    """The book's clock, pinned to a stored reading while an event is replayed."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.pinned: datetime | None = None

    def now(self) -> datetime:
        """The pinned reading during a replay, the injected clock otherwise."""
        return self.pinned if self.pinned is not None else self._clock.now()


def _offset_seconds(at: datetime) -> int:
    offset = at.utcoffset()
    return 0 if offset is None else int(offset.total_seconds())


def _row(event: ReputationEvent, emitted_at: datetime) -> tuple[Any, ...]:
    return (
        event.key,
        event.kind.value,
        event.node_id,
        event.at,
        _offset_seconds(event.at),
        event.weight,
        event.record_hash,
        event.domain,
        event.detail,
        emitted_at,
        event.cause,
    )


def _event(rec: Any) -> ReputationEvent:
    """The stored event exactly as emitted; ``StoreError`` if the row cannot be it."""
    try:
        offset = int(rec["at_offset_s"])
        tz = UTC if offset == 0 else timezone(timedelta(seconds=offset))
        event = ReputationEvent(
            kind=EventKind(rec["kind"]),
            node_id=rec["node_id"],
            at=rec["at"].astimezone(tz),
            weight=float(rec["weight"]),
            record_hash=rec["record_hash"],
            domain=rec["domain"],
            detail=rec["detail"],
            cause=rec["cause"],
        )
    except ValueError as e:
        # An unknown kind (a downgrade after a newer version added one) or a broken row: start
        # refuses rather than silently forgetting a penalty.
        raise StoreError(
            f"reputation event #{rec['seq']} cannot be read back: {e}",
            reason="corrupt_reputation_event",
            seq=rec["seq"],
        ) from e
    if event.key != rec["key"]:
        raise StoreError(
            f"reputation event #{rec['seq']} does not reproduce its stored key",
            reason="corrupt_reputation_event",
            seq=rec["seq"],
        )
    return event


class PostgresReputation:
    """Both reputation ports, answered from memory and persisted in ``reputation_events``.

    ``pool`` returns the asyncpg pool (``lambda: store.pool``), so the book follows the lesson
    store across a reconnect. Call :meth:`load` once the store is migrated and before the book
    is read; call :meth:`flush` periodically (every
    ``MaintenanceParams.reputation_flush_interval_s``) and once at stop.
    ``trust`` says whose book this is and how pairwise and global trust are computed
    (``UNANCHORED``: pairwise trust only).
    """

    def __init__(
        self,
        pool: Callable[[], Any],
        params: ReputationParams,
        clock: Clock,
        *,
        trust: TrustConfig = UNANCHORED,
    ) -> None:
        self._pool = pool
        self._params = params
        self._clock = clock
        self._trust = trust
        self._replay_clock = _ReplayClock(clock)
        self._book = ReputationBook(params, self._replay_clock, trust)
        # The peers' summary rows of the last recomputation (a reload recomputes with them).
        self._summary_rows: dict[str, Mapping[str, float]] = {}
        # Keys applied (stored or queued). Kept here rather than read from the inner book's
        # private set: emit must know whether an event is new to know whether to queue it.
        self._seen: set[str] = set()
        # Applied but not yet durable, in emission order, with the clock reading at emission.
        self._queue: list[tuple[ReputationEvent, datetime]] = []
        self._flush_lock = asyncio.Lock()

    @property
    def params(self) -> ReputationParams:
        """The parameters this book scores with."""
        return self._params

    @property
    def pending(self) -> int:
        """Events applied in memory and not yet written."""
        return len(self._queue)

    # -- the ports (synchronous) ----------------------------------------------------------
    def emit(self, event: ReputationEvent) -> None:
        """Apply ``event`` now and queue it for the next flush, unless its key was seen."""
        key = event.key  # a sha256 per read: read once
        if key in self._seen:
            return
        self._seen.add(key)
        emitted_at = self._clock.now()
        self._apply(self._book, event, emitted_at)
        self._queue.append((event, emitted_at))

    def score(self, node_id: str) -> float:
        """The node's score now, in [0, 1]."""
        return self._book.score(node_id)

    def band(self, node_id: str) -> TrustBand:
        """The node's transfer-table band now."""
        return self._book.band(node_id)

    def track_record(self, node_id: str) -> TrackRecord:
        """The node's lessons this node's outcomes confirmed and contradicted."""
        return self._book.track_record(node_id)

    def explain(self, node_id: str) -> ScoreBreakdown:
        """The node's score now with its labelled parts."""
        return self._book.explain(node_id)

    def expertise(self, node_id: str, domain: str) -> float:
        """The node's expertise in ``domain`` now."""
        return self._book.expertise(node_id, domain)

    # -- what the operator's table reads (synchronous, from memory) ------------------------
    @property
    def book(self) -> ReputationBook:
        """The in-memory book (read only: events go through :meth:`emit`)."""
        return self._book

    def pairwise(self, node_id: str) -> float:
        """This node's direct trust in ``node_id``, in [0, 1]."""
        return self._book.pairwise(node_id)

    def ledger(self, node_id: str) -> PeerLedger:
        """Pairwise trust, predictions and last seen of ``node_id``."""
        return self._book.ledger(node_id)

    def global_of(self, node_id: str) -> float | None:
        """``node_id``'s global trust as last recomputed (``None``: unknown)."""
        return self._book.global_of(node_id)

    def recompute_global_trust(
        self, now: datetime, summaries: Mapping[str, Mapping[str, float]] | None = None
    ) -> GlobalTrust:
        """Recompute global trust (EigenTrust) over this node's own row and the peers' verified
        ``summaries``, anchored in the operator's pre-trusted peers (this node when none);
        call it on a schedule. Pure CPU, no I/O: about 10 ms for 1,000 peers
        (``bench/trust.py``). The rows are kept, so a reload recomputes with them."""
        self._summary_rows = dict(summaries or {})
        return self._book.recompute_global_trust(now, self._summary_rows)

    def rows(
        self,
        *,
        principal_of: Mapping[str, str],
        accepted: Mapping[str, int] | None = None,
        rejected: Mapping[str, Mapping[str, int]] | None = None,
        peers: Sequence[str] = (),
    ) -> list[ReputationRow]:
        """The operator table's rows (see :func:`lamarck.reputation.book.table_rows`)."""
        return table_rows(
            self._book, principal_of=principal_of, accepted=accepted, rejected=rejected, peers=peers
        )

    async def history(self, node_id: str, limit: int = 100) -> list[ReputationEvent]:
        """``node_id``'s events, newest first, at most ``limit`` (capped at ``HISTORY_MAX``):
        the stored ones and those still queued. Raises ``StoreError`` like :meth:`load`."""
        limit = max(0, min(limit, HISTORY_MAX))
        queued = [e for e, _ in reversed(self._queue) if e.node_id == node_id]
        if len(queued) >= limit:
            return queued[:limit]
        async with db_guard(), self._pool().acquire() as conn:
            recs = await conn.fetch(_HISTORY, node_id, limit)
        keys = {e.key for e in queued}
        stored = [_event(r) for r in recs]
        return (queued + [e for e in stored if e.key not in keys])[:limit]

    # -- persistence (async, at the edge) -------------------------------------------------
    async def load(self) -> int:
        """Rebuild the book from the stored events; returns how many were replayed.

        Events emitted before ``load`` (still queued) are applied after the stored ones, as
        they will be written after them. Raises ``StoreError`` (``StoreUnavailable`` when
        Postgres is down, ``corrupt_reputation_event`` for a row that cannot be read back).
        """
        book = ReputationBook(self._params, self._replay_clock, self._trust)
        seen: set[str] = set()
        replayed = 0
        # A server-side cursor: memory stays bounded by the prefetch, not the history.
        async with db_guard(), self._pool().acquire() as conn, conn.transaction():
            async for rec in conn.cursor(_SELECT, prefetch=LOAD_PREFETCH):
                seen.add(rec["key"])  # _event checks that the event reproduces it
                self._apply(book, _event(rec), rec["emitted_at"])
                replayed += 1
        # The new book is swapped in without an await after this point: an emit during the
        # replay landed in the old book and in the queue, which is applied last.
        for event, emitted_at in self._queue:
            if event.key not in seen:
                seen.add(event.key)
                self._apply(book, event, emitted_at)
        self._book, self._seen = book, seen
        if self._trust.self_id:
            book.recompute_global_trust(self._clock.now(), self._summary_rows)
        return replayed

    async def flush(self) -> int:
        """Write the queued events durably; returns how many left the queue.

        Idempotent by key (a retry after a lost commit acknowledgement inserts nothing twice).
        On failure the unwritten events stay queued, in order, and the translated
        ``StoreError`` is raised (``StoreUnavailable`` when Postgres is down) with
        ``details["pending"]`` the number still queued.
        """
        # Serialised: two flushes would both write the queue's head and then each drop it.
        async with self._flush_lock:
            written = 0
            while self._queue:
                batch = self._queue[:FLUSH_BATCH]
                try:
                    async with self._pool().acquire() as conn, conn.transaction():
                        await conn.executemany(_INSERT, [_row(e, at) for e, at in batch])
                except TRANSLATED_ERRORS as e:
                    error = translate_error(e)
                    error.details["pending"] = len(self._queue)
                    raise error from e
                # Only emit appends meanwhile (same loop, at the tail): the head is the batch.
                del self._queue[: len(batch)]
                written += len(batch)
            return written

    def _apply(self, book: ReputationBook, event: ReputationEvent, at: datetime) -> None:
        # The inner book reads its clock only to start a new node's state at min(at, now):
        # pin it to the reading the live book had, so a replay rebuilds the same state.
        self._replay_clock.pinned = at
        try:
            book.emit(event)
        finally:
            self._replay_clock.pinned = None


def reputation_book_for(
    store: PostgresLessonStore, params: ReputationParams, clock: Clock, *, trust: TrustConfig
) -> PostgresReputation:
    """The reputation book that lives with ``store`` (its ``reputation_events`` table): the one
    place outside the store adapter that needs the store's pool."""
    return PostgresReputation(lambda: store.pool, params, clock, trust=trust)
