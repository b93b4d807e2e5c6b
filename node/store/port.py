"""The store's ports: what the node needs from persistence (its row types: ``rows.py``).

Nine narrow ports, each one responsibility of at most ten methods: ``StoreLifecycle``,
``OutcomeStore``, ``LessonRows``, ``LessonQueries``, ``LessonRecall``, ``ImportedLessons``,
``QuarantineStore``, ``EventLog`` and ``StateStore``. ``LessonStore`` is all of them at once:
adapters (``memory.py``, ``postgres.py``) implement it whole, and a consumer that needs only
part of it takes the narrow port it uses. The ports are protocols, so a consumer that reads two
or three of them names a protocol inheriting those (every ``LessonStore`` satisfies it). One
contract suite per port (``tests/contract/test_store_<port>_contract.py``) runs against each
adapter so they cannot drift. Rules (confidence, attribution, caps) live in
``lamarck.learning`` and are applied by ``lamarck.node.lessons.service``; the ports only
persist and query.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol, TypeVar

import numpy as np

from lamarck.domain.rows import (
    ImportedRecord,
    LessonEvent,
    LessonFacts,
    LessonFilter,
    LessonRow,
    LessonStatus,
    OutcomeRow,
    QuarantineRow,
    RejectionRow,
    RelevanceFloor,
    ScoredLesson,
    Vector,
)
from lamarck.errors import StoreError

__all__ = [
    "EventLog",
    "ImportedLessons",
    "LessonQueries",
    "LessonRecall",
    "LessonRows",
    "LessonStore",
    "OutcomeStore",
    "QuarantineStore",
    "StateStore",
    "StoreLifecycle",
    "checked_query",
    "keyset_pages",
]


_Row = TypeVar("_Row")


def checked_query(query: Vector, dim: int | None) -> Vector:
    """``query`` as a flat float32 vector, as every adapter's ``search`` takes it:
    ``StoreError`` ``dimension_mismatch`` when it does not have the store's ``dim`` (None: the
    store has none yet), ``invalid_query`` when it is zero or not finite."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if dim is not None and q.shape[0] != dim:
        raise StoreError(
            f"query has {q.shape[0]} dimensions, the store holds {dim}",
            reason="dimension_mismatch",
        )
    norm = float(np.linalg.norm(q))
    if not np.isfinite(norm) or norm == 0.0:
        raise StoreError("the query vector is zero or not finite", reason="invalid_query")
    return q


async def keyset_pages(
    fetch: Callable[[str, int], Awaitable[list[_Row]]], key: Callable[[_Row], str], page: int
) -> AsyncIterator[list[_Row]]:
    """Every row of a keyset read, ``page`` at a time: ``fetch(after, limit)`` answers the
    first ``limit`` rows whose key is above ``after`` ("" first), in key order (the store's
    ``scan_lessons``, ``imported_records``, ``lesson_facts``). A short page is the last."""
    after = ""
    while True:
        rows = await fetch(after, page)
        if rows:
            yield rows
        if len(rows) < page:
            return
        after = key(rows[-1])


class StoreLifecycle(Protocol):
    """Opening, closing and units of work of a store, and its counts.

    Every method raises a ``lamarck.errors.StoreError`` subclass on failure."""

    @abc.abstractmethod
    async def migrate(self) -> None:
        """Create or upgrade the schema; running it twice changes nothing."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections."""

    @abc.abstractmethod
    def atomic(self) -> AbstractAsyncContextManager[None]:
        """A unit of work: the store calls made inside the block commit together or not at all.

        For multi-row writes that must survive a crash whole (an outcome and what it
        teaches, a quarantine decision and its lesson, a retirement and its events). A
        nested block joins the outer one.
        """

    def bulk_load(self) -> AbstractAsyncContextManager[object]:
        """A block of many inserts (a long catch-up): an adapter may take its vector index
        down for the block and build it once at the end. Searches inside stay correct
        (exact). Blocks may overlap; the index returns when the last one ends. Adapters
        with no index to rebuild do nothing (this default)."""
        return contextlib.nullcontext(self)

    async def refresh_statistics(self, share: float) -> bool:
        """After a burst of writes (an import's end): bring the query planner's statistics
        up to date when the lessons inserted since they were last gathered are at least
        ``share`` of what they count, so searches right after use the vector index; True
        when gathered. Adapters with no planner do nothing (this default)."""
        del share
        return False

    @abc.abstractmethod
    async def stats(self) -> dict[str, int]:
        """Counts for metrics: lessons by status, outcomes, quarantine, rejections."""


