"""``StoreImportView``: the local world the import decision reads, fetched before it decides.

``decide_import`` is pure: it may not await. The node therefore prefetches, per record, every
fact the decision and the filters may ask for, into an :class:`ImportSnapshot` (a frozen value
implementing ``ImportView``), and hands that to the decision.

Two facts have no cheap store query, so this module keeps them in an in-memory index loaded
from the store once (:meth:`StoreImportView.load`) and kept current by the pipeline:

* :class:`HeldRecords` — the versions of each record id held (stored lessons and quarantined
  records), and the content hashes rejected before (for replay);
* :class:`SourceHistory` — what each source has published here (for the outlier red flag).
"""

from __future__ import annotations

import bisect
import json
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from lamarck.domain.rows import (
    LessonFilter,
    LessonStatus,
    Vector,
)
from lamarck.errors import InvalidRecord
from lamarck.node.store.port import (
    LessonStore,
    keyset_pages,
)
from lamarck.policy.effects import counts_in_history
from lamarck.policy.filters import (
    Corroboration,
    DeclaredTool,
    EstablishedLesson,
    KnownVersion,
    SourceStats,
)
from lamarck.proto.memory import MemoryV2, parse_memory, schema_major
from lamarck.reputation.port import ReputationView, TrackRecords
from lamarck.reputation.transfer import TrackRecord

__all__ = [
    "REGISTRY_DEPENDENT_REASONS",
    "CorroborationSource",
    "HeldRecords",
    "ImportSnapshot",
    "SourceHistory",
    "StoreImportView",
]

_DAY = timedelta(days=1)


# How many rows to read per page when loading the indexes at start-up.
_PAGE = 1000

#: Rejections that depend on the registry's state at the time, not on the record: a record
#: refused while its source was unknown may be accepted once the source registers, so these
#: never mark a record as already judged.
REGISTRY_DEPENDENT_REASONS = frozenset(
    {"unregistered_source", "revoked_source", "key_not_pinned", "registry_unavailable"}
)

CorroborationSource = Callable[[MemoryV2], Corroboration]
"""Verified votes and local outcomes about a record (the trust issue supplies votes)."""


def _no_corroboration(record: MemoryV2) -> Corroboration:
    # Until the trust issue wires quorum certificates in, nothing is verified: fail closed.
    return Corroboration()


@dataclass(frozen=True, slots=True)
class _Held:
    version: int
    content_hash: str
    source_id: str
    lesson_id: str | None  # None for a quarantined record


class HeldRecords:
    """Index of record ids held (stored or quarantined) and of hashes rejected before."""

    def __init__(self) -> None:
        self._by_record: dict[str, list[_Held]] = defaultdict(list)
        self._rejected: dict[str, str] = {}
        # Versions judged and kept as history only: their copy moved on to the source's edit.
        self._history: set[str] = set()

    def add(
        self,
        record_id: str,
        *,
        version: int,
        content_hash: str,
        source_id: str,
        lesson_id: str | None = None,
    ) -> None:
        """Remember that a version of ``record_id`` is held (idempotent by content hash)."""
        held = self._by_record[record_id]
        for i, h in enumerate(held):
            if h.content_hash == content_hash:
                if lesson_id is not None and h.lesson_id is None:
                    held[i] = _Held(version, content_hash, source_id, lesson_id)
                return
        held.append(_Held(version, content_hash, source_id, lesson_id))

    def keep_history(self, content_hash: str) -> None:
        """Remember a version kept as history only (no row holds its bytes: its copy holds
        the source's edit of it), so a Sync does not pull it again."""
        self._history.add(content_hash)

    def history_hashes(self) -> frozenset[str]:
        """The versions kept as history only since this node started."""
        return frozenset(self._history)

    def held_hashes(self) -> frozenset[str]:
        """Every version held, whatever became of it: stored (active, retired, superseded)
        or quarantined (pending or decided). A Sync pull counts them as held: a peer that
        offers one again offers nothing new."""
        return frozenset(h.content_hash for held in self._by_record.values() for h in held)

    def reject(self, content_hash: str, reason: str) -> None:
        """Remember that the record with ``content_hash`` was rejected for ``reason``."""
        self._rejected.setdefault(content_hash, reason)

    def known_versions(self, record_id: str) -> tuple[KnownVersion, ...]:
        """Versions of ``record_id`` held."""
        return tuple(
            KnownVersion(h.version, h.content_hash, h.source_id)
            for h in self._by_record.get(record_id, ())
        )

    def stored_versions(self, record_id: str) -> tuple[KnownVersion, ...]:
        """Versions of ``record_id`` stored as lessons (quarantined ones left out)."""
        return tuple(
            KnownVersion(h.version, h.content_hash, h.source_id)
            for h in self._by_record.get(record_id, ())
            if h.lesson_id is not None
        )

    def latest_lesson_id(self, record_id: str) -> str | None:
        """Local lesson id of the newest stored (not quarantined) version of ``record_id``."""
        stored = [h for h in self._by_record.get(record_id, ()) if h.lesson_id is not None]
        if not stored:
            return None
        return max(stored, key=lambda h: h.version).lesson_id

    def previously_rejected(self, content_hash: str) -> str | None:
        """The reason ``content_hash`` was rejected before, if it was."""
        return self._rejected.get(content_hash)


