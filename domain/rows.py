"""The lesson store's row types: what a lesson, an outcome, an event and a filter are.

Values only (no I/O): the ``LessonStore`` port (``port.py``) persists them, the lesson rules
read and return them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from lamarck.errors import InvalidRecord

__all__ = [
    "EVENT_KINDS",
    "Category",
    "ImportedRecord",
    "LessonEvent",
    "LessonFacts",
    "LessonFilter",
    "LessonRow",
    "LessonStatus",
    "OutcomeRow",
    "ProvenanceEntry",
    "QuarantineRow",
    "RejectionRow",
    "RelevanceFloor",
    "ScoredLesson",
    "Vector",
    "check_event_kinds",
    "lesson_sort_key",
]

Vector = npt.NDArray[np.float32]


class LessonStatus(StrEnum):
    """Where a lesson stands; only ``active`` lessons enter prompts and recall."""

    CLAIMED = "claimed"
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    RETIRED = "retired"


class Category(StrEnum):
    """What kind of knowledge row this is."""

    LESSON = "lesson"
    SITUATION = "situation"


@dataclass(frozen=True, slots=True)
class ProvenanceEntry:
    """One path by which an imported lesson arrived (the same lesson may arrive by several)."""

    source_node_id: str
    via_node_id: str
    received_at: datetime
    content_hash: str


@dataclass(frozen=True, slots=True)
class LessonRow:
    """A stored lesson (local or imported). Immutable: changes are written as a new value.

    ``superseded_by`` holds the id of the newer version, or ``retired:<who>`` for a retirement.
    ``evidence`` holds outcome ids (local) — never a record's self-reported counts.
    ``signed_record`` keeps an imported record's original canonical bytes, so it can be
    re-verified and re-forwarded unchanged.
    """

    id: str
    content: str
    operation: str
    scope: str
    status: LessonStatus
    confidence: float
    created_at: datetime
    updated_at: datetime
    category: Category = Category.LESSON
    evidence: tuple[str, ...] = ()
    superseded_by: str | None = None
    supersedes: str | None = None
    last_used: datetime | None = None
    use_count: int = 0
    confirmations: int = 0
    contradictions: int = 0
    # Projects (digests) that confirmed it: promotion to global needs two distinct ones.
    confirmed_projects: tuple[str, ...] = ()
    context: dict[str, Any] = field(default_factory=dict)
    situation: dict[str, Any] | None = None
    tags: tuple[str, ...] = ()
    memory_type: str = "AC"
    access_level: str = "public"
    # The node ids a ``private`` lesson may be sent to (empty otherwise).
    recipients: tuple[str, ...] = ()
    source_node_id: str | None = None
    imported_from: str | None = None
    original_confidence: float | None = None
    # The confidence an imported copy was stored at when its source's latest version was
    # imported: what this node's own evidence is measured from (``node.learning.evidence``).
    transferred_confidence: float | None = None
    signed_record: bytes | None = None
    content_hash: str | None = None
    provenance: tuple[ProvenanceEntry, ...] = ()
    # The lessons this one contradicts while the conflict is open: never offered
    # as advice until an outcome settles it. Empty when uncontested.
    contested_with: tuple[str, ...] = ()
    # The lessons this one beat in a settled conflict (the test that verified it).
    verified_against: tuple[str, ...] = ()
    # Why the latest edit or the end of this lesson was made, as its author gave it ("": no
    # reason given). An own lesson's is signed into its record (``lesson.reason``, with
    # ``metadata.supersedes`` for an edit), an imported copy's is its source's. None for a row
    # written before reasons were kept: its record stays byte for byte what it was.
    change_reason: str | None = None
    embedding: Vector | None = field(default=None, compare=False, repr=False)

    def from_peer(self, own_id: str) -> bool:
        """Whether this lesson came from another node than ``own_id`` ("": unknown). A stored
        copy of a record the node itself signed (its own bundle imported back) is its own."""
        return self.imported_from is not None and (not own_id or self.imported_from != own_id)

    def with_embedding(self, embedding: Vector | None) -> LessonRow:
        """This row with ``embedding`` in place of its own, every other field as it is.

        The recall index attaches each hit's vector to the row it returns (up to a candidate
        pool of rows per recall); ``dataclasses.replace`` runs the whole constructor and took
        twice as long (15 against 7 us a row).
        """
        new = object.__new__(LessonRow)
        for name in _LESSON_ROW_FIELDS:
            object.__setattr__(new, name, getattr(self, name))
        object.__setattr__(new, "embedding", embedding)
        return new


#: ``LessonRow``'s fields but its embedding, in declaration order (``with_embedding``).
_LESSON_ROW_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(LessonRow) if f.name != "embedding"
)


@dataclass(frozen=True, slots=True)
class OutcomeRow:
    """A stored outcome: evidence, never recalled into a prompt by itself."""

    id: str
    session_id: str
    turn_index: int
    project: str
    passed: bool
    claim_ok: bool
    created_at: datetime
    record: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LessonFilter:
    """Selection for list and search; ``None`` means no constraint on that field."""

    statuses: tuple[LessonStatus, ...] | None = (LessonStatus.ACTIVE,)
    scopes: tuple[str, ...] | None = None
    category: Category | None = None
    operation: str | None = None
    # Lessons about an operation key: they recommend it, say to avoid it (an ``avoid:<key>``
    # tag), or are a situation on that tool (``node.learning.mechanical.is_about``). Indexed,
    # so a lookup finds a lesson however old or unconfident it is.
    about: str | None = None
    min_confidence: float | None = None
    imported: bool | None = None
    # Exactly this content (a claim already held): with ``operation`` it is an indexed
    # lookup, so deduplicating a write never reads a scope's rows.
    content: str | None = None
    # Lessons carrying every one of these tags (GIN-indexed): the mechanical lookup asks for
    # its target's tag, so it reads the few lessons about that target, not every lesson
    # about a common operation.
    tags: tuple[str, ...] | None = None
    # Lessons whose context holds each of these (key, value) pairs (jsonb containment, on
    # the rows the other conditions' indexes found): the import's established-lesson check
    # asks for the record's domain and environment where the rows are, never reading the
    # others to drop them in Python.
    context: tuple[tuple[str, str], ...] | None = None
    # Lessons imported from one of these nodes (``imported_from``; indexed): the taint sweep
    # reads a tainted source's lessons, never the rest.
    sources: tuple[str, ...] | None = None
    # Lessons stored with one of these content hashes (unique index): the records an
    # operator retracted.
    content_hashes: tuple[str, ...] | None = None
    limit: int = 100
    offset: int = 0


@dataclass(frozen=True, slots=True)
class ImportedRecord:
    """A stored imported lesson without its vector (``imported_records``): its id, the signed
    record it came as, that record's content hash and when it was stored (what the import
    index keeps), and its status, access level and scope (whether a Sync may offer it)."""

    lesson_id: str
    content_hash: str
    created_at: datetime
    signed_record: bytes
    status: LessonStatus = LessonStatus.ACTIVE
    access_level: str = "public"
    scope: str = "global"


@dataclass(frozen=True, slots=True)
class LessonFacts:
    """What the health report reads of a lesson (``lesson_facts``): its status, confidence,
    age, last use and context, without its content, vector, record or provenance."""

    id: str
    status: LessonStatus
    confidence: float
    created_at: datetime
    last_used: datetime | None
    context: dict[str, Any]
    category: Category = Category.LESSON


@dataclass(frozen=True, slots=True)
class RelevanceFloor:
    """Which of a search's top-``k`` are relevant: similarity at least ``minimum`` and at
    least ``relative`` times the best of them (recall's rule, applied where the rows are, so
    the irrelevant ones are never fetched)."""

    minimum: float
    relative: float

    def cut(self, best: float) -> float:
        """The similarity a hit needs when the best of the top-``k`` has ``best``."""
        return max(self.minimum, best * self.relative)


@dataclass(frozen=True, slots=True)
class ScoredLesson:
    """A search hit: the lesson and its cosine similarity to the query in [-1, 1]."""

    lesson: LessonRow
    similarity: float


@dataclass(frozen=True, slots=True)
class QuarantineRow:
    """A record held for operator review instead of being imported.

    ``confidence`` and ``transfer_rule`` are the import decision taken when the record was
    held (the transferred confidence and the rule that produced it): an operator's approval
    stores exactly that, not a recomputation. ``None`` for rows held before they were kept.
    """

    id: str
    content_hash: str
    source_node_id: str
    reasons: tuple[str, ...]
    received_at: datetime
    signed_record: bytes
    state: str = "pending"  # pending | approved | rejected
    confidence: float | None = None
    transfer_rule: str | None = None


@dataclass(frozen=True, slots=True)
class LessonEvent:
    """One entry of a lesson's event log: what happened, when, by whom, and why.

    ``lesson_id`` is the lesson it is about, or a quarantine row's id for an operator decision
    on a held record. ``kind`` is one of ``EVENT_KINDS``; ``actor`` is ``loop``, ``agent``,
    ``operator``, a person's single word, or a peer's node id. ``version`` is the lesson's
    record version after the event when it changed the record (0 otherwise).
    """

    lesson_id: str
    at: datetime
    kind: str
    actor: str
    confidence_before: float | None = None
    confidence_after: float | None = None
    reason: str = ""
    outcome_id: str = ""
    version: int = 0


#: Every ``LessonEvent.kind``.
EVENT_KINDS = frozenset(
    {
        "created",
        "confirmed",
        "contradicted",
        "promoted",
        "demoted",
        "decayed",
        "edited",
        "superseded",
        "retired",
        "imported",
        "version",
        "approved",
        "rejected",
        "contested",
        "merged",
    }
)


def check_event_kinds(events: Sequence[LessonEvent]) -> None:
    """Refuse a batch naming a kind outside ``EVENT_KINDS`` (both adapters call it)."""
    bad = sorted({e.kind for e in events} - EVENT_KINDS)
    if bad:
        raise InvalidRecord(
            f"unknown lesson event kinds: {', '.join(bad)}", reason="bad_event_kind"
        )


@dataclass(frozen=True, slots=True)
class RejectionRow:
    """A recorded rejection of an incoming record: who sent it, why, and what it was."""

    source_node_id: str
    reason: str
    content_hash: str
    received_at: datetime
    detail: str = ""


def lesson_sort_key(lesson: LessonRow) -> tuple[float, float, str]:
    """``list_lessons``' order, shared by every adapter: confidence desc, then newest, then id
    asc (the order the per-scope cap keeps lessons in)."""
    return (-lesson.confidence, -lesson.created_at.timestamp(), lesson.id)