class OutcomeStore(Protocol):
    """The outcomes the node's agents recorded.

    Every method raises a ``lamarck.errors.StoreError`` subclass on failure."""

    @abc.abstractmethod
    async def insert_outcome(self, outcome: OutcomeRow) -> None:
        """Store an outcome; a duplicate id raises ``ConflictError``."""

    @abc.abstractmethod
    async def get_outcome(self, outcome_id: str) -> OutcomeRow:
        """Return one outcome or raise ``NotFound``."""

    @abc.abstractmethod
    async def existing_outcome_ids(self, ids: Sequence[str]) -> set[str]:
        """Return the subset of ``ids`` that are stored outcomes."""

    @abc.abstractmethod
    async def list_outcomes(self, limit: int = 100, offset: int = 0) -> list[OutcomeRow]:
        """Newest first."""


class LessonRows(Protocol):
    """Lesson rows one at a time (or a batch): write, read back, supersede, delete.

    Every method raises a ``lamarck.errors.StoreError`` subclass on failure."""

    @abc.abstractmethod
    async def insert_lesson(self, lesson: LessonRow, events: Sequence[LessonEvent] = ()) -> None:
        """Store a new lesson (with its embedding); a duplicate id raises ``ConflictError``.

        ``events`` are appended to the event log in the same transaction.
        """

    @abc.abstractmethod
    async def insert_lessons(self, lessons: Sequence[LessonRow]) -> int:
        """Bulk insert (one transaction); returns the number inserted."""

    @abc.abstractmethod
    async def get_lesson(self, lesson_id: str) -> LessonRow:
        """Return one lesson or raise ``NotFound``."""

    @abc.abstractmethod
    async def get_lessons(self, ids: Sequence[str]) -> list[LessonRow]:
        """Return the stored lessons among ``ids`` (missing ids are skipped), in input order."""

    @abc.abstractmethod
    async def update_lesson(self, lesson: LessonRow, events: Sequence[LessonEvent] = ()) -> None:
        """Replace the mutable state of an existing lesson (same id); ``NotFound`` if absent.

        ``events`` are appended to the event log in the same transaction.

        The embedding is kept unless ``lesson.embedding`` is set.
        """

    @abc.abstractmethod
    async def supersede(self, old_id: str, new: LessonRow) -> None:
        """Atomically insert ``new`` and mark ``old_id`` superseded by it.

        Raises ``ConflictError`` if the old row is already superseded or retired.
        """

    @abc.abstractmethod
    async def history(self, lesson_id: str) -> list[LessonRow]:
        """The whole supersede chain containing ``lesson_id``, oldest first (one query)."""

    @abc.abstractmethod
    async def hard_delete(self, lesson_id: str) -> None:
        """Remove a lesson for good: only as an explicit user action."""