@dataclass(slots=True)
class _Seen:
    """Running totals of one source's records; constant work per record however long the
    history (the last day's arrival times are the only list kept)."""

    count: int = 0
    first: datetime | None = None
    sum_c: float = 0.0
    sum_c2: float = 0.0
    recent: list[datetime] = field(default_factory=list)


class SourceHistory:
    """What each source has published to this node: arrival times and claimed confidences."""

    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = defaultdict(_Seen)

    def add(self, source_id: str, at: datetime, confidence: float) -> None:
        """Count one record from ``source_id`` received at ``at``."""
        seen = self._seen[source_id]
        seen.count += 1
        seen.first = at if seen.first is None else min(seen.first, at)
        seen.sum_c += confidence
        seen.sum_c2 += confidence * confidence
        bisect.insort(seen.recent, at)
        # Arrivals older than a day before the newest can never count as recent again.
        del seen.recent[: bisect.bisect_left(seen.recent, seen.recent[-1] - _DAY)]

    def stats(self, source_id: str, now: datetime) -> SourceStats:
        """Rates per day (mean over the whole history, recent over the last day) and the
        mean and standard deviation of claimed confidence."""
        seen = self._seen.get(source_id)
        if seen is None or seen.count == 0 or seen.first is None:
            return SourceStats()
        n = seen.count
        span_days = max(1.0, (now - seen.first) / _DAY)
        recent = len(seen.recent) - bisect.bisect_left(seen.recent, now - _DAY)
        mean_c = seen.sum_c / n
        var = max(0.0, seen.sum_c2 / n - mean_c * mean_c)
        return SourceStats(
            records_seen=n,
            mean_daily_rate=n / span_days,
            recent_daily_rate=float(recent),
            mean_confidence=mean_c,
            confidence_std=math.sqrt(var),
        )


@dataclass(frozen=True, slots=True)
class ImportSnapshot:
    """A pure ``ImportView``: every fact about one record, fetched before the decision."""

    self_id: str
    source_reputation: tuple[str, float]
    corr: Corroboration
    established: tuple[EstablishedLesson, ...]
    history: SourceStats
    tool: DeclaredTool | None
    versions: tuple[KnownVersion, ...]
    rejected_reason: str | None
    # The source's reality-judged record here (empty: a newcomer, on probation).
    source_track: TrackRecord = field(default_factory=TrackRecord)
    # Vectors of the record's texts the pipeline computed before its lock, by text (the
    # content and what the filters asked for: ``filters.texts_to_embed``).
    text_vectors: Mapping[str, Vector] = field(default_factory=dict)

    @property
    def self_node_id(self) -> str:
        """This node's id."""
        return self.self_id

    def reputation(self, node_id: str) -> float:
        """The source's score (0 for anyone else: the snapshot was taken for one source)."""
        who, score = self.source_reputation
        return score if node_id == who else 0.0

    def track_record(self, node_id: str) -> TrackRecord:
        """The source's record here (empty for anyone else)."""
        return self.source_track if node_id == self.source_reputation[0] else TrackRecord()

    def corroboration(self, record: MemoryV2) -> Corroboration:
        """Verified votes and local outcomes about the record."""
        return self.corr

    def established_lessons(
        self, operation: str, domain: str, environment: str
    ) -> Sequence[EstablishedLesson]:
        """Local active lessons on the record's operation and context."""
        return self.established

    def source_history(self, node_id: str) -> SourceStats:
        """What the source has published here."""
        return self.history if node_id == self.source_reputation[0] else SourceStats()

    def declared_tool(self, tool: str) -> DeclaredTool | None:
        """The declaration for the record's situation tool, if any."""
        return self.tool if self.tool is not None and self.tool.name == tool else None

    def known_versions(self, record_id: str) -> Sequence[KnownVersion]:
        """Versions of the record's id held."""
        return self.versions

    def previously_rejected(self, content_hash: str) -> str | None:
        """Why the record's exact bytes were rejected before, if they were."""
        return self.rejected_reason

    def text_vector(self, text: str) -> Vector | None:
        """This node's embedder's vector of ``text``, if the pipeline computed it."""
        return self.text_vectors.get(text)


