"""How ``AgentService`` (``lamarck.node.api.agent_service``) puts lessons on the wire and
reads its requests: the enum maps, contexts, lesson views, history entries and list filters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf import json_format, struct_pb2

from lamarck.consensus.corroboration import EvidenceClass
from lamarck.domain.rows import (
    Category,
    LessonEvent,
    LessonFilter,
    LessonRow,
    LessonStatus,
)
from lamarck.gossip.publisher import lesson_record
from lamarck.gossip.share_reason import SharingState, share_status
from lamarck.learning.influence import LessonEvidence, evidence_label
from lamarck.learning.knowledge_params import LifecycleParams
from lamarck.learning.lifecycle import state_of
from lamarck.learning.scopes import validate_scope
from lamarck.learning.situations import SituationSource
from lamarck.policy.decision import ImportOutcome
from lamarck.proto.timefmt import format_ts
from lamarck.proto.v1 import lessons_pb2, records_pb2

__all__ = [
    "ACCESS_FROM_PB",
    "ACTOR",
    "CHANGE_TO_PB",
    "IMPORT_TO_ACK",
    "SITUATION_SOURCE_FROM_PB",
    "STATUS_TO_PB",
    "compact_json",
    "context_from_proto",
    "described_history",
    "evidence_to_proto",
    "history_entry",
    "lesson_filter",
    "lesson_view",
]

#: The actor recorded for writes made through this API (the local agent or its operator).
ACTOR = "agent"


# -- enum maps ---------------------------------------------------------------------------

STATUS_TO_PB = {
    LessonStatus.CLAIMED: lessons_pb2.LESSON_STATUS_CLAIMED,
    LessonStatus.ACTIVE: lessons_pb2.LESSON_STATUS_ACTIVE,
    LessonStatus.SUPERSEDED: lessons_pb2.LESSON_STATUS_SUPERSEDED,
    LessonStatus.RETIRED: lessons_pb2.LESSON_STATUS_RETIRED,
}
_STATUS_FROM_PB = {v: k for k, v in STATUS_TO_PB.items()}
_CATEGORY_TO_PB = {
    Category.LESSON: lessons_pb2.LESSON_CATEGORY_OPERATION,
    Category.SITUATION: lessons_pb2.LESSON_CATEGORY_SITUATION,
}
_CATEGORY_FROM_PB = {v: k for k, v in _CATEGORY_TO_PB.items()}
_ACCESS_TO_PB = {
    "public": lessons_pb2.ACCESS_LEVEL_PUBLIC,
    "trusted": lessons_pb2.ACCESS_LEVEL_TRUSTED,
    "private": lessons_pb2.ACCESS_LEVEL_PRIVATE,
}
ACCESS_FROM_PB = {v: k for k, v in _ACCESS_TO_PB.items()}
_TYPE_TO_PB = {"UC": lessons_pb2.MEMORY_TYPE_UC, "AC": lessons_pb2.MEMORY_TYPE_AC}
_SITUATION_SOURCE_TO_PB = {
    "declared": lessons_pb2.SITUATION_SOURCE_DECLARED,
    "inferred": lessons_pb2.SITUATION_SOURCE_INFERRED,
}
SITUATION_SOURCE_FROM_PB = {v: SituationSource(k) for k, v in _SITUATION_SOURCE_TO_PB.items()}
# LessonService's change vocabulary → the wire's event kinds.
CHANGE_TO_PB = {
    "created": lessons_pb2.LESSON_EVENT_KIND_CREATED,
    "confirmed": lessons_pb2.LESSON_EVENT_KIND_CONFIRMED,
    "contradicted": lessons_pb2.LESSON_EVENT_KIND_CONTRADICTED,
    "promoted": lessons_pb2.LESSON_EVENT_KIND_PROMOTED,
    "demoted": lessons_pb2.LESSON_EVENT_KIND_DEMOTED,
    "retired": lessons_pb2.LESSON_EVENT_KIND_RETIRED,
    "superseded": lessons_pb2.LESSON_EVENT_KIND_SUPERSEDED,
}
IMPORT_TO_ACK = {
    ImportOutcome.ACCEPT: records_pb2.ACK_STATUS_ACCEPTED,
    ImportOutcome.DUPLICATE: records_pb2.ACK_STATUS_DUPLICATE,
    ImportOutcome.QUARANTINE: records_pb2.ACK_STATUS_QUARANTINED,
    ImportOutcome.REJECT: records_pb2.ACK_STATUS_REJECTED,
}


_CLASS_TO_PB = {
    EvidenceClass.PROVEN_HERE: lessons_pb2.EVIDENCE_CLASS_PROVEN_HERE,
    EvidenceClass.CORROBORATED: lessons_pb2.EVIDENCE_CLASS_CORROBORATED,
    EvidenceClass.UNVERIFIED: lessons_pb2.EVIDENCE_CLASS_UNVERIFIED,
}


def evidence_to_proto(evidence: LessonEvidence, confidence: float) -> lessons_pb2.Evidence:
    """A lesson's evidence on the wire, with the label every surface shows."""
    return lessons_pb2.Evidence(
        evidence_class=_CLASS_TO_PB[evidence.evidence_class],
        independent_principals=evidence.independent,
        contradicting_principals=len(evidence.support.contradicting),
        certified=evidence.support.certified,
        peers=evidence.peers,
        authority=evidence.authority,
        approved=evidence.approved,
        label=evidence_label(evidence, confidence),
        own_principal=evidence.own_principal,
    )