class LessonQueries(Protocol):
    """Reads over many lessons: filtered lists, keyset scans, counts and aggregates.

    Every method raises a ``lamarck.errors.StoreError`` subclass on failure."""

    @abc.abstractmethod
    async def list_lessons(self, flt: LessonFilter) -> list[LessonRow]:
        """Lessons matching the filter, highest confidence first, then newest."""

    @abc.abstractmethod
    async def scan_lessons(self, flt: LessonFilter, after: str, limit: int) -> list[LessonRow]:
        """Lessons matching ``flt`` in lesson id order, the first ``limit`` with an id above
        ``after`` ("" for the first page; ``flt.limit`` and ``offset`` do not apply).

        How a pass over every matching lesson pages (``scan``): no page sorts or skips the
        rows before it, and a row whose confidence moves between two pages is read exactly
        once (``list_lessons``' confidence order could skip it or read it twice)."""

    async def scan(self, flt: LessonFilter, page: int) -> AsyncIterator[list[LessonRow]]:
        """Every lesson matching ``flt``, ``page`` rows at a time (``scan_lessons``' pages)."""

        async def fetch(after: str, limit: int) -> list[LessonRow]:
            return await self.scan_lessons(flt, after, limit)

        async for rows in keyset_pages(fetch, lambda row: row.id, page):
            yield rows

    async def scan_all(self, flt: LessonFilter, page: int) -> list[LessonRow]:
        """Every lesson matching ``flt`` in one list, read ``page`` rows at a time (``scan``)."""
        return [row async for rows in self.scan(flt, page) for row in rows]

    @abc.abstractmethod
    async def count_lessons(self, flt: LessonFilter) -> int:
        """How many lessons match the filter (ignores limit/offset)."""

    @abc.abstractmethod
    async def lesson_facts(self, after: str, limit: int) -> list[LessonFacts]:
        """The facts of every lesson of category ``lesson`` in any status, in lesson id order,
        the first ``limit`` with an id above ``after`` ("" for the first page): the health
        report reads the whole store with these, never its whole rows."""

    @abc.abstractmethod
    async def retired_evidence_ids(self, among: Sequence[str] | None = None) -> set[str]:
        """Outcome ids cited by lessons a user retired: never re-learned from.

        With ``among``, only those of ``among`` (an indexed lookup about the ids at hand,
        which a per-call check uses so it does not grow with the store)."""

    @abc.abstractmethod
    async def proven_operations(self, operations: Sequence[str]) -> set[str]:
        """Of ``operations``, those an active lesson (category ``lesson``) that this node's
        own outcomes back is about (its ``operation``, exactly): a local lesson with
        evidence, or an imported copy an outcome here confirmed
        (``learning.conflicts.has_local_evidence``). One indexed query for a batch of
        imports: a copy on any other operation has no such lesson to contest."""

    @abc.abstractmethod
    async def project_scopes(self, limit: int) -> list[str]:
        """The project scopes this node works on: those of its own (not imported) lessons and
        of its outcomes' projects, sorted, at most ``limit`` (team sharing declares them)."""


class LessonRecall(Protocol):
    """Recall's side of the store: vector search, embeddings written behind, use marks.

    Every method raises a ``lamarck.errors.StoreError`` subclass on failure."""

    @abc.abstractmethod
    async def search(
        self, query: Vector, k: int, flt: LessonFilter, floor: RelevanceFloor | None = None
    ) -> list[ScoredLesson]:
        """Top-``k`` lessons by cosine similarity to ``query`` among those matching ``flt``;
        with ``floor``, only those of them it keeps (``RelevanceFloor.cut`` of their best)."""

    @abc.abstractmethod
    async def set_embeddings(self, vectors: Sequence[tuple[str, Vector]]) -> None:
        """Set each listed lesson's embedding and nothing else (one round trip); unknown ids
        are skipped. A vector of another dimension is refused (``StoreError``,
        ``dimension_mismatch``) and nothing is set."""

    @abc.abstractmethod
    async def unembedded(self, limit: int) -> list[tuple[str, str]]:
        """``(id, content)`` of up to ``limit`` claimed or active lessons with no embedding
        (an embedding deferred by a write-behind that did not finish), oldest first."""

    @abc.abstractmethod
    async def mark_uses(self, uses: Sequence[tuple[Sequence[str], datetime]]) -> None:
        """Record the uses of many recalls in one write: for each ``(lesson_ids, at)``, one use
        of each lesson (``last_used`` the latest of its value and every ``at``, ``use_count``
        up by the uses); unknown ids are skipped. Marks written behind replies can arrive
        late, and a burst of recalls leaves many queued."""

    async def mark_used(self, lesson_ids: Sequence[str], now: datetime) -> None:
        """Record one use of each lesson at ``now`` (``mark_uses`` of one recall)."""
        await self.mark_uses([(lesson_ids, now)])