class StoreImportView:
    """Builds :class:`ImportSnapshot` values over the store, reputation and the indexes."""

    def __init__(
        self,
        store: LessonStore,
        reputation: ReputationView,
        self_node_id: str,
        *,
        declared_tools: Mapping[str, DeclaredTool] | None = None,
        corroboration: CorroborationSource = _no_corroboration,
    ) -> None:
        self._store = store
        self._reputation = reputation
        self._self = self_node_id
        self._tools = dict(declared_tools or {})
        self._corroboration = corroboration
        self.held = HeldRecords()
        self.history = SourceHistory()

    @property
    def self_node_id(self) -> str:
        """This node's id."""
        return self._self

    async def load(self, max_rejections: int = 10_000) -> None:
        """Fill the indexes from the store: imported lessons, quarantine, recent rejections."""
        # A few columns a row (no vector, no provenance), and four fields of each record: a
        # node's start grows with the lessons it imported.
        pages = keyset_pages(self._store.imported_records, lambda held: held.lesson_id, _PAGE)
        async for page in pages:
            for held in page:
                fields = _held_fields(held.signed_record)
                if fields is None:
                    continue
                record_id, version, source, confidence = fields
                self.held.add(
                    record_id,
                    version=version,
                    content_hash=held.content_hash,
                    source_id=source,
                    lesson_id=held.lesson_id,
                )
                self.history.add(source, held.created_at, confidence)
        for q in await self._store.list_quarantine(state=None):
            record = _parse(q.signed_record)
            if record is not None:
                self.note_held(record, q.content_hash)
                # A held record counts in its source's history as a stored one does (the
                # pipeline counts it when it holds it); an approved one counts as the lesson
                # it became, above.
                if q.state != "approved" and counts_in_history(q.reasons):
                    source = record.provenance.source_agent_id
                    self.history.add(source, q.received_at, record.confidence)
        for r in await self._store.list_rejections(limit=max_rejections):
            if r.reason not in REGISTRY_DEPENDENT_REASONS:
                self.held.reject(r.content_hash, r.reason)

    def note_held(self, record: MemoryV2, content_hash: str, lesson_id: str | None = None) -> None:
        """Index a record now held (stored when ``lesson_id`` is set, else quarantined)."""
        self.held.add(
            record.id,
            version=record.lesson.version if record.lesson is not None else 1,
            content_hash=content_hash,
            source_id=record.provenance.source_agent_id,
            lesson_id=lesson_id,
        )

    def snapshot(
        self,
        record: MemoryV2,
        content_hash: str,
        now: datetime,
        text_vectors: Mapping[str, Vector] | None = None,
    ) -> ImportSnapshot:
        """Everything the decision may ask about ``record`` that this view holds in memory
        (``text_vectors``: what the pipeline embedded before its lock, handed to the filters).
        The established lessons are not among them: the store is read for those
        (``established``) only when the filters could use them (``filters.needs_established``)."""
        source = record.provenance.source_agent_id
        tool = None
        if record.situation is not None and record.situation.tool:
            tool = self._tools.get(record.situation.tool)
        reputation = self._reputation
        track = (
            reputation.track_record(source)
            if isinstance(reputation, TrackRecords)
            else TrackRecord()  # no record to read: every source is on probation
        )
        return ImportSnapshot(
            self_id=self._self,
            source_reputation=(source, reputation.score(source)),
            source_track=track,
            corr=self._corroboration(record),
            established=(),
            history=self.history.stats(source, now),
            tool=tool,
            versions=self.held.known_versions(record.id),
            rejected_reason=self.held.previously_rejected(content_hash),
            text_vectors=dict(text_vectors or {}),
        )

    async def established(self, record: MemoryV2, floor: float) -> tuple[EstablishedLesson, ...]:
        """The active lessons on ``record``'s operation, in its domain and environment, at or
        above ``floor``, the surest first (none for a record that is not a lesson)."""
        if record.lesson is None:
            return ()
        # Only lessons on this operation in this record's context are read: never the
        # operation's rows in other contexts, read to be dropped here.
        rows = await self._store.list_lessons(
            LessonFilter(
                statuses=(LessonStatus.ACTIVE,),
                operation=record.lesson.operation,
                context=(
                    ("domain", record.context.domain),
                    ("environment", record.context.environment),
                ),
                min_confidence=floor,
                limit=50,
            )
        )
        return tuple(EstablishedLesson(r.id, r.content, r.confidence) for r in rows)


def _parse(raw: bytes) -> MemoryV2 | None:
    try:
        return parse_memory(raw)
    except (InvalidRecord, ValueError):
        return None


def _held_fields(raw: bytes) -> tuple[str, int, str, float] | None:
    """Record id, lesson version, source and confidence of a stored signed record.

    The bytes were verified and parsed when they were imported; the index needs only these
    four, so a schema-2 record is read as plain JSON (the model's full parse of every stored
    record cost ~0.17 ms each at start). Anything that does not read so takes the full parse.
    """
    try:
        obj = json.loads(raw)
        if schema_major(obj) == 2:
            lesson = obj.get("lesson")
            version = 1 if lesson is None else lesson.get("version", 1)
            record_id, confidence = obj["id"], obj["confidence"]
            source = obj["provenance"]["source_agent_id"]
            if (
                isinstance(record_id, str)
                and isinstance(source, str)
                and isinstance(version, int)
                and not isinstance(version, bool)
                and isinstance(confidence, int | float)
                and not isinstance(confidence, bool)
            ):
                return record_id, version, source, float(confidence)
    except (ValueError, KeyError, TypeError, AttributeError, InvalidRecord):
        pass
    record = _parse(raw)
    if record is None:
        return None
    version = record.lesson.version if record.lesson is not None else 1
    return record.id, version, record.provenance.source_agent_id, record.confidence