# -- context ------------------------------------------------------------------------------


def _constraint_text(value: Any) -> str:
    # The record's constraints are string → string; a number or list from a Struct is kept as
    # its JSON text so it survives the round trip unchanged in meaning.
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def context_from_proto(ctx: lessons_pb2.MemoryContext) -> dict[str, Any]:
    """A ``MemoryContext`` as the context mapping the lesson service and records use."""
    constraints: dict[str, str] = {}
    if ctx.HasField("constraints"):
        raw = json_format.MessageToDict(ctx.constraints)
        constraints = {str(k): _constraint_text(v) for k, v in raw.items()}
    return {
        "domain": ctx.domain,
        "environment": ctx.environment,
        "tools": [t for t in ctx.tools if t],
        "constraints": constraints,
    }


def _context_to_proto(context: Mapping[str, Any]) -> lessons_pb2.MemoryContext:
    """A stored context mapping as a ``MemoryContext`` (unknown keys are not shown)."""
    out = lessons_pb2.MemoryContext(
        domain=str(context.get("domain") or ""),
        environment=str(context.get("environment") or ""),
        tools=[str(t) for t in context.get("tools") or () if t],
    )
    constraints = context.get("constraints")
    if isinstance(constraints, Mapping) and constraints:
        struct = struct_pb2.Struct()
        struct.update({str(k): _constraint_text(v) for k, v in constraints.items()})
        out.constraints.CopyFrom(struct)
    return out


# -- rows → records and views ---------------------------------------------------------------


def _situation_to_proto(situation: Mapping[str, Any]) -> lessons_pb2.Situation:
    return lessons_pb2.Situation(
        tool=str(situation.get("tool") or ""),
        subject=str(situation.get("subject") or ""),
        kind=str(situation.get("kind") or ""),
        interactive=bool(situation.get("interactive", False)),
        env_fingerprint=str(situation.get("env_fingerprint") or ""),
        unblock=str(situation.get("unblock") or ""),
        probe=str(situation.get("probe") or ""),
        source=_SITUATION_SOURCE_TO_PB.get(
            str(situation.get("source") or ""), lessons_pb2.SITUATION_SOURCE_UNSPECIFIED
        ),
    )


