"""The lessons recall searches, held in memory: a recall's search without a database round trip.

Recall searches one set of rows: lessons (category ``lesson``) that are active or claimed and
have a vector. While that set is small (``RecallIndexParams.max_rows``), the Postgres adapter
keeps a copy of those rows and their vectors here and answers such a search by exact cosine
over them, as the in-memory adapter does (``exact_top_k``), instead of asking Postgres's HNSW
index. Measured on 2 cores with 2,000 lessons: the search's round trip cost a recall ~2.2 ms
in the node (Postgres's own execution is ~1.2 ms of it; the rest is waking a backend whose
core had gone idle while the model ran), against ~0.25 ms here.

The copy is kept true by the adapter, the only writer of its database: every statement that
writes a lesson *touches* its id (``touch``), and the next search re-reads the touched rows
before it answers (``dirty`` / ``refresh``); a write inside a unit of work touches its ids
again once the unit has committed or rolled back, so a search never keeps what another
connection read before the commit. Use marks, which every recall writes, are applied in
place (``apply_uses``) rather than re-read. Past ``max_rows`` the index gives its memory back
and the adapter searches in Postgres for the rest of the process's life.

Pure: no I/O. The adapter fetches rows and hands them in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from lamarck.domain.rows import (
    Category,
    LessonFilter,
    LessonRow,
    LessonStatus,
    RelevanceFloor,
    ScoredLesson,
    Vector,
)
from lamarck.errors import ConfigError

__all__ = [
    "COVERED_STATUSES",
    "HasRecallIndex",
    "RecallIndex",
    "RecallIndexParams",
    "RecallIndexState",
    "RecallIndexStatus",
    "covers",
    "exact_top_k",
    "is_covered",
]

#: The statuses the index holds: the ones recall asks for (``include_claimed`` adds claims).
COVERED_STATUSES: tuple[LessonStatus, ...] = (LessonStatus.ACTIVE, LessonStatus.CLAIMED)
_STATUS_CODE = {s: i for i, s in enumerate(COVERED_STATUSES)}


@dataclass(frozen=True, slots=True)
class RecallIndexParams:
    """How many recallable lessons the Postgres adapter keeps in memory for search."""

    #: Most rows held (active or claimed lessons with a vector). 2,000 bench lessons (their
    #: rows with signed records, vectors and the maps over them) held 10.2 MB. Beyond it,
    #: search goes to Postgres's HNSW index, faster than exact cosine at that size. 0: off.
    max_rows: int = 5000

    def __post_init__(self) -> None:
        """Refuse a value no index could use (``ConfigError`` naming the field)."""
        n = self.max_rows
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigError(f"RecallIndexParams.max_rows must be an int >= 0, got {n!r}")


def is_covered(row: LessonRow) -> bool:
    """Whether the index holds ``row``: a recallable lesson with a vector (the Postgres
    adapter's ``_COVERED`` says the same in SQL)."""
    return (
        row.category is Category.LESSON and row.status in _STATUS_CODE and row.embedding is not None
    )


def covers(flt: LessonFilter) -> bool:
    """Whether a search with ``flt`` reads only rows the index holds (and no condition it
    does not keep): lessons of covered statuses, by scope or not."""
    return (
        flt.category is Category.LESSON
        and bool(flt.statuses)
        and all(s in _STATUS_CODE for s in flt.statuses or ())
        and flt.operation is None
        and flt.about is None
        and flt.min_confidence is None
        and flt.imported is None
        and flt.content is None
        and flt.tags is None
        and flt.context is None
        and flt.sources is None
        and flt.content_hashes is None
    )


def exact_top_k(
    sims: npt.NDArray[np.float32],
    ids: Sequence[str],
    k: int,
    floor: RelevanceFloor | None,
) -> list[tuple[int, float]]:
    """The places of the top-``k`` similarities (ties by id), without the non-finite ones
    (a zero vector has no direction: Postgres's NaN), and with ``floor``, only those it keeps.

    The one ranking of exact search: the in-memory adapter's and the index's.
    """
    if k <= 0 or len(ids) == 0:
        return []
    places = np.flatnonzero(np.isfinite(sims))
    if len(places) > k:
        # Every place that can be in the top k, ties at the k-th value included.
        values = sims[places]
        kth = np.partition(values, len(values) - k)[len(values) - k]
        places = places[values >= kth]
    ranked = sorted(places.tolist(), key=lambda i: (-float(sims[i]), ids[i]))[:k]
    hits = [(i, float(sims[i])) for i in ranked]
    if floor is None or not hits:
        return hits
    cut = floor.cut(hits[0][1])
    return [(i, s) for i, s in hits if s >= cut]


class RecallIndexStatus(StrEnum):
    """Where recall's search is answered."""

    #: From memory, over ``RecallIndexState.lessons`` lessons.
    ON = "on"
    #: Not read since the node started or the store reconnected: the next recall reads it.
    NOT_READ = "not_read"
    #: More than ``max_rows`` lessons: in Postgres, for the rest of the process's life.
    OUTGROWN = "outgrown"
    #: Configured off (``max_rows`` 0): in Postgres.
    OFF = "off"


@dataclass(frozen=True, slots=True)
class RecallIndexState:
    """What an operator is told of the index (``lamarck node status``, the console)."""

    status: RecallIndexStatus
    lessons: int
    max_rows: int


@runtime_checkable
class HasRecallIndex(Protocol):
    """A lesson store that may answer recall's search from memory (the Postgres adapter)."""

    @property
    def recall_index_state(self) -> RecallIndexState:
        """The index's state now."""
        ...


class RecallIndex:
    """Recallable lessons and their vectors in memory, kept true by the adapter's touches."""

    def __init__(self, params: RecallIndexParams, dim: int) -> None:
        self.params = params
        self.dim = dim
        #: False once the rows outgrew ``max_rows`` (or with ``max_rows`` 0): search in SQL.
        self.enabled = params.max_rows > 0
        #: Whether the rows were read since the index was made or reset.
        self.loaded = False
        #: How many reads of rows (loads and refreshes) were taken in: a write that saw it
        #: change while it ran cannot tell whether the read already held it.
        self.reads = 0
        self._gen = 0
        self._reset_at = 0
        self._dirty: dict[str, int] = {}
        self._empty()

    def _empty(self) -> None:
        self._rows: dict[str, LessonRow] = {}
        self._slot: dict[str, int] = {}
        self._ids: list[str] = []
        self._scope_code: dict[str, int] = {}
        capacity = 0
        self._matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        self._norms = np.zeros(capacity, dtype=np.float32)
        self._status = np.zeros(capacity, dtype=np.int8)
        self._scope = np.zeros(capacity, dtype=np.int32)

    # -- what the adapter tells it ---------------------------------------------------------
    @property
    def generation(self) -> int:
        """A counter every touch advances: a read begun at generation g reflects the writes
        touched at or before g."""
        return self._gen

    def touch(self, ids: Iterable[str]) -> None:
        """These lessons were written (or may have been): re-read them before the next search."""
        if not self.enabled:
            return
        self._gen += 1
        for lesson_id in ids:
            self._dirty[lesson_id] = self._gen
        if len(self._dirty) > self.params.max_rows:
            # A bulk write (a catch-up): read them all again, size checked, not id by id.
            self.reset()

    def dirty(self) -> dict[str, int]:
        """The touched ids not re-read since, each with the generation of its last touch."""
        return dict(self._dirty)

    def reset(self) -> None:
        """Forget every row (the database may have changed under the adapter: a reconnect);
        the next search reads them all again."""
        self._gen += 1
        self._reset_at = self._gen
        self._dirty.clear()
        self.loaded = False
        self._empty()

    def disable(self) -> None:
        """Give the memory back for good: search in SQL from now on."""
        self.enabled = False
        self.reset()

    def load(self, rows: Iterable[LessonRow], since: int) -> None:
        """Hold exactly ``rows`` (every covered row, read after generation ``since``): ids
        touched meanwhile stay to be re-read. A reset since ``since`` forgot which ids were
        touched: the rows are not taken (the next search reads them again)."""
        if self._reset_at > since:
            return
        self._empty()
        for row in rows:
            self._put(row)
        self._settle({i: g for i, g in self._dirty.items() if g <= since})
        self.loaded = True
        self.reads += 1
        self._check_size()

    def refresh(self, read: Mapping[str, int], rows: Iterable[LessonRow]) -> None:
        """The rows of the ids in ``read`` (a ``dirty()`` snapshot) as they are now: an id
        without a row was deleted; one touched again since the read stays dirty."""
        found = {row.id: row for row in rows}
        for lesson_id in read:
            row = found.get(lesson_id)
            if row is not None and is_covered(row):
                self._put(row)
            else:
                self._drop(lesson_id)
        self._settle(read)
        self.reads += 1
        self._check_size()

    def apply_uses(self, counts: Mapping[str, int], latest: Mapping[str, datetime]) -> None:
        """The use marks just written (``mark_uses``): the same change, in place."""
        for lesson_id, n in counts.items():
            row = self._rows.get(lesson_id)
            if row is None:
                continue
            at = latest[lesson_id]
            last = at if row.last_used is None else max(row.last_used, at)
            self._rows[lesson_id] = dataclasses.replace(
                row, last_used=last, use_count=row.use_count + n
            )

    # -- search ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._ids)

    @property
    def state(self) -> RecallIndexState:
        """On (and over how many lessons), not read yet, outgrown or configured off."""
        max_rows = self.params.max_rows
        if max_rows == 0:
            return RecallIndexState(RecallIndexStatus.OFF, 0, 0)
        if not self.enabled:
            return RecallIndexState(RecallIndexStatus.OUTGROWN, 0, max_rows)
        if not self.loaded:
            return RecallIndexState(RecallIndexStatus.NOT_READ, 0, max_rows)
        return RecallIndexState(RecallIndexStatus.ON, len(self), max_rows)

    def search(
        self, query: Vector, k: int, flt: LessonFilter, floor: RelevanceFloor | None
    ) -> list[ScoredLesson]:
        """Exact top-``k`` by cosine among the held rows ``flt`` selects (``covers(flt)``)."""
        n = len(self._ids)
        if n == 0 or k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        q = q / np.float32(np.linalg.norm(q))
        # einsum, not a BLAS product: BLAS splits a product this size over threads that then
        # busy-wait for more work, on the cores the model's next run needs (2 cores: a
        # recall's p90 rose from ~9 to ~13 ms).
        with np.errstate(divide="ignore", invalid="ignore"):
            sims = np.einsum("ij,j->i", self._matrix[:n], q) / self._norms[:n]
        wanted = np.isin(self._status[:n], [_STATUS_CODE[s] for s in flt.statuses or ()])
        if flt.scopes is not None:
            codes = [self._scope_code[s] for s in flt.scopes if s in self._scope_code]
            wanted &= np.isin(self._scope[:n], codes)
        sims = np.where(wanted, sims, np.nan).astype(np.float32)
        # A hit's row gets its vector back (a copy: the matrix's rows move).
        return [
            ScoredLesson(
                dataclasses.replace(self._rows[self._ids[i]], embedding=self._matrix[i].copy()),
                s,
            )
            for i, s in exact_top_k(sims, self._ids, k, floor)
        ]

    # -- internals ---------------------------------------------------------------------------
    def _settle(self, read: Mapping[str, int]) -> None:
        for lesson_id, gen in read.items():
            if self._dirty.get(lesson_id) == gen:
                del self._dirty[lesson_id]

    def _check_size(self) -> None:
        if len(self._ids) > self.params.max_rows:
            self.disable()

    def _put(self, row: LessonRow) -> None:
        if not is_covered(row):
            self._drop(row.id)
            return
        vector = np.asarray(row.embedding, dtype=np.float32).reshape(-1)
        slot = self._slot.get(row.id)
        if slot is None:
            slot = len(self._ids)
            if slot == len(self._norms):
                self._grow(max(64, 2 * slot))
            self._slot[row.id] = slot
            self._ids.append(row.id)
        # The vector lives in the matrix only: a second copy in the row cost 1.6 KB a lesson.
        self._rows[row.id] = dataclasses.replace(row, embedding=None)
        self._matrix[slot] = vector
        self._norms[slot] = np.linalg.norm(vector)
        self._status[slot] = _STATUS_CODE[row.status]
        self._scope[slot] = self._scope_code.setdefault(row.scope, len(self._scope_code))

    def _drop(self, lesson_id: str) -> None:
        slot = self._slot.pop(lesson_id, None)
        if slot is None:
            return
        del self._rows[lesson_id]
        last = len(self._ids) - 1
        if slot != last:
            # The last row takes the freed place: the held rows stay one block.
            moved = self._ids[last]
            self._ids[slot] = moved
            self._slot[moved] = slot
            self._matrix[slot] = self._matrix[last]
            self._norms[slot] = self._norms[last]
            self._status[slot] = self._status[last]
            self._scope[slot] = self._scope[last]
        self._ids.pop()

    def _grow(self, capacity: int) -> None:
        n = len(self._ids)
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[:n] = self._matrix[:n]
        self._matrix = matrix
        self._norms = np.resize(self._norms, capacity)
        self._status = np.resize(self._status, capacity)
        self._scope = np.resize(self._scope, capacity)