class ImportedLessons(Protocol):
    """What the import pipeline and sharing read about lessons that came from peers.

    Every method raises a ``lamarck.errors.StoreError`` subclass on failure."""

    @abc.abstractmethod
    async def find_by_content_hash(self, content_hash: str) -> LessonRow | None:
        """The lesson imported from the record with this content hash, if any."""

    @abc.abstractmethod
    async def imported_records(self, after: str, limit: int) -> list[ImportedRecord]:
        """Imported lessons that hold their signed record and content hash, in lesson id
        order, the first ``limit`` with an id above ``after`` ("" for the first page): the
        import index is rebuilt from these at start, and a Sync offers the live public ones,
        without reading whole rows."""

    @abc.abstractmethod
    async def imported_per_source(self) -> dict[str, int]:
        """Imported lessons (every version) per source node id, counted where they are
        stored (the reputation table's "accepted" column; rows without a source skipped)."""

    @abc.abstractmethod
    async def import_sources(self, statuses: Sequence[LessonStatus]) -> set[str]:
        """The nodes (``imported_from``) that lessons in one of ``statuses`` were imported
        from: one aggregate, no rows read back (the taint sweep asks which of them are
        tainted before it reads any lesson)."""


class QuarantineStore(Protocol):
    """Records held for an operator's review, and the decisions on them.

    Every method raises a ``lamarck.errors.StoreError`` subclass on failure."""

    @abc.abstractmethod
    async def quarantine(self, row: QuarantineRow) -> None:
        """Hold a record for review (idempotent by content hash)."""

    @abc.abstractmethod
    async def list_quarantine(self, state: str | None = "pending") -> list[QuarantineRow]:
        """Quarantined records, oldest first."""

    @abc.abstractmethod
    async def get_quarantine(self, quarantine_id: str) -> QuarantineRow:
        """One quarantined record in any state, or ``NotFound``."""

    @abc.abstractmethod
    async def quarantine_of(self, content_hash: str) -> QuarantineRow | None:
        """The quarantined record holding ``content_hash`` in any state (hashes are unique in
        the quarantine), or ``None``."""

    @abc.abstractmethod
    async def quarantine_reasons(self, state: str = "pending") -> dict[tuple[str, ...], int]:
        """How many quarantined records in ``state`` hold each set of reasons (sorted): the
        status counts them without reading the held records."""

    @abc.abstractmethod
    async def set_quarantine_state(self, quarantine_id: str, state: str) -> QuarantineRow:
        """Mark a quarantined record approved or rejected; returns the updated row."""


class EventLog(Protocol):
    """Append-only history: the lesson event log and the rejection log.

    Every method raises a ``lamarck.errors.StoreError`` subclass on failure."""

    @abc.abstractmethod
    async def append_events(self, events: Sequence[LessonEvent]) -> None:
        """Append to the event log (one transaction); an unknown kind raises ``InvalidRecord``."""

    @abc.abstractmethod
    async def lesson_events(self, lesson_ids: Sequence[str]) -> list[LessonEvent]:
        """The events about any of ``lesson_ids``, oldest first (ties in append order)."""

    @abc.abstractmethod
    async def record_rejection(self, row: RejectionRow) -> None:
        """Append to the rejection log."""

    @abc.abstractmethod
    async def list_rejections(self, limit: int = 100) -> list[RejectionRow]:
        """Newest first."""


class StateStore(Protocol):
    """Small JSON documents the node keeps under a key (what its learners learned).

    Every method raises a ``lamarck.errors.StoreError`` subclass on failure."""

    @abc.abstractmethod
    async def get_state(self, key: str) -> dict[str, Any] | None:
        """The JSON document the node stored under ``key`` (e.g. what the context-variable
        learner has learned), or ``None`` when nothing is stored."""

    @abc.abstractmethod
    async def put_state(self, key: str, document: dict[str, Any]) -> None:
        """Store ``document`` (JSON-ready) under ``key``, replacing what was there."""


class LessonStore(
    StoreLifecycle,
    OutcomeStore,
    LessonRows,
    LessonQueries,
    LessonRecall,
    ImportedLessons,
    QuarantineStore,
    EventLog,
    StateStore,
):
    """Persistence for lessons, outcomes, quarantine and rejections: every narrow port at once.

    An adapter implements this whole; a consumer that needs only part of it takes the narrow
    port it uses. Every method raises a ``lamarck.errors.StoreError`` subclass on failure
    (``NotFound``, ``ConflictError``, ``StoreUnavailable``); backend exceptions never leak.
    """
