"""In-memory ``LessonStore``: exact cosine search with numpy, the same semantics as Postgres.

Used by pure tests, the service tests and the fleet simulator. The contract suites
(``tests/contract/test_store_<port>_contract.py``) run it side by side with the Postgres
adapter, so every rule written here (ordering, ties, conflicts, error types) is the rule the
Postgres adapter follows too.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from lamarck.domain.rows import (
    Category,
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
    check_event_kinds,
    lesson_sort_key,
)
from lamarck.errors import ConflictError, NotFound, StoreError
from lamarck.learning.conflicts import has_local_evidence
from lamarck.learning.mechanical import is_about
from lamarck.learning.scopes import PROJECT_PREFIX
from lamarck.node.store.port import LessonStore
from lamarck.node.store.recall_index import exact_top_k

__all__ = [
    "QUARANTINE_STATES",
    "RETIRED_PREFIX",
    "InMemoryLessonStore",
    "lesson_matches",
]

#: ``superseded_by`` values starting with this mark a retirement, not a newer version.
RETIRED_PREFIX = "retired:"
#: The states a quarantined record can be in.
QUARANTINE_STATES = frozenset({"pending", "approved", "rejected"})


def lesson_matches(lesson: LessonRow, flt: LessonFilter) -> bool:
    """Whether ``lesson`` passes ``flt`` (limit and offset aside).

    ``imported`` means the lesson came from a peer: ``imported_from`` is set.
    """
    if flt.statuses is not None and lesson.status not in flt.statuses:
        return False
    if flt.scopes is not None and lesson.scope not in flt.scopes:
        return False
    if flt.category is not None and lesson.category != flt.category:
        return False
    if flt.operation is not None and lesson.operation != flt.operation:
        return False
    if flt.content is not None and lesson.content != flt.content:
        return False
    if flt.about is not None and not is_about(
        flt.about,
        lesson.operation,
        lesson.tags,
        None if lesson.situation is None else lesson.situation.get("tool"),
    ):
        return False
    if flt.min_confidence is not None and lesson.confidence < flt.min_confidence:
        return False
    if flt.tags is not None and not set(flt.tags).issubset(lesson.tags):
        return False
    if flt.context is not None and any(lesson.context.get(k) != v for k, v in flt.context):
        return False
    if flt.sources is not None and lesson.imported_from not in flt.sources:
        return False
    if flt.content_hashes is not None and lesson.content_hash not in flt.content_hashes:
        return False
    return flt.imported is None or (lesson.imported_from is not None) == flt.imported


def _frozen_vector(vector: Vector | None) -> Vector | None:
    # Copy and freeze: a caller mutating its array must not change what the store holds.
    if vector is None:
        return None
    copy = np.array(vector, dtype=np.float32, copy=True).reshape(-1)
    copy.setflags(write=False)
    return copy


def _unit_query(query: Vector, dim: int | None) -> Vector:
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if dim is not None and q.shape[0] != dim:
        raise StoreError(
            f"query has {q.shape[0]} dimensions, the store holds {dim}",
            reason="dimension_mismatch",
        )
    norm = float(np.linalg.norm(q))
    if not np.isfinite(norm) or norm == 0.0:
        raise StoreError("the query vector is zero or not finite", reason="invalid_query")
    return (q / norm).astype(np.float32)


class InMemoryLessonStore(LessonStore):
    """A ``LessonStore`` held in dicts; search is exact cosine over every matching lesson.

    ``dim``, when given, is enforced on every stored embedding and every query, as the
    Postgres column ``vector(dim)`` does.
    """

    def __init__(self, dim: int | None = None) -> None:
        self._dim = dim
        self._lessons: dict[str, LessonRow] = {}
        self._outcomes: dict[str, OutcomeRow] = {}
        self._quarantine: dict[str, QuarantineRow] = {}
        self._rejections: list[RejectionRow] = []
        self._events: list[LessonEvent] = []
        self._state: dict[str, dict[str, Any]] = {}
        # One lock makes each method atomic against the others, like one SQL transaction.
        self._lock = asyncio.Lock()
        self._in_unit = False

    # -- lifecycle -------------------------------------------------------------------------
    async def migrate(self) -> None:
        """Nothing to create: the dicts are the schema."""

    async def close(self) -> None:
        """Nothing to release."""

    @contextlib.asynccontextmanager
    async def atomic(self) -> AsyncIterator[None]:
        """All or nothing: a failure inside the block restores what the store held before.

        Rows are frozen, so shallow copies are a faithful snapshot. (Writes other tasks
        make during the block are undone with it: this adapter serves tests and the
        simulator, where one unit of work runs at a time.)
        """
        if self._in_unit:
            yield
            return
        snapshot = (
            dict(self._lessons),
            dict(self._outcomes),
            dict(self._quarantine),
            list(self._rejections),
            list(self._events),
            dict(self._state),
        )
        self._in_unit = True
        try:
            yield
        except BaseException:
            (
                self._lessons,
                self._outcomes,
                self._quarantine,
                self._rejections,
                self._events,
                self._state,
            ) = snapshot
            raise
        finally:
            self._in_unit = False

    # -- outcomes --------------------------------------------------------------------------
    async def insert_outcome(self, outcome: OutcomeRow) -> None:
        """Store an outcome; a duplicate id raises ``ConflictError``."""
        async with self._lock:
            if outcome.id in self._outcomes:
                raise ConflictError(f"outcome {outcome.id} exists", reason="duplicate_id")
            self._outcomes[outcome.id] = outcome

    async def get_outcome(self, outcome_id: str) -> OutcomeRow:
        """Return one outcome or raise ``NotFound``."""
        try:
            return self._outcomes[outcome_id]
        except KeyError:
            raise NotFound(f"outcome {outcome_id} not found", id=outcome_id) from None

    async def existing_outcome_ids(self, ids: Sequence[str]) -> set[str]:
        """Return the subset of ``ids`` that are stored outcomes."""
        return {i for i in ids if i in self._outcomes}

    async def list_outcomes(self, limit: int = 100, offset: int = 0) -> list[OutcomeRow]:
        """Newest first (ties by id)."""
        rows = sorted(self._outcomes.values(), key=lambda o: o.id)
        rows.sort(key=lambda o: o.created_at, reverse=True)
        return rows[offset : offset + limit]

    # -- lessons ---------------------------------------------------------------------------
    def _check_new(self, lesson: LessonRow, pending: Iterable[LessonRow] = ()) -> LessonRow:
        # Same constraints as the SQL schema: primary key, unique content hash, vector(dim).
        ids = {p.id for p in pending}
        if lesson.id in self._lessons or lesson.id in ids:
            raise ConflictError(f"lesson {lesson.id} exists", reason="duplicate_id")
        if lesson.content_hash is not None:
            hashes = {p.content_hash for p in pending}
            if lesson.content_hash in hashes or any(
                other.content_hash == lesson.content_hash for other in self._lessons.values()
            ):
                raise ConflictError(
                    f"a lesson with content hash {lesson.content_hash} exists",
                    reason="duplicate_content_hash",
                )
        return self._normalise(lesson)

    def _normalise(self, lesson: LessonRow) -> LessonRow:
        vector = _frozen_vector(lesson.embedding)
        if vector is not None and self._dim is not None and vector.shape[0] != self._dim:
            raise StoreError(
                f"embedding has {vector.shape[0]} dimensions, the store holds {self._dim}",
                reason="dimension_mismatch",
            )
        return dataclasses.replace(lesson, embedding=vector)

    async def insert_lesson(self, lesson: LessonRow, events: Sequence[LessonEvent] = ()) -> None:
        """Store a new lesson (and append ``events``); a duplicate id or content hash raises
        ``ConflictError``."""
        check_event_kinds(events)
        async with self._lock:
            row = self._check_new(lesson)
            self._lessons[row.id] = row
            self._events.extend(events)

    async def insert_lessons(self, lessons: Sequence[LessonRow]) -> int:
        """Bulk insert, all or nothing; returns the number inserted."""
        async with self._lock:
            accepted: list[LessonRow] = []
            for lesson in lessons:
                accepted.append(self._check_new(lesson, accepted))
            for row in accepted:
                self._lessons[row.id] = row
            return len(accepted)

    async def get_lesson(self, lesson_id: str) -> LessonRow:
        """Return one lesson or raise ``NotFound``."""
        try:
            return self._lessons[lesson_id]
        except KeyError:
            raise NotFound(f"lesson {lesson_id} not found", id=lesson_id) from None

    async def get_lessons(self, ids: Sequence[str]) -> list[LessonRow]:
        """Return the stored lessons among ``ids`` (missing ids skipped), in input order."""
        return [self._lessons[i] for i in ids if i in self._lessons]

    async def update_lesson(self, lesson: LessonRow, events: Sequence[LessonEvent] = ()) -> None:
        """Replace an existing lesson's state (and append ``events``); the embedding is kept
        unless one is given."""
        check_event_kinds(events)
        async with self._lock:
            current = self._lessons.get(lesson.id)
            if current is None:
                raise NotFound(f"lesson {lesson.id} not found", id=lesson.id)
            if lesson.content_hash is not None and any(
                other.content_hash == lesson.content_hash and other.id != lesson.id
                for other in self._lessons.values()
            ):
                raise ConflictError(
                    f"a lesson with content hash {lesson.content_hash} exists",
                    reason="duplicate_content_hash",
                )
            row = self._normalise(lesson)
            if row.embedding is None:
                row = dataclasses.replace(row, embedding=current.embedding)
            self._lessons[row.id] = row
            self._events.extend(events)

    async def supersede(self, old_id: str, new: LessonRow) -> None:
        """Insert ``new`` (its ``supersedes`` set to ``old_id``) and mark the old row superseded.

        ``NotFound`` if the old row is absent; ``ConflictError`` if it is already superseded or
        retired, or if ``new`` collides with a stored lesson.
        """
        async with self._lock:
            old = self._lessons.get(old_id)
            if old is None:
                raise NotFound(f"lesson {old_id} not found", id=old_id)
            if old.superseded_by is not None or old.status in (
                LessonStatus.SUPERSEDED,
                LessonStatus.RETIRED,
            ):
                raise ConflictError(
                    f"lesson {old_id} is already superseded or retired",
                    reason="already_superseded",
                    id=old_id,
                )
            row = self._check_new(dataclasses.replace(new, supersedes=old_id))
            self._lessons[row.id] = row
            self._lessons[old_id] = dataclasses.replace(
                old,
                superseded_by=row.id,
                status=LessonStatus.SUPERSEDED,
                updated_at=row.updated_at,
            )

    async def history(self, lesson_id: str) -> list[LessonRow]:
        """The supersede chain containing ``lesson_id``, oldest first; ``NotFound`` if absent."""
        start = await self.get_lesson(lesson_id)
        older: list[LessonRow] = []
        seen = {start.id}
        cursor = start.supersedes
        while cursor is not None and cursor in self._lessons and cursor not in seen:
            row = self._lessons[cursor]
            older.append(row)
            seen.add(cursor)
            cursor = row.supersedes
        newer: list[LessonRow] = []
        cursor = start.superseded_by
        while cursor is not None and cursor in self._lessons and cursor not in seen:
            row = self._lessons[cursor]
            newer.append(row)
            seen.add(cursor)
            cursor = row.superseded_by
        return [*reversed(older), start, *newer]

    def _matching(self, flt: LessonFilter) -> list[LessonRow]:
        return [row for row in self._lessons.values() if lesson_matches(row, flt)]

    async def list_lessons(self, flt: LessonFilter) -> list[LessonRow]:
        """Lessons matching the filter: highest confidence first, then newest, then id."""
        rows = sorted(self._matching(flt), key=lesson_sort_key)
        return rows[flt.offset : flt.offset + flt.limit]

    async def scan_lessons(self, flt: LessonFilter, after: str, limit: int) -> list[LessonRow]:
        """Lessons matching the filter in id order, the first ``limit`` above ``after``."""
        rows = sorted((r for r in self._matching(flt) if r.id > after), key=lambda r: r.id)
        return rows[:limit]

    async def search(
        self, query: Vector, k: int, flt: LessonFilter, floor: RelevanceFloor | None = None
    ) -> list[ScoredLesson]:
        """Exact top-``k`` by cosine similarity among matching lessons that have an embedding.

        Ties are broken by id; ``flt.limit``/``offset`` do not apply (``k`` does).
        """
        if k <= 0:
            return []
        q = _unit_query(query, self._dim)
        rows = [r for r in self._matching(flt) if r.embedding is not None]
        if not rows:
            return []
        matrix = np.stack([r.embedding for r in rows if r.embedding is not None])
        norms = np.linalg.norm(matrix, axis=1)
        # A zero vector has no direction: Postgres returns NaN distance for it; never a hit.
        with np.errstate(divide="ignore", invalid="ignore"):
            sims = (matrix @ q) / norms
        ranked = exact_top_k(sims, [r.id for r in rows], k, floor)
        return [ScoredLesson(rows[i], s) for i, s in ranked]

    async def count_lessons(self, flt: LessonFilter) -> int:
        """How many lessons match the filter (ignores limit/offset)."""
        return len(self._matching(flt))

    async def set_embeddings(self, vectors: Sequence[tuple[str, Vector]]) -> None:
        """Set each listed lesson's embedding only; unknown ids are skipped."""
        async with self._lock:
            # The same dimension check an insert makes, all before any is set.
            updated = [
                self._normalise(dataclasses.replace(row, embedding=vector))
                for lesson_id, vector in vectors
                if (row := self._lessons.get(lesson_id)) is not None
            ]
            for row in updated:
                self._lessons[row.id] = row

    async def unembedded(self, limit: int) -> list[tuple[str, str]]:
        """Claimed or active lessons with no embedding, oldest first."""
        rows = sorted(
            (
                r
                for r in self._lessons.values()
                if r.embedding is None and r.status in (LessonStatus.CLAIMED, LessonStatus.ACTIVE)
            ),
            key=lambda r: (r.created_at, r.id),
        )
        return [(r.id, r.content) for r in rows[: max(0, limit)]]

    async def retired_evidence_ids(self, among: Sequence[str] | None = None) -> set[str]:
        """Outcome ids cited by any lesson whose ``superseded_by`` is ``retired:<who>``; with
        ``among``, only those ids."""
        ids: set[str] = set()
        for row in self._lessons.values():
            if row.superseded_by is not None and row.superseded_by.startswith(RETIRED_PREFIX):
                ids.update(row.evidence)
        return ids if among is None else ids.intersection(among)

    async def find_by_content_hash(self, content_hash: str) -> LessonRow | None:
        """The lesson stored with this content hash, if any."""
        for row in self._lessons.values():
            if row.content_hash == content_hash:
                return row
        return None

    async def proven_operations(self, operations: Sequence[str]) -> set[str]:
        """Of ``operations``, those an active lesson this node's outcomes back is about."""
        wanted = set(operations)
        return {
            row.operation
            for row in self._lessons.values()
            if row.operation in wanted
            and row.status is LessonStatus.ACTIVE
            and row.category is Category.LESSON
            and has_local_evidence(row)
        }

    async def project_scopes(self, limit: int) -> list[str]:
        """Project scopes of own lessons and of outcomes, sorted, at most ``limit``."""
        scopes = {
            r.scope
            for r in self._lessons.values()
            if r.imported_from is None and r.scope.startswith(PROJECT_PREFIX)
        }
        scopes |= {PROJECT_PREFIX + o.project for o in self._outcomes.values() if o.project}
        return sorted(scopes)[:limit]

    async def imported_records(self, after: str, limit: int) -> list[ImportedRecord]:
        """Imported lessons with a signed record and content hash, by id after ``after``."""
        found = sorted(
            (r for r in self._lessons.values() if r.imported_from is not None and r.id > after),
            key=lambda r: r.id,
        )
        return [
            ImportedRecord(
                r.id,
                r.content_hash,
                r.created_at,
                r.signed_record,
                r.status,
                r.access_level,
                r.scope,
            )
            for r in found
            if r.signed_record is not None and r.content_hash is not None
        ][:limit]

    async def imported_per_source(self) -> dict[str, int]:
        """Imported lessons (every version) per source node id."""
        out: dict[str, int] = {}
        for r in self._lessons.values():
            if r.imported_from is not None and r.source_node_id:
                out[r.source_node_id] = out.get(r.source_node_id, 0) + 1
        return out

    async def import_sources(self, statuses: Sequence[LessonStatus]) -> set[str]:
        """The nodes lessons in ``statuses`` were imported from."""
        wanted = set(statuses)
        return {
            r.imported_from
            for r in self._lessons.values()
            if r.imported_from is not None and r.status in wanted
        }

    async def lesson_facts(self, after: str, limit: int) -> list[LessonFacts]:
        """Lessons (category ``lesson``, any status) by id after ``after``: their facts."""
        found = sorted(
            (r for r in self._lessons.values() if r.category is Category.LESSON and r.id > after),
            key=lambda r: r.id,
        )[:limit]
        return [
            LessonFacts(
                r.id, r.status, r.confidence, r.created_at, r.last_used, dict(r.context), r.category
            )
            for r in found
        ]

    async def mark_uses(self, uses: Sequence[tuple[Sequence[str], datetime]]) -> None:
        """One use of each lesson per entry; unknown ids are skipped. ``updated_at`` stays: a
        use is not a signed field, so it must not make a newer version of the record."""
        for lesson_ids, now in uses:
            for lesson_id in dict.fromkeys(lesson_ids):
                row = self._lessons.get(lesson_id)
                if row is not None:
                    # The latest use wins (a use mark written behind a reply may come late).
                    last = now if row.last_used is None else max(row.last_used, now)
                    self._lessons[lesson_id] = dataclasses.replace(
                        row, last_used=last, use_count=row.use_count + 1
                    )

    async def hard_delete(self, lesson_id: str) -> None:
        """Remove a lesson for good; ``NotFound`` if absent."""
        async with self._lock:
            if self._lessons.pop(lesson_id, None) is None:
                raise NotFound(f"lesson {lesson_id} not found", id=lesson_id)
            self._events = [e for e in self._events if e.lesson_id != lesson_id]

    # -- quarantine and rejections ---------------------------------------------------------
    async def quarantine(self, row: QuarantineRow) -> None:
        """Hold a record for review; a second record with the same content hash is a no-op."""
        if row.state not in QUARANTINE_STATES:
            raise StoreError(f"unknown quarantine state {row.state!r}", reason="bad_state")
        async with self._lock:
            if any(q.content_hash == row.content_hash for q in self._quarantine.values()):
                return
            if row.id in self._quarantine:
                raise ConflictError(f"quarantine {row.id} exists", reason="duplicate_id")
            self._quarantine[row.id] = row

    async def list_quarantine(self, state: str | None = "pending") -> list[QuarantineRow]:
        """Quarantined records in ``state`` (all when ``None``), oldest first, ties by id."""
        rows = [q for q in self._quarantine.values() if state is None or q.state == state]
        return sorted(rows, key=lambda q: (q.received_at, q.id))

    async def get_quarantine(self, quarantine_id: str) -> QuarantineRow:
        """One quarantined record in any state, or ``NotFound``."""
        row = self._quarantine.get(quarantine_id)
        if row is None:
            raise NotFound(f"quarantine {quarantine_id} not found", id=quarantine_id)
        return row

    async def quarantine_of(self, content_hash: str) -> QuarantineRow | None:
        """The quarantined record holding ``content_hash``, or ``None``."""
        return next((q for q in self._quarantine.values() if q.content_hash == content_hash), None)

    async def quarantine_reasons(self, state: str = "pending") -> dict[tuple[str, ...], int]:
        """Quarantined records in ``state`` per set of reasons (sorted)."""
        out: dict[tuple[str, ...], int] = {}
        for row in self._quarantine.values():
            if row.state == state:
                key = tuple(sorted(set(row.reasons)))
                out[key] = out.get(key, 0) + 1
        return out

    async def set_quarantine_state(self, quarantine_id: str, state: str) -> QuarantineRow:
        """Mark a quarantined record approved, rejected or pending; returns the updated row."""
        if state not in QUARANTINE_STATES:
            raise StoreError(f"unknown quarantine state {state!r}", reason="bad_state")
        async with self._lock:
            current = self._quarantine.get(quarantine_id)
            if current is None:
                raise NotFound(f"quarantine {quarantine_id} not found", id=quarantine_id)
            updated = dataclasses.replace(current, state=state)
            self._quarantine[quarantine_id] = updated
            return updated

    async def record_rejection(self, row: RejectionRow) -> None:
        """Append to the rejection log."""
        async with self._lock:
            self._rejections.append(row)

    async def list_rejections(self, limit: int = 100) -> list[RejectionRow]:
        """Newest first; equal times keep the newest-appended first."""
        indexed = list(enumerate(self._rejections))
        indexed.sort(key=lambda pair: (pair[1].received_at, pair[0]), reverse=True)
        return [row for _, row in indexed[:limit]]

    # -- lesson event log ------------------------------------------------------------------
    async def append_events(self, events: Sequence[LessonEvent]) -> None:
        """Append to the event log; an unknown kind refuses the whole batch."""
        check_event_kinds(events)
        async with self._lock:
            self._events.extend(events)

    async def lesson_events(self, lesson_ids: Sequence[str]) -> list[LessonEvent]:
        """The events about any of ``lesson_ids``, oldest first (ties in append order)."""
        wanted = set(lesson_ids)
        return sorted((e for e in self._events if e.lesson_id in wanted), key=lambda e: e.at)

    # -- node state ------------------------------------------------------------------------
    async def get_state(self, key: str) -> dict[str, Any] | None:
        """A copy of the document stored under ``key`` (a round trip through JSON, as the
        Postgres column gives), or ``None``."""
        raw = self._state.get(key)
        return None if raw is None else json.loads(json.dumps(raw))

    async def put_state(self, key: str, document: dict[str, Any]) -> None:
        """Store a JSON copy of ``document`` under ``key``; a value JSON cannot hold raises
        ``StoreError`` (``invalid_value``), as the jsonb column does."""
        try:
            copy = json.loads(json.dumps(document))
        except (TypeError, ValueError) as e:
            raise StoreError(f"state {key!r} is not JSON: {e}", reason="invalid_value") from e
        async with self._lock:
            self._state[key] = copy

    # -- stats -----------------------------------------------------------------------------
    async def stats(self) -> dict[str, int]:
        """Counts: ``lessons_<status>`` for every status, outcomes, quarantine, rejections."""
        counts = {f"lessons_{status.value}": 0 for status in LessonStatus}
        for row in self._lessons.values():
            counts[f"lessons_{row.status.value}"] += 1
        counts["outcomes"] = len(self._outcomes)
        counts["quarantine_pending"] = sum(
            1 for q in self._quarantine.values() if q.state == "pending"
        )
        counts["quarantine"] = len(self._quarantine)
        counts["rejections"] = len(self._rejections)
        return counts
