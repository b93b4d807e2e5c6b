"""The lessons recall searches, held in memory: a recall's search without a database round trip.

Recall searches one set of rows: lessons (category ``lesson``) that are active or claimed and
have a vector. While that set is small (``RecallIndexParams.rows_held``), the Postgres adapter
keeps a copy of those rows and their vectors here and answers such a search by exact cosine
over them, as the in-memory adapter does (``exact_top_k``), instead of asking Postgres's HNSW
index. Past that, up to ``max_rows``, it keeps a compact form (int8 vectors and sign bits,
``RecallIndex``) that names a search's winners, whose rows the adapter reads by id (keeping
the ``rows_held`` most recently read) and this index scores exactly. Measured on 2 cores
with 2,000 lessons: the search's round trip cost a recall ~2.2 ms in the node (Postgres's own
execution is ~1.2 ms of it; the rest is waking a backend whose core had gone idle while the
model ran), against ~0.25 ms here.

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
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

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
    "VectorRow",
    "covers",
    "exact_top_k",
    "is_covered",
]

#: The statuses the index holds: the ones recall asks for (``include_claimed`` adds claims).
COVERED_STATUSES: tuple[LessonStatus, ...] = (LessonStatus.ACTIVE, LessonStatus.CLAIMED)
_STATUS_CODE = {s: i for i, s in enumerate(COVERED_STATUSES)}


@dataclass(frozen=True, slots=True)
class RecallIndexParams:
    """How many recallable lessons the Postgres adapter keeps in memory for search, and how."""

    #: Most lessons held (active or claimed, with a vector); beyond it, search goes to
    #: Postgres's HNSW index for the rest of the process's life. 0: off. At 100k lessons of
    #: 384 dims the compact form holds ~60 MB (int8 vectors 38 MB, sign bits 5 MB, ids and
    #: maps the rest).
    max_rows: int = 200_000
    #: Up to this many lessons, whole rows and float vectors are held: exact cosine, no round
    #: trip (2,000 bench lessons, their rows with signed records, held 10.2 MB). Past it the
    #: index holds the compact form, reads the rows of a search's winners by id and keeps
    #: this many of them, the most recently used (a later search finding all its winners
    #: kept makes no round trip).
    rows_held: int = 5000
    #: Compact form: candidates taken by the Hamming distance of the vectors' sign bits (one
    #: pass over 6 words a lesson) and re-scored from the int8 vectors.
    shortlist: int = 768
    #: Compact form: candidates beyond ``k`` whose rows are read and scored exactly.
    rescore_extra: int = 8
    #: Compact form: the most an int8 cosine can be off (per-vector scale: measured under
    #: 0.004 on MiniLM vectors): no candidate within it of the relevance floor is dropped
    #: before its exact score is known.
    rescore_margin: float = 0.02

    def __post_init__(self) -> None:
        """Refuse a value no index could use (``ConfigError`` naming the field)."""
        for name, least in (
            ("max_rows", 0),
            ("rows_held", 0),
            ("shortlist", 1),
            ("rescore_extra", 0),
        ):
            n = getattr(self, name)
            if isinstance(n, bool) or not isinstance(n, int) or n < least:
                raise ConfigError(f"RecallIndexParams.{name} must be an int >= {least}, got {n!r}")
        m = self.rescore_margin
        if isinstance(m, bool) or not isinstance(m, int | float) or not 0.0 <= m < 1.0:
            raise ConfigError(f"RecallIndexParams.rescore_margin must be in [0, 1), got {m!r}")


@dataclass(frozen=True, slots=True)
class VectorRow:
    """What the compact form needs of a lesson: the adapter reads these, not whole rows,
    when it loads more than ``rows_held`` lessons."""

    id: str
    status: LessonStatus
    scope: str
    embedding: Vector


def is_covered(row: LessonRow | VectorRow) -> bool:
    """Whether the index holds ``row``: a recallable lesson with a vector (the Postgres
    adapter's ``_COVERED`` says the same in SQL, and reads only such rows as ``VectorRow``)."""
    return (
        (isinstance(row, VectorRow) or row.category is Category.LESSON)
        and row.status in _STATUS_CODE
        and row.embedding is not None
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
    """Recallable lessons and their vectors in memory, kept true by the adapter's touches.

    Two forms. While it holds at most ``rows_held`` lessons: whole rows and float vectors,
    searched exactly (``search``). Past that, compact: per lesson an int8 vector (its unit
    vector times a per-vector scale) and the sign bits of its unit vector less the held
    vectors' mean; a search takes the ``shortlist`` nearest by Hamming distance, re-scores
    them from the int8 vectors and names the few best (``shortlist``) whose rows the adapter
    then reads and this index scores exactly (``rank``). The int8 vectors and sign bits are
    kept in both forms, so going compact only lets the rows and float vectors go.
    """

    def __init__(self, params: RecallIndexParams, dim: int) -> None:
        self.params = params
        self.dim = dim
        self._words = -(-dim // 64)
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
        self._empty(compact=False)

    def _empty(self, *, compact: bool, capacity: int = 0) -> None:
        #: Whether only the compact form is held (rows read by id for a search's winners).
        self.compact = compact
        self._rows: dict[str, LessonRow] = {}
        self._slot: dict[str, int] = {}
        self._ids: list[str] = []
        self._scope_code: dict[str, int] = {}
        self._matrix = np.zeros((0 if compact else capacity, self.dim), dtype=np.float32)
        self._norms = np.zeros(capacity, dtype=np.float32)
        self._status = np.zeros(capacity, dtype=np.int8)
        self._scope = np.zeros(capacity, dtype=np.int32)
        self._codes = np.zeros((capacity, self.dim), dtype=np.int8)
        self._unscale = np.zeros(capacity, dtype=np.float32)
        # One row per 64-bit word, one column per lesson: a search's pass reads each word
        # of every lesson as one contiguous run.
        self._bits = np.zeros((self._words, capacity), dtype=np.uint64)
        self._centre = np.zeros(self.dim, dtype=np.float32)
        self._centred_at = 0

    # -- what the adapter tells it ---------------------------------------------------------
    @property
    def generation(self) -> int:
        """A counter every touch advances: a read begun at generation g reflects the writes
        touched at or before g."""
        return self._gen

    @property
    def holds_rows(self) -> bool:
        """Whether ``search`` answers alone (whole rows held), or ``shortlist`` then ``rank``
        (compact: the adapter reads the winners' rows)."""
        return not self.compact

    def touch(self, ids: Iterable[str]) -> None:
        """These lessons were written (or may have been): re-read them before the next search."""
        if not self.enabled:
            return
        self._gen += 1
        for lesson_id in ids:
            self._dirty[lesson_id] = self._gen
        if len(self._dirty) > max(self.params.rows_held, 1):
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
        self._empty(compact=False)

    def disable(self) -> None:
        """Give the memory back for good: search in SQL from now on."""
        self.enabled = False
        self.reset()

    def fits(self, count: int) -> tuple[bool, bool]:
        """For ``count`` covered lessons: whether the index can hold them at all, and whether
        it would hold their whole rows (else the adapter reads ``VectorRow``s to load)."""
        return count <= self.params.max_rows, count <= self.params.rows_held

    def load(self, rows: Iterable[LessonRow | VectorRow], since: int) -> None:
        """Hold exactly ``rows`` (every covered row, read after generation ``since``): ids
        touched meanwhile stay to be re-read. A reset since ``since`` forgot which ids were
        touched: the rows are not taken (the next search reads them again). ``VectorRow``s,
        or more than ``rows_held`` rows, make it compact."""
        if self._reset_at > since:
            return
        held = [row for row in rows if is_covered(row)]
        compact = len(held) > self.params.rows_held or any(
            isinstance(row, VectorRow) for row in held
        )
        self._empty(compact=compact, capacity=len(held))
        if held:
            self._put_block(held)
        self._recentre()
        self._settle({i: g for i, g in self._dirty.items() if g <= since})
        self.loaded = True
        self.reads += 1
        self._check_size()

    def refresh(self, read: Mapping[str, int], rows: Iterable[LessonRow]) -> None:
        """The rows of the ids in ``read`` (a ``dirty()`` snapshot) as they are now: an id
        without a row was deleted; one touched again since the read stays dirty."""
        found = {row.id: row for row in rows}
        placed: dict[str, npt.NDArray[np.float32]] = {}
        for lesson_id in read:
            row = found.get(lesson_id)
            if row is not None and is_covered(row):
                placed[lesson_id] = self._place(row)
            else:
                placed.pop(lesson_id, None)
                self._drop(lesson_id)
        # The norms, int8 codes and sign bits of every row placed, in one pass (a burst of
        # writes refreshes hundreds of rows at the next search: one by one, the small array
        # operations cost more than the search).
        self._encode(placed)
        self._settle(read)
        self.reads += 1
        self._check_size()
        if self.enabled:
            if not self.compact and len(self._ids) > self.params.rows_held:
                self._go_compact()
            if len(self._ids) >= 2 * self._centred_at:
                self._recentre()

    def apply_uses(self, counts: Mapping[str, int], latest: Mapping[str, datetime]) -> None:
        """The use marks just written (``mark_uses``): the same change, in place (compact:
        no rows are held, so nothing to change)."""
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

    def memory_bytes(self) -> int:
        """The arrays' bytes (vectors, codes, bits and per-lesson columns; not the rows)."""
        return sum(
            a.nbytes
            for a in (
                self._matrix,
                self._norms,
                self._status,
                self._scope,
                self._codes,
                self._unscale,
                self._bits,
            )
        )

    def search(
        self, query: Vector, k: int, flt: LessonFilter, floor: RelevanceFloor | None
    ) -> list[ScoredLesson]:
        """Exact top-``k`` by cosine among the held rows ``flt`` selects (``covers(flt)``);
        whole rows only (``holds_rows``)."""
        n = len(self._ids)
        if n == 0 or k <= 0 or self.compact:
            return []
        q = _unit(query)
        # A BLAS product on one thread (the node limits BLAS to one at start: split over
        # threads, a product this size left them busy-waiting on the cores the model's next
        # run needs). 2,000 x 384: ~80 us, against ~210 us for einsum's own loop.
        with np.errstate(divide="ignore", invalid="ignore"):
            sims = (self._matrix[:n] @ q) / self._norms[:n]
        wanted = self._wanted(flt)
        if wanted is not None:
            sims = np.where(wanted, sims, np.nan).astype(np.float32)
        # A hit's row gets its vector back (a copy: the matrix's rows move).
        return [
            ScoredLesson(
                self._rows[self._ids[i]].with_embedding(self._matrix[i].copy()),
                s,
            )
            for i, s in exact_top_k(sims, self._ids, k, floor)
        ]

    def shortlist(
        self, query: Vector, k: int, flt: LessonFilter, floor: RelevanceFloor | None
    ) -> list[str]:
        """Compact form: the ids whose rows ``rank`` needs for the top-``k`` ``flt`` selects.

        The ``shortlist`` nearest by sign bits, re-scored from the int8 vectors; of those the
        best ``k + rescore_extra``, less any the floor drops even if every int8 cosine were
        ``rescore_margin`` off.
        """
        n = len(self._ids)
        if n == 0 or k <= 0:
            return []
        q = _unit(query)
        if not np.all(np.isfinite(q)):
            return []
        wanted = self._wanted(flt)
        pool = np.flatnonzero(wanted) if wanted is not None else None
        size = n if pool is None else len(pool)
        want = max(self.params.shortlist, k + self.params.rescore_extra)
        if size <= want:
            cand = np.arange(n) if pool is None else pool
        else:
            qbits = _sign_bits((q - self._centre)[None, :], self._words)[0]
            dist = self._hamming(qbits, n)
            cand = _smallest(dist, want) if pool is None else pool[_smallest(dist[pool], want)]
        approx = np.einsum("ij,j->i", self._codes[cand].astype(np.float32), q)
        approx *= self._unscale[cand]
        approx = np.where(np.isfinite(approx), approx, -np.inf)
        m = min(len(cand), k + self.params.rescore_extra)
        top = np.argpartition(-approx, m - 1)[:m] if m < len(cand) else np.arange(len(cand))
        if floor is not None and len(top):
            margin = self.params.rescore_margin
            bar = floor.cut(float(approx[top].max()) - margin) - margin
            top = top[approx[top] >= bar]
        return [self._ids[int(cand[i])] for i in top]

    def cached(self, ids: Sequence[str]) -> tuple[list[LessonRow], list[str]]:
        """Compact form: the rows of ``ids`` it keeps from earlier reads (``remember``), and
        the ids the adapter must read."""
        held: list[LessonRow] = []
        missing: list[str] = []
        for lesson_id in ids:
            row = self._rows.pop(lesson_id, None)
            if row is None:
                missing.append(lesson_id)
            else:
                self._rows[lesson_id] = row  # most recently used last
                held.append(row)
        return held, missing

    def remember(self, rows: Iterable[LessonRow], generation: int) -> None:
        """Compact form: keep ``rows`` (read by id at ``generation``) for later searches, the
        ``rows_held`` most recently used; none if any write was touched since the read (it
        may predate that write)."""
        if not self.compact or generation != self._gen:
            return
        for row in rows:
            if is_covered(row) and row.id in self._slot:
                self._rows.pop(row.id, None)
                self._rows[row.id] = row
        excess = len(self._rows) - self.params.rows_held
        if excess > 0:
            for lesson_id in list(itertools.islice(self._rows, excess)):
                del self._rows[lesson_id]

    def rank(
        self,
        query: Vector,
        rows: Iterable[LessonRow],
        k: int,
        flt: LessonFilter,
        floor: RelevanceFloor | None,
    ) -> list[ScoredLesson]:
        """Compact form: exact top-``k`` by cosine of the rows read for a ``shortlist``
        (as read now: one no longer recallable or no longer selected by ``flt`` is left out)."""
        statuses = set(flt.statuses or ())
        scopes = None if flt.scopes is None else set(flt.scopes)
        kept = [
            row
            for row in rows
            if is_covered(row)
            and row.status in statuses
            and (scopes is None or row.scope in scopes)
        ]
        if not kept or k <= 0:
            return []
        kept.sort(key=lambda row: row.id)
        q = _unit(query)
        matrix = np.stack([np.asarray(row.embedding, dtype=np.float32).reshape(-1) for row in kept])
        with np.errstate(divide="ignore", invalid="ignore"):
            sims = (np.einsum("ij,j->i", matrix, q) / np.linalg.norm(matrix, axis=1)).astype(
                np.float32
            )
        return [
            ScoredLesson(kept[i], s) for i, s in exact_top_k(sims, [r.id for r in kept], k, floor)
        ]

    # -- internals ---------------------------------------------------------------------------
    def _wanted(self, flt: LessonFilter) -> npt.NDArray[np.bool_] | None:
        """Which held rows ``flt`` selects; None: all of them."""
        n = len(self._ids)
        codes = {_STATUS_CODE[s] for s in flt.statuses or ()}
        wanted = None
        if codes != set(_STATUS_CODE.values()):
            wanted = _any_of(self._status[:n], codes)
        if flt.scopes is not None:
            scoped = _any_of(
                self._scope[:n], {self._scope_code[s] for s in flt.scopes if s in self._scope_code}
            )
            wanted = scoped if wanted is None else wanted & scoped
        return wanted

    def _hamming(self, qbits: npt.NDArray[np.uint64], n: int) -> npt.NDArray[np.uint16]:
        x = np.bitwise_xor(self._bits[:, :n], qbits[:, None])
        dist: npt.NDArray[np.uint16] = np.bitwise_count(x).sum(axis=0, dtype=np.uint16)
        return dist

    def _settle(self, read: Mapping[str, int]) -> None:
        for lesson_id, gen in read.items():
            if self._dirty.get(lesson_id) == gen:
                del self._dirty[lesson_id]

    def _check_size(self) -> None:
        if len(self._ids) > self.params.max_rows:
            self.disable()

    def _go_compact(self) -> None:
        """Let the whole rows and float vectors go: the int8 codes and bits stay."""
        self.compact = True
        self._rows = {}
        self._matrix = np.zeros((0, self.dim), dtype=np.float32)

    def _recentre(self) -> None:
        """Sign bits taken about the held vectors' mean (sign bits about the origin split
        sentence vectors, which share a large common part, poorly)."""
        n = len(self._ids)
        self._centred_at = n
        if n == 0:
            return
        step = 8192
        total = np.zeros(self.dim, dtype=np.float64)
        for s in range(0, n, step):
            total += self._dequantised(s, min(n, s + step)).sum(axis=0, dtype=np.float64)
        self._centre = (total / n).astype(np.float32)
        for s in range(0, n, step):
            e = min(n, s + step)
            self._bits[:, s:e] = _sign_bits(self._dequantised(s, e) - self._centre, self._words).T

    def _dequantised(self, start: int, end: int) -> npt.NDArray[np.float32]:
        return _restored(self._codes[start:end], self._unscale[start:end])

    def _put_block(self, rows: Sequence[LessonRow | VectorRow]) -> None:
        """Take ``rows`` (covered, new, into an empty index sized for them) in one pass."""
        vectors = np.stack(
            [np.asarray(row.embedding, dtype=np.float32).reshape(-1) for row in rows]
        )
        n = len(rows)
        norms = np.linalg.norm(vectors, axis=1).astype(np.float32)
        self._ids = [row.id for row in rows]
        self._slot = {lesson_id: i for i, lesson_id in enumerate(self._ids)}
        self._status[:n] = [_STATUS_CODE[row.status] for row in rows]
        self._scope[:n] = [
            self._scope_code.setdefault(row.scope, len(self._scope_code)) for row in rows
        ]
        self._norms[:n] = norms
        self._codes[:n], self._unscale[:n] = _quantised(vectors, norms)
        if not self.compact:
            self._matrix[:n] = vectors
            self._rows = {
                row.id: row.with_embedding(None) for row in rows if isinstance(row, LessonRow)
            }

    def _place(self, row: LessonRow) -> npt.NDArray[np.float32]:
        """Give ``row`` (covered) its slot, row, status and scope, and in full form its
        matrix row; return its vector, which ``_encode`` turns into norm, codes and bits once
        every row of the refresh has its final slot."""
        vector = np.asarray(row.embedding, dtype=np.float32).reshape(-1)
        slot = self._slot.get(row.id)
        if slot is None:
            slot = len(self._ids)
            if slot == len(self._norms):
                self._grow(max(64, 2 * slot))
            self._slot[row.id] = slot
            self._ids.append(row.id)
        if not self.compact:
            # The vector lives in the matrix only: a second copy in the row cost 1.6 KB a
            # lesson.
            self._rows[row.id] = row.with_embedding(None)
            self._matrix[slot] = vector
        elif row.id in self._rows:
            self._rows[row.id] = row  # a cached row, as it is now
        self._status[slot] = _STATUS_CODE[row.status]
        self._scope[slot] = self._scope_code.setdefault(row.scope, len(self._scope_code))
        return vector

    def _encode(self, placed: Mapping[str, npt.NDArray[np.float32]]) -> None:
        """The norm, int8 codes and sign bits of each placed row, at its slot now."""
        if not placed:
            return
        slots = np.fromiter((self._slot[i] for i in placed), dtype=np.intp, count=len(placed))
        vectors = np.stack(list(placed.values()))
        norms = np.linalg.norm(vectors, axis=1).astype(np.float32)
        codes, unscale = _quantised(vectors, norms)
        self._norms[slots] = norms
        self._codes[slots] = codes
        self._unscale[slots] = unscale
        restored = _restored(codes, unscale)
        self._bits[:, slots] = _sign_bits(restored - self._centre, self._words).T

    def _drop(self, lesson_id: str) -> None:
        slot = self._slot.pop(lesson_id, None)
        if slot is None:
            return
        self._rows.pop(lesson_id, None)
        last = len(self._ids) - 1
        if slot != last:
            # The last row takes the freed place: the held rows stay one block.
            moved = self._ids[last]
            self._ids[slot] = moved
            self._slot[moved] = slot
            if not self.compact:
                self._matrix[slot] = self._matrix[last]
            self._norms[slot] = self._norms[last]
            self._status[slot] = self._status[last]
            self._scope[slot] = self._scope[last]
            self._codes[slot] = self._codes[last]
            self._unscale[slot] = self._unscale[last]
            self._bits[:, slot] = self._bits[:, last]
        self._ids.pop()

    def _grow(self, capacity: int) -> None:
        n = len(self._ids)
        if not self.compact:
            matrix = np.zeros((capacity, self.dim), dtype=np.float32)
            matrix[:n] = self._matrix[:n]
            self._matrix = matrix
        codes = np.zeros((capacity, self.dim), dtype=np.int8)
        codes[:n] = self._codes[:n]
        self._codes = codes
        bits = np.zeros((self._words, capacity), dtype=np.uint64)
        bits[:, :n] = self._bits[:, :n]
        self._bits = bits
        self._norms = np.resize(self._norms, capacity)
        self._unscale = np.resize(self._unscale, capacity)
        self._status = np.resize(self._status, capacity)
        self._scope = np.resize(self._scope, capacity)


def _any_of(column: npt.NDArray[Any], values: set[int]) -> npt.NDArray[np.bool_]:
    """Where ``column`` holds one of ``values`` (a comparison each: ``np.isin`` sorted the
    column first, ~100x slower for the one or two values a recall names)."""
    out = np.zeros(len(column), dtype=np.bool_)
    for value in values:
        out |= column == value
    return out


def _unit(query: Vector) -> npt.NDArray[np.float32]:
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return q / np.float32(np.linalg.norm(q))


def _quantised(
    vectors: npt.NDArray[np.float32], norms: npt.NDArray[np.float32]
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Each vector's unit vector as int8 (its largest component at 127) and the factor that
    turns the int8 vector back into the unit one; a zero vector: codes 0, factor NaN (no
    direction, as Postgres's NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        unit = vectors / norms[:, None]
        peak = np.abs(unit).max(axis=1)
        scale = np.where(peak > 0, 127.0 / peak, np.nan).astype(np.float32)
        codes = np.nan_to_num(np.rint(unit * scale[:, None]), nan=0.0).astype(np.int8)
    return codes, (1.0 / scale).astype(np.float32)


def _restored(
    codes: npt.NDArray[np.int8], unscale: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """The vectors ``_quantised`` encoded, back from their int8 codes and factors."""
    block = codes.astype(np.float32)
    block *= unscale[:, None]
    return block


def _sign_bits(vectors: npt.NDArray[np.float32], words: int) -> npt.NDArray[np.uint64]:
    """One row of ``words`` 64-bit words per vector: bit j set where component j > 0."""
    signs = vectors > 0
    pad = words * 64 - signs.shape[1]
    if pad:
        signs = np.pad(signs, ((0, 0), (0, pad)))
    packed = np.packbits(signs, axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view(np.uint64).reshape(len(vectors), words)


def _smallest(dist: npt.NDArray[np.uint16], count: int) -> npt.NDArray[np.intp]:
    """The places of the ``count`` smallest distances, and any tied with the last of them
    (a histogram of the small integer distances finds the bar: cheaper than a partition)."""
    if len(dist) <= count:
        return np.arange(len(dist))
    counts = np.bincount(dist)
    bar = int(np.searchsorted(np.cumsum(counts), count))
    return np.flatnonzero(dist <= bar)
