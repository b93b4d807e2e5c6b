"""The rows the import pipeline stores: an imported copy of a record (``imported_row``), a
newer version of a copy held here (``newer_version_row``) and the lesson events a version
change logs (``version_events``)."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime

from lamarck.domain.rows import (
    Category,
    LessonEvent,
    LessonRow,
    LessonStatus,
    ProvenanceEntry,
    Vector,
)
from lamarck.learning.evidence import LocalCopy, carries_evidence, confidence_on_new_version
from lamarck.learning.params import EvidenceParams
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import SignedMemory

__all__ = [
    "held_record_id",
    "imported_row",
    "newer_version_row",
    "record_status",
    "version_events",
]


def imported_row(
    signed: SignedMemory,
    *,
    lesson_id: str,
    confidence: float,
    via_node_id: str,
    now: datetime,
    embedding: Vector | None = None,
) -> LessonRow:
    """The imported ``LessonRow`` for an accepted record (embedding attached by the caller)."""
    record = signed.memory
    lesson = record.lesson
    source = record.provenance.source_agent_id
    return LessonRow(
        id=lesson_id,
        content=record.content,
        operation=lesson.operation if lesson is not None else "",
        scope=lesson.scope if lesson is not None else "global",
        status=record_status(record),
        confidence=confidence,
        created_at=now,
        updated_at=now,
        category=Category.SITUATION if record.situation is not None else Category.LESSON,
        context=record.context.model_dump(mode="json", exclude_none=True),
        situation=(
            record.situation.model_dump(mode="json", exclude_none=True)
            if record.situation is not None
            else None
        ),
        tags=tuple(record.metadata.tags),
        change_reason=lesson.reason if lesson is not None else None,
        memory_type=record.type,
        access_level=record.access_level,
        source_node_id=source,
        imported_from=source,
        original_confidence=record.confidence,
        transferred_confidence=confidence,
        signed_record=signed.raw,
        content_hash=signed.content_hash,
        provenance=(ProvenanceEntry(source, via_node_id, now, signed.content_hash),),
        embedding=embedding,
    )


#: A record's lesson status → the status its copy takes here (``claimed`` is never stored).
_RECORD_STATUS = {
    "retired": LessonStatus.RETIRED,
    "superseded": LessonStatus.SUPERSEDED,
}


def record_status(record: MemoryV2) -> LessonStatus:
    """The status a copy of ``record`` is stored with: the source's retirement or supersession
    travels in its signed record and takes the copy out of every prompt here too."""
    lesson = record.lesson
    if lesson is None:
        return LessonStatus.ACTIVE
    return _RECORD_STATUS.get(lesson.status, LessonStatus.ACTIVE)


def newer_version_row(
    older: LessonRow,
    signed: SignedMemory,
    *,
    transferred: float,
    via_node_id: str,
    now: datetime,
    params: EvidenceParams,
    embedding: Vector | None,
) -> LessonRow:
    """The held copy ``older`` once a newer signed version of its record, or its source's edit
    of it (a record whose ``metadata.supersedes`` names the one ``older`` holds), is stored.

    The source's part (content, claim, status, signed bytes, access level) comes from the new
    record; this node's part stays: the local id, first arrival, uses, a retirement decided
    here and, while the lesson's operation is the same, its evidence (outcome ids, counts,
    confirmed projects, a project scope its outcomes set) and its confidence's local margin
    (``confidence_on_new_version``, ``learning/evidence.py``). A version about another
    operation is another claim: evidence about the old operation does not confirm it, so the
    copy starts from the new transferred confidence with no local outcomes (the event log
    keeps what was there). An end the source signed (retired, superseded) is the source's to
    lift: a later version or edit from it stands. ``embedding`` is None when the content did
    not change (the stored vector is kept).
    """
    fresh = imported_row(
        signed,
        lesson_id=older.id,
        confidence=transferred,
        via_node_id=via_node_id,
        now=now,
    )
    entry = ProvenanceEntry(signed.source_agent_id, via_node_id, now, signed.content_hash)
    # A copy this node ended (its own evidence, its operator, taint) stays ended.
    local_end = older.status in _ENDED and older.status is not _signed_status(older)
    kept = dataclasses.replace(
        fresh,
        status=older.status if local_end else fresh.status,
        created_at=older.created_at,
        last_used=older.last_used,
        use_count=older.use_count,
        superseded_by=older.superseded_by if local_end else None,
        supersedes=older.supersedes,
        provenance=(*older.provenance, entry),
        embedding=embedding,
    )
    if not carries_evidence(older.operation, fresh.operation):
        return kept
    outcomes = older.confirmations + older.contradictions
    copy = LocalCopy(older.confidence, older.transferred_confidence, outcomes)
    return dataclasses.replace(
        kept,
        confidence=confidence_on_new_version(copy, transferred, params),
        scope=older.scope if outcomes else fresh.scope,
        evidence=older.evidence,
        confirmations=older.confirmations,
        contradictions=older.contradictions,
        confirmed_projects=older.confirmed_projects,
    )


_ENDED = (LessonStatus.RETIRED, LessonStatus.SUPERSEDED)


def _signed_status(row: LessonRow) -> LessonStatus | None:
    """The status the source signed into the record ``row`` holds (None: unreadable)."""
    if row.signed_record is None:
        return None
    try:
        obj = json.loads(row.signed_record)
        status = obj["lesson"]["status"]
    except (ValueError, KeyError, TypeError):
        return None
    return _RECORD_STATUS.get(status, LessonStatus.ACTIVE) if isinstance(status, str) else None


def held_record_id(row: LessonRow) -> str | None:
    """The id of the signed record an imported copy holds now (None: none readable)."""
    if row.signed_record is None:
        return None
    try:
        value = json.loads(row.signed_record).get("id")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def version_events(
    older: LessonRow | None, row: LessonRow, record: MemoryV2, now: datetime
) -> list[LessonEvent]:
    """The event-log entries for storing ``row`` (first import, a newer version of
    ``older``, or its source's edit of it), and the end the source's record announces, if it
    ends the copy here; each says who and why, as the source signed it."""
    source = record.provenance.source_agent_id
    lesson = record.lesson
    version = lesson.version if lesson is not None else 1
    why = f": {lesson.reason}" if lesson is not None and lesson.reason else ""
    if older is None:
        events = [
            LessonEvent(row.id, now, "imported", source, None, row.confidence, version=version)
        ]
    else:
        before = held_record_id(older)
        if before is not None and before != record.id:
            said = f"edited by its source: record {record.id} supersedes {before}{why}"
            kind = "edited"
        else:
            said, kind = f"newer version {version} from its source", "version"
        if not carries_evidence(older.operation, row.operation):
            outcomes = older.confirmations + older.contradictions
            said += (
                f"; operation changed from {older.operation} to {row.operation}: "
                f"{outcomes} local outcome(s) about the old one no longer count"
            )
        events = [
            LessonEvent(
                row.id,
                now,
                kind,
                source,
                older.confidence,
                row.confidence,
                reason=said,
                version=version,
            )
        ]
    was_live = older is None or older.status in (LessonStatus.ACTIVE, LessonStatus.CLAIMED)
    if was_live and row.status in _ENDED:
        kind = "retired" if row.status is LessonStatus.RETIRED else "superseded"
        events.append(
            LessonEvent(
                row.id,
                now,
                kind,
                source,
                row.confidence,
                row.confidence,
                # A retirement's reason is the record's; a superseded record's reason is the
                # one of the version it was (its edit says why it was superseded).
                reason=_end_reason(kind, record) + (why if kind == "retired" else ""),
                version=version,
            )
        )
    return events


def _end_reason(kind: str, record: MemoryV2) -> str:
    """Who ended the copy, as the record says: by ``<who>`` at its source (a retirement), by its
    source with ``<successor id>`` (an edit), or by its source."""
    ended_by = record.metadata.superseded_by or ""
    if ended_by.startswith("retired:") and ended_by != "retired:":
        return f"{kind} by {ended_by.removeprefix('retired:')} at its source"
    if ended_by and not ended_by.startswith("retired:"):
        return f"{kind} by its source with {ended_by}"
    return f"{kind} by its source"