def compact_json(obj: Mapping[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


# The event log's kinds → the wire's; the status an ending event leaves the lesson in.
_EVENT_TO_PB = {
    **CHANGE_TO_PB,
    "decayed": lessons_pb2.LESSON_EVENT_KIND_DECAYED,
    "edited": lessons_pb2.LESSON_EVENT_KIND_EDITED,
    "imported": lessons_pb2.LESSON_EVENT_KIND_IMPORTED,
    "version": lessons_pb2.LESSON_EVENT_KIND_VERSION,
    "approved": lessons_pb2.LESSON_EVENT_KIND_APPROVED,
    "rejected": lessons_pb2.LESSON_EVENT_KIND_REJECTED,
}
_ENDING_STATUS = {"retired": LessonStatus.RETIRED, "superseded": LessonStatus.SUPERSEDED}


def history_entry(
    event: LessonEvent, row: LessonRow, version: int, record: bytes
) -> lessons_pb2.HistoryEntry:
    """One logged event as a history entry (``version``: the row's place in its chain)."""
    status = _ENDING_STATUS.get(event.kind, row.status)
    return lessons_pb2.HistoryEntry(
        at=format_ts(event.at),
        kind=_EVENT_TO_PB.get(event.kind, lessons_pb2.LESSON_EVENT_KIND_UNSPECIFIED),
        version=version,
        status=STATUS_TO_PB[status],
        confidence=row.confidence if event.confidence_after is None else event.confidence_after,
        confidence_before=event.confidence_before or 0.0,
        outcome_id=event.outcome_id,
        actor=event.actor,
        reason=event.reason,
        record_json=record,
    )


def lesson_view(
    row: LessonRow,
    version: int,
    evidence: LessonEvidence | None,
    *,
    node_id: str,
    lifecycle: LifecycleParams,
    sharing: SharingState | None,
) -> lessons_pb2.LessonView:
    """A stored lesson as the agent sees it (``version``: its place in its chain) on this
    node, ``node_id``, whose lifecycle and sharing rules say what it is."""
    imported = row.imported_from is not None
    sources = [p.source_node_id for p in row.provenance] or (
        [row.imported_from] if row.imported_from else []
    )
    if row.signed_record is not None:
        record_json = row.signed_record
    else:
        record_json = compact_json(lesson_record(row, node_id))
    view = lessons_pb2.LessonView(
        id=row.id,
        version=version,
        content=row.content,
        confidence=row.confidence,
        status=STATUS_TO_PB[row.status],
        scope=row.scope,
        operation=row.operation if row.category is Category.LESSON else "",
        category=_CATEGORY_TO_PB[row.category],
        memory_type=_TYPE_TO_PB.get(row.memory_type, lessons_pb2.MEMORY_TYPE_UNSPECIFIED),
        access_level=_ACCESS_TO_PB.get(row.access_level, lessons_pb2.ACCESS_LEVEL_UNSPECIFIED),
        origin=lessons_pb2.LESSON_ORIGIN_IMPORTED if imported else lessons_pb2.LESSON_ORIGIN_LOCAL,
        source_node_id=row.source_node_id or node_id,
        tags=list(row.tags),
        evidence_outcome_ids=[] if imported else list(row.evidence),
        success_count=row.confirmations,
        failure_count=row.contradictions,
        created_at=format_ts(row.created_at),
        updated_at=format_ts(max(row.updated_at, row.created_at)),
        superseded_by=row.superseded_by or "",
        context=_context_to_proto(row.context),
        imported_from=list(dict.fromkeys(sources)) if imported else [],
        record_json=record_json,
        recipients=list(row.recipients),
        lifecycle_state=state_of(row, lifecycle).value,
        contested_with=list(row.contested_with),
        verified_against=list(row.verified_against),
    )
    if row.situation is not None:
        view.situation.CopyFrom(_situation_to_proto(row.situation))
    if evidence is not None:
        view.evidence.CopyFrom(evidence_to_proto(evidence, row.confidence))
    if row.original_confidence is not None:
        view.original_confidence = row.original_confidence
    # The publisher's own rule (gossip/share_reason.py mirrors may_publish).
    why_not = share_status(row, sharing)
    view.shared = why_not is None
    view.not_shared_reason = why_not or ""
    return view


def described_history(
    chain: Sequence[LessonRow], i: int, node_id: str
) -> list[lessons_pb2.HistoryEntry]:
    """History entries for a row without logged events, from its stored state."""
    row = chain[i]
    version = i + 1
    record = row.signed_record or compact_json(lesson_record(row, node_id))
    first = i == 0
    entries = [
        lessons_pb2.HistoryEntry(
            at=format_ts(row.created_at),
            kind=(
                lessons_pb2.LESSON_EVENT_KIND_IMPORTED
                if first and row.imported_from is not None
                else lessons_pb2.LESSON_EVENT_KIND_CREATED
                if first
                else lessons_pb2.LESSON_EVENT_KIND_EDITED
            ),
            version=version,
            status=STATUS_TO_PB[row.status],
            confidence=row.confidence,
            outcome_id=row.evidence[0] if first and row.evidence else "",
            actor=(row.imported_from or "loop") if first else ACTOR,
            record_json=record,
        )
    ]
    if row.superseded_by is not None and row.superseded_by.startswith("retired:"):
        entries.append(
            lessons_pb2.HistoryEntry(
                at=format_ts(row.updated_at),
                kind=lessons_pb2.LESSON_EVENT_KIND_RETIRED,
                version=version,
                status=STATUS_TO_PB[row.status],
                confidence=row.confidence,
                confidence_before=row.confidence,
                actor=row.superseded_by.removeprefix("retired:"),
            )
        )
    elif row.status is LessonStatus.RETIRED:
        # Retired by the rules (contradicted below the floor, decay), not by a person.
        entries.append(
            lessons_pb2.HistoryEntry(
                at=format_ts(row.updated_at),
                kind=lessons_pb2.LESSON_EVENT_KIND_RETIRED,
                version=version,
                status=STATUS_TO_PB[row.status],
                confidence=row.confidence,
                confidence_before=row.confidence,
                actor="loop",
                reason="below_retire_level",
            )
        )
    elif row.superseded_by is not None or row.status is LessonStatus.SUPERSEDED:
        successor = chain[i + 1] if i + 1 < len(chain) else None
        entries.append(
            lessons_pb2.HistoryEntry(
                at=format_ts(successor.created_at if successor else row.updated_at),
                kind=lessons_pb2.LESSON_EVENT_KIND_SUPERSEDED,
                version=version,
                status=STATUS_TO_PB[LessonStatus.SUPERSEDED],
                confidence=row.confidence,
                confidence_before=row.confidence,
                actor="loop",
                reason=row.superseded_by or "cap",
            )
        )
    return entries


def lesson_filter(flt: lessons_pb2.LessonFilter, *, limit: int, offset: int) -> LessonFilter:
    """The wire filter as the store's (an empty filter selects every lesson)."""
    statuses = tuple(_STATUS_FROM_PB[s] for s in flt.statuses if s in _STATUS_FROM_PB) or None
    origin = flt.origin
    return LessonFilter(
        statuses=statuses,
        scopes=(validate_scope(flt.scope),) if flt.scope else None,
        category=_CATEGORY_FROM_PB.get(flt.category),
        operation=flt.operation or None,
        min_confidence=flt.min_confidence or None,
        imported=(
            None
            if origin == lessons_pb2.LESSON_ORIGIN_UNSPECIFIED
            else origin == lessons_pb2.LESSON_ORIGIN_IMPORTED
        ),
        limit=limit,
        offset=offset,
    )
