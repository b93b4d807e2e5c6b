"""Between the wire and the SDK's results: protobuf messages to results and back, and a failed
call's status to lamarck's typed error (``error_from_rpc``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import grpc
import grpc.aio
from google.protobuf import json_format, struct_pb2
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2

from lamarck import errors
from lamarck.errors import InvalidRecord, LamarckError
from lamarck.proto.outcome import Outcome
from lamarck.proto.timefmt import parse_ts
from lamarck.proto.v1 import agent_pb2, lessons_pb2, records_pb2
from lamarck.results import (
    UNKNOWN_EVIDENCE,
    Conflict,
    Evidence,
    HistoryEntry,
    ImportAck,
    ImportResult,
    Lesson,
    LessonChange,
    OutcomeResult,
    Situation,
)

__all__ = [
    "conflict_from_wire",
    "edit_request",
    "enum_value",
    "error_from_rpc",
    "history_from_wire",
    "import_requests",
    "import_result_from_wire",
    "lesson_filter",
    "lesson_from_wire",
    "memory_context",
    "outcome_bytes",
    "outcome_result_from_wire",
]

# Bundle bytes per Import message: well under the node's message cap.
_IMPORT_CHUNK = 64 * 1024
_REASON_KEY = "lamarck-reason"
_DETAILS_KEY = "grpc-status-details-bin"


# -- translation ------------------------------------------------------------------------------


def _name(enum: Any, value: int, prefix: str) -> str:
    """``LESSON_STATUS_ACTIVE`` → ``active``; an unknown number → ``unspecified``."""
    try:
        full: str = enum.Name(value)
    except ValueError:
        return "unspecified"
    return full.removeprefix(prefix).lower()


def enum_value(enum: Any, name: str, prefix: str) -> Any:
    # Any: the stubs type each enum's values as its own ValueType.
    try:
        number = enum.Value(prefix + name.upper())
    except ValueError:
        raise InvalidRecord(f"unknown value {name!r}", reason="bad_argument") from None
    return number


def _situation(s: lessons_pb2.Situation) -> Situation:
    return Situation(
        tool=s.tool,
        subject=s.subject,
        kind=s.kind,
        interactive=s.interactive,
        env_fingerprint=s.env_fingerprint,
        unblock=s.unblock,
        probe=s.probe,
        source=_name(lessons_pb2.SituationSource, s.source, "SITUATION_SOURCE_"),
    )


def _context_dict(ctx: lessons_pb2.MemoryContext) -> dict[str, Any]:
    return {
        "domain": ctx.domain,
        "environment": ctx.environment,
        "tools": list(ctx.tools),
        "constraints": json_format.MessageToDict(ctx.constraints)
        if ctx.HasField("constraints")
        else {},
    }


def _evidence(v: lessons_pb2.Evidence) -> Evidence:
    return Evidence(
        evidence_class=_name(lessons_pb2.EvidenceClass, v.evidence_class, "EVIDENCE_CLASS_"),
        independent_principals=v.independent_principals,
        contradicting_principals=v.contradicting_principals,
        certified=v.certified,
        peers=v.peers,
        authority=v.authority,
        approved=v.approved,
        label=v.label,
        own_principal=v.own_principal,
    )


def conflict_from_wire(v: agent_pb2.LessonConflict) -> Conflict:
    return Conflict(v.operation, tuple(lesson_from_wire(x) for x in v.sides), v.holds)


def lesson_from_wire(v: lessons_pb2.LessonView) -> Lesson:
    return Lesson(
        id=v.id,
        version=v.version,
        content=v.content,
        confidence=v.confidence,
        status=_name(lessons_pb2.LessonStatus, v.status, "LESSON_STATUS_"),
        scope=v.scope,
        operation=v.operation,
        category=_name(lessons_pb2.LessonCategory, v.category, "LESSON_CATEGORY_"),
        memory_type=_name(lessons_pb2.MemoryType, v.memory_type, "MEMORY_TYPE_"),
        access_level=_name(lessons_pb2.AccessLevel, v.access_level, "ACCESS_LEVEL_"),
        origin=_name(lessons_pb2.LessonOrigin, v.origin, "LESSON_ORIGIN_"),
        source_node_id=v.source_node_id,
        tags=tuple(v.tags),
        evidence_outcome_ids=tuple(v.evidence_outcome_ids),
        success_count=v.success_count,
        failure_count=v.failure_count,
        created_at=parse_ts(v.created_at),
        updated_at=parse_ts(v.updated_at),
        superseded_by=v.superseded_by,
        situation=_situation(v.situation) if v.HasField("situation") else None,
        context=_context_dict(v.context),
        imported_from=tuple(v.imported_from),
        original_confidence=(v.original_confidence if v.HasField("original_confidence") else None),
        record_json=v.record_json,
        recipients=tuple(v.recipients),
        shared=v.shared,
        not_shared_reason=v.not_shared_reason,
        state=v.lifecycle_state,
        contested_with=tuple(v.contested_with),
        verified_against=tuple(v.verified_against),
        evidence=_evidence(v.evidence) if v.HasField("evidence") else UNKNOWN_EVIDENCE,
    )


def memory_context(context: Mapping[str, Any] | None) -> lessons_pb2.MemoryContext | None:
    if context is None:
        return None
    out = lessons_pb2.MemoryContext(
        domain=str(context.get("domain") or ""),
        environment=str(context.get("environment") or ""),
        tools=[str(t) for t in context.get("tools") or ()],
    )
    constraints = context.get("constraints")
    if isinstance(constraints, Mapping) and constraints:
        struct = struct_pb2.Struct()
        struct.update({str(k): v for k, v in constraints.items()})
        out.constraints.CopyFrom(struct)
    return out


def outcome_bytes(outcome: Outcome | Mapping[str, Any] | bytes | str) -> bytes:
    # The node validates with the Outcome model; sending the model's own JSON keeps one schema.
    if isinstance(outcome, Outcome):
        return outcome.to_json()
    if isinstance(outcome, bytes):
        return outcome
    if isinstance(outcome, str):
        return outcome.encode("utf-8")
    return json.dumps(dict(outcome), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def outcome_result_from_wire(r: agent_pb2.RecordOutcomeResponse) -> OutcomeResult:
    return OutcomeResult(
        outcome_id=r.outcome_id,
        duplicate=r.duplicate,
        changes=tuple(
            LessonChange(
                lesson_id=c.lesson_id,
                kind=_name(lessons_pb2.LessonEventKind, c.kind, "LESSON_EVENT_KIND_"),
                version=c.version,
                confidence_before=c.confidence_before,
                confidence_after=c.confidence_after,
                status=_name(lessons_pb2.LessonStatus, c.status, "LESSON_STATUS_"),
            )
            for c in r.changes
        ),
        nothing_learned=r.nothing_learned,
    )


def history_from_wire(r: agent_pb2.HistoryResponse) -> list[HistoryEntry]:
    return [
        HistoryEntry(
            at=parse_ts(e.at),
            kind=_name(lessons_pb2.LessonEventKind, e.kind, "LESSON_EVENT_KIND_"),
            version=e.version,
            status=_name(lessons_pb2.LessonStatus, e.status, "LESSON_STATUS_"),
            confidence=e.confidence,
            outcome_id=e.outcome_id,
            actor=e.actor,
            reason=e.reason,
            record_json=e.record_json,
            confidence_before=e.confidence_before,
        )
        for e in r.entries
    ]


def lesson_filter(
    *,
    category: str | None = None,
    scope: str | None = None,
    statuses: Sequence[str] | str | None = None,
    min_confidence: float | None = None,
    origin: str | None = None,
    operation: str | None = None,
) -> lessons_pb2.LessonFilter:
    if isinstance(statuses, str):
        statuses = (statuses,)
    return lessons_pb2.LessonFilter(
        category=enum_value(lessons_pb2.LessonCategory, category, "LESSON_CATEGORY_")
        if category
        else lessons_pb2.LESSON_CATEGORY_UNSPECIFIED,
        scope=scope or "",
        statuses=[
            enum_value(lessons_pb2.LessonStatus, s, "LESSON_STATUS_") for s in statuses or ()
        ],
        min_confidence=min_confidence or 0.0,
        origin=enum_value(lessons_pb2.LessonOrigin, origin, "LESSON_ORIGIN_")
        if origin
        else lessons_pb2.LESSON_ORIGIN_UNSPECIFIED,
        operation=operation or "",
    )


def import_result_from_wire(r: agent_pb2.ImportResponse) -> ImportResult:
    return ImportResult(
        tuple(
            ImportAck(
                index=a.index,
                record_hash=a.record_hash,
                status=_name(records_pb2.AckStatus, a.status, "ACK_STATUS_"),
                reason=a.reason,
            )
            for a in r.acks
        )
    )


def import_requests(
    bundle: bytes | str, dry_run: bool, source_label: str
) -> list[agent_pb2.ImportRequest]:
    data = bundle.encode("utf-8") if isinstance(bundle, str) else bundle
    requests = [
        agent_pb2.ImportRequest(
            options=agent_pb2.ImportOptions(dry_run=dry_run, source_label=source_label)
        )
    ]
    requests.extend(
        agent_pb2.ImportRequest(jsonl=data[i : i + _IMPORT_CHUNK])
        for i in range(0, len(data), _IMPORT_CHUNK)
    )
    return requests


_ACCESS_LEVELS = {
    "public": lessons_pb2.ACCESS_LEVEL_PUBLIC,
    "trusted": lessons_pb2.ACCESS_LEVEL_TRUSTED,
    "private": lessons_pb2.ACCESS_LEVEL_PRIVATE,
}


def edit_request(
    lesson_id: str,
    content: str | None,
    expected_version: int,
    reason: str,
    access_level: str | None = None,
    recipients: Sequence[str] = (),
) -> agent_pb2.EditRequest:
    request = agent_pb2.EditRequest(
        lesson_id=lesson_id,
        expected_version=expected_version,
        reason=reason,
        recipients=list(recipients),
    )
    if content is not None:
        request.content = content
    if access_level is not None:
        level = _ACCESS_LEVELS.get(access_level)
        if level is None:
            raise InvalidRecord(
                f"access level must be one of {', '.join(_ACCESS_LEVELS)}",
                reason="bad_access_level",
            )
        request.access_level = level
    return request


# -- errors ---------------------------------------------------------------------------------


def _error_class(name: str) -> type[LamarckError] | None:
    cls = getattr(errors, name, None) if name in errors.__all__ else None
    return cls if isinstance(cls, type) and issubclass(cls, LamarckError) else None


_BY_CODE: dict[grpc.StatusCode, type[LamarckError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: errors.InvalidRecord,
    grpc.StatusCode.PERMISSION_DENIED: errors.VerificationError,
    grpc.StatusCode.ALREADY_EXISTS: errors.ReplayError,
    grpc.StatusCode.FAILED_PRECONDITION: errors.PolicyRejected,
    grpc.StatusCode.NOT_FOUND: errors.NotFound,
    grpc.StatusCode.ABORTED: errors.ConflictError,
    grpc.StatusCode.UNAUTHENTICATED: errors.PolicyRejected,
    grpc.StatusCode.RESOURCE_EXHAUSTED: errors.PolicyRejected,
}


def error_from_rpc(err: grpc.RpcError) -> LamarckError:
    """The lamarck typed error a failed call carries (see the module docstring)."""
    call: Any = err
    code = call.code() if hasattr(call, "code") else grpc.StatusCode.UNKNOWN
    message = (call.details() if hasattr(call, "details") else None) or str(code)
    trailing: Any = call.trailing_metadata() if hasattr(call, "trailing_metadata") else None
    reason: str | None = None
    type_name = ""
    details: dict[str, Any] = {}
    for key, value in trailing or ():
        if key == _REASON_KEY:
            reason = value if isinstance(value, str) else value.decode()
        elif key == _DETAILS_KEY and isinstance(value, bytes):
            try:
                status = status_pb2.Status.FromString(value)
            except DecodeError:  # a garbled detail must not hide the error itself
                continue
            for any_detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if any_detail.Unpack(info):
                    reason = info.reason or reason
                    type_name = info.metadata.get("type", "")
                    details = {k: v for k, v in info.metadata.items() if k != "type"}
    cls = _error_class(type_name)
    if cls is None and reason is not None:
        cls = _BY_CODE.get(code, LamarckError)
    if cls is None:
        # Never reached a lamarck handler: transport failure, deadline, cancellation.
        return LamarckError(message, reason=code.name.lower(), code=code.name)
    # An ErrorInfo message is already "reason: text"; do not prefix the reason twice.
    text = message.removeprefix(f"{reason}: ") if reason else message
    return cls(text, reason=reason, code=code.name, **details)
