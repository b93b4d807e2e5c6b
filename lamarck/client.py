"""``lamarck.client``: the Python SDK for a node's AgentService, with typed results.

An agent loop writes::

    from lamarck.client import Client

    with Client.from_home("~/.lamarck") as client:
        recalled = client.recall("fix the failing test", context={"domain": "python"},
                                 session_id=session)
        prompt = recalled.section + "\\n\\n" + task
        ...
        client.record_outcome(outcome)            # a lamarck.proto.outcome.Outcome or a dict

``AsyncClient`` is the same API for asyncio (``await client.recall(...)``). Each call is written
once, in ``AsyncClient``; ``Client`` runs that same code over a blocking channel, needs no event
loop and blocks only its caller's thread. Results are frozen dataclasses, never protobufs; enums
are lower-case strings (``"active"``, ``"confirmed"``).

Failures are lamarck's typed errors, rebuilt on this side from the ``google.rpc.ErrorInfo``
the node attaches (falling back to the ``lamarck-reason`` trailer and the status code), so
``except SecretDetected`` works here as it does inside the node. A call that never reached a
node (nothing listening, deadline) raises ``LamarckError`` with reason ``unavailable`` or
``deadline_exceeded``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import math
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import (
    Any,
    ClassVar,
    Concatenate,
    Generic,
    ParamSpec,
    Protocol,
    Self,
    TypeVar,
    cast,
)

import grpc
import grpc.aio
from google.protobuf import json_format, struct_pb2
from google.rpc import error_details_pb2, status_pb2

from lamarck import errors
from lamarck.errors import ConfigError, InvalidRecord, LamarckError
from lamarck.proto.outcome import Outcome
from lamarck.proto.timefmt import parse_ts
from lamarck.proto.v1 import agent_pb2, agent_pb2_grpc, lessons_pb2, records_pb2

__all__ = [
    "DEFAULT_PACING",
    "DEFAULT_TIMEOUT_S",
    "EVIDENCE_CLASSES",
    "AsyncClient",
    "AsyncServiceClient",
    "CheckResult",
    "Client",
    "Conflict",
    "Evidence",
    "HistoryEntry",
    "ImportAck",
    "ImportPacing",
    "ImportResult",
    "Lesson",
    "LessonChange",
    "LessonPage",
    "OutcomeResult",
    "RecallResult",
    "RememberResult",
    "ServiceClient",
    "Situation",
    "SituationFields",
    "blocking",
    "dial_address",
    "error_from_rpc",
    "node_address",
]

#: Per-call deadline unless the caller gives another.
DEFAULT_TIMEOUT_S = 30.0
# Bundle bytes per Import message: well under the node's message cap.
_IMPORT_CHUNK = 64 * 1024
_NODE_FILE = "node.json"
_TOKEN_FILE = "agent.token"
_REASON_KEY = "lamarck-reason"
_DETAILS_KEY = "grpc-status-details-bin"

# -- results --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Situation:
    """A remembered blocker: which tool on what, and what cleared it last time."""

    tool: str
    subject: str
    kind: str
    interactive: bool
    env_fingerprint: str
    unblock: str
    probe: str
    source: str


#: What each evidence class means (the node's words; ``Evidence.evidence_class``).
EVIDENCE_CLASSES = {
    "proven_here": "learned here, or confirmed by this node's own outcomes: may drive decisions",
    "corroborated": (
        "confirmed by signed outcome attestations of enough independent principals (the "
        "source's excluded), or accepted by a quorum certificate: may drive decisions"
    ),
    "unverified": ("from peers and confirmed by nobody independent: a hint at most, never advice"),
}


@dataclass(frozen=True, slots=True)
class Evidence:
    """How far a lesson is proven for the node that shows it, counted by principal."""

    evidence_class: str  # proven_here | corroborated | unverified | unspecified (older node)
    independent_principals: int = 0  # independent principals whose attestations confirm it
    contradicting_principals: int = 0
    certified: bool = False  # a quorum certificate the node verified accepted it
    peers: int = 0  # principals behind an import: its source and those confirming it
    authority: bool = False  # a peer lesson about the agent's authority
    approved: bool = False  # an operator approved the record on this node
    label: str = ""  # e.g. "unverified, from 1 peer, confidence 0.29"

    @property
    def decides(self) -> bool:
        """Whether the lesson may drive a decision (proven here or corroborated)."""
        return self.evidence_class in ("proven_here", "corroborated")

    @property
    def rank(self) -> int:
        """0 for the strongest class; what conflicts are ordered by first."""
        return {"proven_here": 0, "corroborated": 1}.get(self.evidence_class, 2)


UNKNOWN_EVIDENCE = Evidence("unspecified")


@dataclass(frozen=True, slots=True)
class Lesson:
    """A lesson as the node shows it (see ``LessonView`` in lessons.proto)."""

    id: str
    version: int
    content: str
    confidence: float
    status: str  # claimed | active | superseded | retired
    scope: str
    operation: str
    category: str  # operation | situation
    memory_type: str  # uc | ac
    access_level: str  # public | trusted | private
    origin: str  # local | imported
    source_node_id: str
    tags: tuple[str, ...]
    evidence_outcome_ids: tuple[str, ...]
    success_count: int
    failure_count: int
    created_at: datetime
    updated_at: datetime
    superseded_by: str
    situation: Situation | None
    context: dict[str, Any]
    imported_from: tuple[str, ...]
    original_confidence: float | None
    record_json: bytes = field(repr=False)
    recipients: tuple[str, ...] = ()
    #: Whether the node publishes it to its peers, by the publisher's own rule.
    shared: bool = False
    #: When not shared, why: claimed, no_evidence, below_publish_threshold, scope_not_shared,
    #: incognito, sharing_off, imported_copy, ... ("" when shared).
    not_shared_reason: str = ""
    #: Where it stands: hypothesis | tested | verified | established | deprecated.
    state: str = ""
    #: Lessons it contradicts while the conflict is open (then it is not advice).
    contested_with: tuple[str, ...] = ()
    #: Lessons it beat in a settled conflict.
    verified_against: tuple[str, ...] = ()
    #: Its evidence class, independent support and label for the node that showed it.
    evidence: Evidence = UNKNOWN_EVIDENCE

    @property
    def contested(self) -> bool:
        """Whether the lesson is in an open conflict."""
        return bool(self.contested_with)

    @property
    def record(self) -> dict[str, Any]:
        """The full memory record (for a signed record: the object its signed bytes hold)."""
        value: dict[str, Any] = json.loads(self.record_json)
        return value


@dataclass(frozen=True, slots=True)
class Conflict:
    """Lessons that disagree about an operation, strongest evidence first; ``holds`` is the
    id of the side that holds (a strictly stronger class), "" while unresolved."""

    operation: str
    sides: tuple[Lesson, ...]
    holds: str = ""


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Plan-time recall: the advice best first (with their scores) and the "Lessons:" section.

    ``lessons`` are proven here or corroborated; ``hints`` unverified peer lessons the section
    shows under their own label (never advice); ``conflicts`` the disagreements it shows.
    ``indexing`` counts lessons just written that this recall could not search yet (their
    vectors are being written behind earlier replies; 0: it saw every write).
    """

    lessons: tuple[Lesson, ...]
    section: str
    scores: tuple[float, ...] = ()
    hints: tuple[Lesson, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    indexing: int = 0


@dataclass(frozen=True, slots=True)
class LessonChange:
    """How an outcome moved one lesson."""

    lesson_id: str
    kind: str  # created | confirmed | contradicted | promoted | demoted | retired | ...
    version: int
    confidence_before: float
    confidence_after: float
    status: str


@dataclass(frozen=True, slots=True)
class OutcomeResult:
    """What recording an outcome did."""

    outcome_id: str
    duplicate: bool
    changes: tuple[LessonChange, ...]
    #: Why no lesson was created, confirmed or contradicted ("" when one was): the node's
    #: reason (``lamarck.learning.why``), e.g. ``no_failed_then_ok_pair``.
    nothing_learned: str = ""

    def ids(self, kind: str) -> list[str]:
        """Lesson ids with the given change kind, in order."""
        return [c.lesson_id for c in self.changes if c.kind == kind]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What is on file for an operation about to run (advice only).

    ``lessons`` are the advice (proven here or corroborated), strongest first; an unverified
    lesson is never among them. ``conflicts`` are the disagreements on file about it.
    """

    preamble: str
    probe: str
    unblock: str
    lesson_ids: tuple[str, ...]
    lessons: tuple[Lesson, ...] = ()
    conflicts: tuple[Conflict, ...] = ()


@dataclass(frozen=True, slots=True)
class RememberResult:
    """A stored claim, and whether it is new."""

    lesson: Lesson
    created: bool
    #: What a claim is: kept out of recall and sharing until an outcome confirms it; to
    #: record what just happened, call ``record_outcome`` instead.
    note: str = ""


class SituationFields(Protocol):
    """A declared situation to remember (``lamarck.agent.Situation`` fits)."""

    @property
    def tool(self) -> str:
        """The tool that hit the blocker."""
        ...

    @property
    def subject(self) -> str:
        """What it was called on."""
        ...

    @property
    def kind(self) -> str:
        """The blocker kind (auth, permission, not_installed, ...)."""
        ...

    @property
    def interactive(self) -> bool:
        """Whether clearing it needs a human."""
        ...

    @property
    def env_fingerprint(self) -> str:
        """What the situation depends on (hashed)."""
        ...

    @property
    def unblock(self) -> str | None:
        """What the user had to do (tool code only)."""
        ...

    @property
    def probe(self) -> str | None:
        """The command that checks whether it still holds (tool code only)."""
        ...

    @property
    def source(self) -> str:
        """``declared`` (only declared situations are remembered)."""
        ...


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One event in a lesson's history."""

    at: datetime
    kind: str
    version: int
    status: str
    confidence: float
    outcome_id: str
    actor: str
    reason: str
    record_json: bytes = field(repr=False)
    # Confidence before the event (0.0 when there was none, e.g. created or imported).
    confidence_before: float = 0.0


@dataclass(frozen=True, slots=True)
class LessonPage:
    """One page of ``list_lessons``; pass ``next_page_token`` for the next ("" at the end)."""

    lessons: tuple[Lesson, ...]
    next_page_token: str


@dataclass(frozen=True, slots=True)
class ImportAck:
    """What the node did with one line of a bundle."""

    index: int
    record_hash: str
    status: str  # accepted | duplicate | quarantined | rejected | deferred
    reason: str


@dataclass(frozen=True, slots=True)
class ImportPacing:
    """How ``import_bundle`` cuts a long bundle into calls that each end within the deadline."""

    #: Lines in the first call (before any rate is measured).
    first_lines: int = 50
    #: Bounds on the lines of any later call.
    min_lines: int = 10
    max_lines: int = 2000
    #: Share of the client's deadline one call is sized to take at the measured rate.
    budget_share: float = 0.3

    def __post_init__(self) -> None:
        """Refuse values no import could use (``ConfigError`` naming the field)."""
        for name in ("first_lines", "min_lines", "max_lines"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"ImportPacing.{name} must be an int >= 1, got {value!r}")
        if self.min_lines > self.max_lines:
            raise ConfigError("ImportPacing.min_lines must be <= max_lines")
        share = self.budget_share
        if not isinstance(share, float | int) or not math.isfinite(share) or not 0 < share <= 1:
            raise ConfigError(f"ImportPacing.budget_share must be in (0, 1], got {share!r}")


DEFAULT_PACING = ImportPacing()


@dataclass(frozen=True, slots=True)
class ImportResult:
    """The acks of an import, one per record line in bundle order."""

    acks: tuple[ImportAck, ...]

    def count(self, status: str) -> int:
        """How many lines got ``status``."""
        return sum(1 for a in self.acks if a.status == status)

    @property
    def accepted(self) -> int:
        """How many lines were stored."""
        return self.count("accepted")

    @property
    def rejected(self) -> tuple[ImportAck, ...]:
        """The refused lines."""
        return tuple(a for a in self.acks if a.status == "rejected")


# -- translation ------------------------------------------------------------------------------


def _name(enum: Any, value: int, prefix: str) -> str:
    """``LESSON_STATUS_ACTIVE`` → ``active``; an unknown number → ``unspecified``."""
    try:
        full: str = enum.Name(value)
    except ValueError:
        return "unspecified"
    return full.removeprefix(prefix).lower()


def _value(enum: Any, name: str, prefix: str) -> Any:
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
    )


def _conflict(v: agent_pb2.LessonConflict) -> Conflict:
    return Conflict(v.operation, tuple(_lesson(x) for x in v.sides), v.holds)


def _lesson(v: lessons_pb2.LessonView) -> Lesson:
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


def _memory_context(context: Mapping[str, Any] | None) -> lessons_pb2.MemoryContext | None:
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


def _outcome_bytes(outcome: Outcome | Mapping[str, Any] | bytes | str) -> bytes:
    # The node validates with the Outcome model; sending the model's own JSON keeps one schema.
    if isinstance(outcome, Outcome):
        return outcome.to_json()
    if isinstance(outcome, bytes):
        return outcome
    if isinstance(outcome, str):
        return outcome.encode("utf-8")
    return json.dumps(dict(outcome), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _outcome_result(r: agent_pb2.RecordOutcomeResponse) -> OutcomeResult:
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


def _history(r: agent_pb2.HistoryResponse) -> list[HistoryEntry]:
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


def _filter(
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
        category=_value(lessons_pb2.LessonCategory, category, "LESSON_CATEGORY_")
        if category
        else lessons_pb2.LESSON_CATEGORY_UNSPECIFIED,
        scope=scope or "",
        statuses=[_value(lessons_pb2.LessonStatus, s, "LESSON_STATUS_") for s in statuses or ()],
        min_confidence=min_confidence or 0.0,
        origin=_value(lessons_pb2.LessonOrigin, origin, "LESSON_ORIGIN_")
        if origin
        else lessons_pb2.LESSON_ORIGIN_UNSPECIFIED,
        operation=operation or "",
    )


def _import_result(r: agent_pb2.ImportResponse) -> ImportResult:
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


def _import_requests(
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


def _edit_request(
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
            except Exception:  # a garbled detail must not hide the error itself
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


# -- addresses and homes --------------------------------------------------------------------


def node_address(home: str | Path, token_field: str = "agent_token_file") -> tuple[str, str | None]:
    """``(agent address, token)`` of the node running on ``home``, from its ``node.json``.

    ``token_field`` names the ``node.json`` entry holding the token file's path
    (``operator_token_file`` for the operator's credential). Raises
    ``ConfigError(reason="node_not_running")`` when there is no ``node.json``.
    """
    root = Path(home).expanduser()
    try:
        info = json.loads((root / _NODE_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        raise ConfigError(
            f"no running node on {root} (no readable {_NODE_FILE})", reason="node_not_running"
        ) from None
    address = str(info.get("agent_listen") or "")
    if not address:
        raise ConfigError(f"{root / _NODE_FILE} names no agent address", reason="node_not_running")
    address = dial_address(address)
    token_file = str(info.get(token_field) or "")
    return address, _read_token(Path(token_file)) if token_file else None


def dial_address(address: str) -> str:
    """The address a local client dials for a node's listen address (wildcards → loopback)."""
    if address.startswith("unix:"):
        return address
    host, _, port = address.rpartition(":")
    if host in ("0.0.0.0", "[::]", "::", ""):
        host = "127.0.0.1"
    return f"{host}:{port}"


def _read_token(path: Path) -> str:
    try:
        token = path.read_text(encoding="ascii").strip()
    except OSError as e:
        raise ConfigError(f"cannot read the token {path}: {e}", reason="key_file") from e
    if not token:
        raise ConfigError(f"{path} is empty", reason="key_file")
    return token


def _token_for(token: str | None, home: str | Path | None, name: str = _TOKEN_FILE) -> str | None:
    if token is not None or home is None:
        return token
    path = Path(home).expanduser() / name
    return _read_token(path) if path.exists() else None


def _metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


# -- transports -------------------------------------------------------------------------------
# A call is written once, as a coroutine of the async client over a transport. The asyncio
# transport awaits grpc.aio; the blocking transport makes the plain (blocking) gRPC call inside
# a coroutine that never suspends, so the blocking client runs the very same coroutine to its
# end with one ``send`` (see ``_run_blocking``): no event loop, no thread, no second copy.


class _AioTransport:
    """A ``grpc.aio`` channel: each call suspends on the running event loop."""

    def __init__(self, address: str, options: Sequence[tuple[str, Any]], stub_type: Any) -> None:
        self._channel = grpc.aio.insecure_channel(address, options=list(options))
        self.stub: Any = stub_type(self._channel)

    async def unary(
        self, rpc: str, request: Any, deadline_s: float, metadata: tuple[tuple[str, str], ...]
    ) -> Any:
        """One request, one response."""
        try:
            return await getattr(self.stub, rpc)(request, timeout=deadline_s, metadata=metadata)
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e

    async def unary_stream(
        self, rpc: str, request: Any, deadline_s: float, metadata: tuple[tuple[str, str], ...]
    ) -> list[Any]:
        """One request; every message of the response stream, in order."""
        parts: list[Any] = []
        try:
            stream: Any = getattr(self.stub, rpc)(request, timeout=deadline_s, metadata=metadata)
            async for part in stream:
                parts.append(part)
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e
        return parts

    async def stream_unary(
        self,
        rpc: str,
        requests: Sequence[Any],
        deadline_s: float,
        metadata: tuple[tuple[str, str], ...],
    ) -> Any:
        """A stream of requests, one response."""

        async def feed() -> AsyncIterator[Any]:
            for request in requests:
                yield request

        try:
            return await getattr(self.stub, rpc)(feed(), timeout=deadline_s, metadata=metadata)
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close(None)


class _BlockingTransport:
    """A plain gRPC channel behind coroutines that never suspend.

    Each method blocks its thread until the call has ended and then returns, so a coroutine
    built on this transport completes on its first ``send`` (``_run_blocking``).
    """

    def __init__(self, address: str, options: Sequence[tuple[str, Any]], stub_type: Any) -> None:
        self._channel = grpc.insecure_channel(address, options=list(options))
        self.stub: Any = stub_type(self._channel)

    async def unary(
        self, rpc: str, request: Any, deadline_s: float, metadata: tuple[tuple[str, str], ...]
    ) -> Any:
        """One request, one response."""
        try:
            return getattr(self.stub, rpc)(request, timeout=deadline_s, metadata=metadata)
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e

    async def unary_stream(
        self, rpc: str, request: Any, deadline_s: float, metadata: tuple[tuple[str, str], ...]
    ) -> list[Any]:
        """One request; every message of the response stream, in order."""
        try:
            return list(getattr(self.stub, rpc)(request, timeout=deadline_s, metadata=metadata))
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e

    async def stream_unary(
        self,
        rpc: str,
        requests: Sequence[Any],
        deadline_s: float,
        metadata: tuple[tuple[str, str], ...],
    ) -> Any:
        """A stream of requests, one response."""
        try:
            return getattr(self.stub, rpc)(iter(requests), timeout=deadline_s, metadata=metadata)
        except grpc.RpcError as e:
            raise error_from_rpc(e) from e

    async def close(self) -> None:
        """Close the channel."""
        self._channel.close()


_Transport = _AioTransport | _BlockingTransport

_A = TypeVar("_A", bound="AsyncServiceClient")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _run_blocking(call: Coroutine[Any, Any, _R]) -> _R:
    """Run a coroutine of an async client over the blocking transport to its end, here.

    It never suspends, so one ``send`` runs it whole on the caller's thread: no event loop is
    needed, created or touched, and a running loop in this thread is only blocked for the call.
    A coroutine that does suspend (it awaited something else than its transport) is closed
    and refused with ``LamarckError(reason="blocking_call_suspended")``.
    """
    try:
        call.send(None)
    except StopIteration as done:
        value: _R = done.value
        return value
    call.close()
    raise LamarckError(
        "a blocking client call awaited something other than its transport",
        reason="blocking_call_suspended",
    )


def blocking(
    method: Callable[Concatenate[_A, _P], Coroutine[Any, Any, _R]],
) -> Callable[Concatenate[ServiceClient[_A], _P], _R]:
    """The blocking twin of an async client's ``method``: same name, signature and docstring.

    In a :class:`ServiceClient` subclass body, ``recall = blocking(AsyncClient.recall)`` makes
    ``client.recall(...)`` run ``AsyncClient.recall``'s own code over a blocking channel.
    """

    @functools.wraps(method)
    def call(self: ServiceClient[_A], /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return _run_blocking(method(self._async, *args, **kwargs))

    return call


# -- the clients ------------------------------------------------------------------------------


class AsyncServiceClient:
    """The asyncio connection every lamarck SDK client shares: channel, token, typed errors.

    Subclasses name their generated stub class in ``stub_type`` and write each call once, as
    a coroutine over ``_unary`` / ``_unary_stream`` / ``_stream_unary``; the blocking client
    (:class:`ServiceClient`) runs those same coroutines.
    """

    stub_type: ClassVar[type[Any]]
    #: The token file in a node's home this client presents (the operator's client its own).
    token_file: ClassVar[str] = _TOKEN_FILE
    #: The ``node.json`` entry naming that file.
    token_field: ClassVar[str] = "agent_token_file"

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        home: str | Path | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        """Connect to ``address`` (``host:port`` or ``unix:path``).

        ``token`` is the bearer token; without one, ``<home>/agent.token`` (the operator
        client: ``<home>/operator.token``) is used if ``home`` is given and the file exists.
        """
        token = _token_for(token, home, self.token_file)
        self._attach(address, token, timeout, _AioTransport, options)

    def _attach(
        self,
        address: str,
        token: str | None,
        timeout: float,
        transport: type[_AioTransport] | type[_BlockingTransport],
        options: Sequence[tuple[str, Any]],
    ) -> None:
        self.address = address
        self.timeout = timeout
        self._metadata = _metadata(token)
        self._transport: _Transport = transport(address, options, self.stub_type)

    @classmethod
    def _blocking(
        cls,
        address: str,
        token: str | None,
        timeout: float,
        options: Sequence[tuple[str, Any]],
    ) -> Self:
        """The same client over a blocking channel (the engine of a :class:`ServiceClient`)."""
        client = cls.__new__(cls)
        client._attach(address, token, timeout, _BlockingTransport, options)
        return client

    @classmethod
    def from_home(cls, home: str | Path, **kwargs: Any) -> Self:
        """A client for the node running on ``home`` (its ``node.json``)."""
        address, token = node_address(home, cls.token_field)
        return cls(address, token=token, **kwargs)

    async def close(self) -> None:
        """Close the channel."""
        await self._transport.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _unary(self, rpc: str, request: Any) -> Any:
        return await self._transport.unary(rpc, request, self.timeout, self._metadata)

    async def _unary_stream(self, rpc: str, request: Any) -> list[Any]:
        return await self._transport.unary_stream(rpc, request, self.timeout, self._metadata)

    async def _stream_unary(self, rpc: str, requests: Sequence[Any]) -> Any:
        return await self._transport.stream_unary(rpc, requests, self.timeout, self._metadata)


class ServiceClient(Generic[_A]):
    """The blocking twin of :class:`AsyncServiceClient`: its calls are the async client's.

    Subclasses name the async client in ``async_type`` and list its calls as
    ``name = blocking(AsyncX.name)``. A call blocks the calling thread until the node answers
    (or the deadline passes) and needs no event loop. Called from the thread of a running
    event loop it works too, but that loop is stalled for the call: a node served by that same
    loop cannot answer, and the call ends with ``deadline_exceeded`` (use the async client
    there, or ``asyncio.to_thread``).
    """

    async_type: ClassVar[type[AsyncServiceClient]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A twin made by blocking() carries the async method's qualified name; name it for
        # the class it lives in, so reprs and tracebacks say Client.recall.
        for name, value in vars(cls).items():
            if callable(value) and inspect.iscoroutinefunction(getattr(value, "__wrapped__", None)):
                value.__qualname__ = f"{cls.__qualname__}.{name}"

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        home: str | Path | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        """Connect to ``address`` (see :class:`AsyncServiceClient`)."""
        token = _token_for(token, home, self.async_type.token_file)
        engine = self.async_type._blocking(address, token, timeout, options)
        # async_type is a ClassVar, which cannot name the type variable.
        self._async: _A = cast(_A, engine)

    @property
    def address(self) -> str:
        """The address dialled."""
        return self._async.address

    @property
    def timeout(self) -> float:
        """The per-call deadline in seconds."""
        return self._async.timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        self._async.timeout = value

    @classmethod
    def from_home(cls, home: str | Path, **kwargs: Any) -> Self:
        """A client for the node running on ``home`` (its ``node.json``)."""
        address, token = node_address(home, cls.async_type.token_field)
        return cls(address, token=token, **kwargs)

    def close(self) -> None:
        """Close the channel."""
        _run_blocking(self._async.close())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClient(AsyncServiceClient):
    """AgentService for asyncio; use as ``async with AsyncClient(address) as client``."""

    stub_type = agent_pb2_grpc.AgentServiceStub

    async def record_outcome(
        self, outcome: Outcome | Mapping[str, Any] | bytes | str
    ) -> OutcomeResult:
        """Record one turn's outcome (an ``Outcome``, its dict, or its JSON)."""
        request = agent_pb2.RecordOutcomeRequest(outcome_json=_outcome_bytes(outcome))
        return _outcome_result(await self._unary("RecordOutcome", request))

    async def recall(
        self,
        task: str,
        context: Mapping[str, Any] | None = None,
        *,
        session_id: str = "",
        turn_index: int = 0,
        project_digest: str = "",
        limit: int = 0,
    ) -> RecallResult:
        """The lessons for ``task`` and the "Lessons:" section; in play for ``session_id``."""
        request = agent_pb2.RecallRequest(
            task=task,
            context=_memory_context(context),
            session_id=session_id,
            turn_index=turn_index,
            project_digest=project_digest,
            limit=limit,
        )
        r = await self._unary("Recall", request)
        return RecallResult(
            tuple(_lesson(x.lesson) for x in r.lessons),
            r.prompt_section,
            tuple(x.score for x in r.lessons),
            tuple(_lesson(x.lesson) for x in r.hints),
            tuple(_conflict(c) for c in r.conflicts),
            r.indexing,
        )

    async def check_operation(
        self,
        operation: str,
        *,
        session_id: str = "",
        turn_index: int = 0,
        project_digest: str = "",
        tool: str = "",
        subject: str = "",
    ) -> CheckResult:
        """What is on file for ``operation`` (and ``tool`` on ``subject``) before it runs."""
        request = agent_pb2.CheckOperationRequest(
            operation=operation,
            session_id=session_id,
            turn_index=turn_index,
            project_digest=project_digest,
            tool=tool,
            subject=subject,
        )
        r = await self._unary("CheckOperation", request)
        return CheckResult(
            r.preamble,
            r.probe,
            r.unblock,
            tuple(r.lesson_ids),
            tuple(_lesson(x) for x in r.lessons),
            tuple(_conflict(c) for c in r.conflicts),
        )

    async def remember(
        self,
        content: str,
        operation: str = "",
        *,
        scope: str = "",
        project_digest: str = "",
        context: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        session_id: str = "",
    ) -> RememberResult:
        """Store a model's claim (status ``claimed``): kept out of recall and sharing until an
        outcome confirms it. ``operation`` may be empty (the node keys it ``note:<first words>``).
        To record what just happened, call :meth:`record_outcome` instead."""
        request = agent_pb2.RememberRequest(
            content=content,
            operation=operation,
            scope=scope,
            project_digest=project_digest,
            context=_memory_context(context),
            tags=list(tags),
            session_id=session_id,
        )
        r = await self._unary("Remember", request)
        return RememberResult(_lesson(r.lesson), r.created, r.note)

    async def record_situation(
        self,
        situation: SituationFields,
        *,
        scope: str = "",
        project_digest: str = "",
        evidence: Sequence[str] = (),
    ) -> Lesson:
        """Remember a declared blocker as a situation lesson (the same one is refreshed).

        Inferred situations and transient kinds are refused (``InvalidRecord``).
        """
        request = agent_pb2.RecordSituationRequest(
            situation=lessons_pb2.Situation(
                tool=situation.tool,
                subject=situation.subject,
                kind=situation.kind,
                interactive=situation.interactive,
                env_fingerprint=situation.env_fingerprint,
                unblock=situation.unblock or "",
                probe=situation.probe or "",
                source=_value(
                    lessons_pb2.SituationSource, str(situation.source), "SITUATION_SOURCE_"
                ),
            ),
            scope=scope,
            project_digest=project_digest,
            evidence_outcome_ids=list(evidence),
        )
        return _lesson((await self._unary("RecordSituation", request)).lesson)

    async def get_lesson(self, lesson_id: str) -> Lesson:
        """One lesson as it stands now (any status); ``NotFound`` for an unknown id."""
        request = agent_pb2.GetLessonRequest(lesson_id=lesson_id)
        return _lesson((await self._unary("GetLesson", request)).lesson)

    async def report_use(
        self,
        session_id: str,
        lesson_ids: Sequence[str],
        *,
        applied: bool = True,
        turn_index: int = 0,
        note: str = "",
    ) -> int:
        """Say which lessons the agent applied (or dismissed); returns how many were recorded."""
        use = agent_pb2.USE_KIND_APPLIED if applied else agent_pb2.USE_KIND_DISMISSED
        request = agent_pb2.ReportUseRequest(
            session_id=session_id,
            turn_index=turn_index,
            lesson_ids=list(lesson_ids),
            use=use,
            note=note,
        )
        r = await self._unary("ReportUse", request)
        recorded: int = r.recorded
        return recorded

    async def edit(
        self,
        lesson_id: str,
        content: str,
        *,
        expected_version: int = 0,
        reason: str = "",
    ) -> Lesson:
        """Replace a lesson's text; returns the new version."""
        request = _edit_request(lesson_id, content, expected_version, reason)
        return _lesson((await self._unary("Edit", request)).lesson)

    async def set_access(
        self, lesson_id: str, access_level: str, recipients: Sequence[str] = ()
    ) -> Lesson:
        """Say who a lesson may be shared with: public, trusted, or private to ``recipients``."""
        request = _edit_request(lesson_id, None, 0, "", access_level, recipients)
        return _lesson((await self._unary("Edit", request)).lesson)

    async def retire(
        self, lesson_id: str, *, reason: str = "", expected_version: int = 0
    ) -> Lesson:
        """Withdraw a lesson (kept as history)."""
        request = agent_pb2.RetireRequest(
            lesson_id=lesson_id, reason=reason, expected_version=expected_version
        )
        return _lesson((await self._unary("Retire", request)).lesson)

    async def history(self, lesson_id: str) -> list[HistoryEntry]:
        """Every event of the lesson's chain, oldest first."""
        request = agent_pb2.HistoryRequest(lesson_id=lesson_id)
        return _history(await self._unary("History", request))

    async def list_lessons(
        self,
        *,
        category: str | None = None,
        scope: str | None = None,
        statuses: Sequence[str] | str | None = None,
        min_confidence: float | None = None,
        origin: str | None = None,
        operation: str | None = None,
        page_size: int = 0,
        page_token: str = "",
    ) -> LessonPage:
        """One page of lessons matching the filter, highest confidence first."""
        request = agent_pb2.ListRequest(
            filter=_filter(
                category=category,
                scope=scope,
                statuses=statuses,
                min_confidence=min_confidence,
                origin=origin,
                operation=operation,
            ),
            page_size=page_size,
            page_token=page_token,
        )
        r = await self._unary("List", request)
        return LessonPage(tuple(_lesson(v) for v in r.lessons), r.next_page_token)

    async def export_bundle(
        self,
        *,
        category: str | None = None,
        scope: str | None = None,
        statuses: Sequence[str] | str | None = None,
        min_confidence: float | None = None,
        origin: str | None = None,
        operation: str | None = None,
    ) -> bytes:
        """The bundle (JSON Lines of signed records) of the lessons matching the filter."""
        request = agent_pb2.ExportRequest(
            filter=_filter(
                category=category,
                scope=scope,
                statuses=statuses,
                min_confidence=min_confidence,
                origin=origin,
                operation=operation,
            )
        )
        return b"".join(part.jsonl for part in await self._unary_stream("Export", request))

    async def import_bundle(
        self,
        bundle: bytes | str,
        *,
        dry_run: bool = False,
        source_label: str = "",
        pacing: ImportPacing = DEFAULT_PACING,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportResult:
        """Feed a bundle to the node's import checks; one ack per record line.

        A long bundle goes as several Import calls of whole lines, each within the client's
        deadline: the first carries ``pacing.first_lines`` lines, the next ones as many as the
        measured rate fits in ``pacing.budget_share`` of the deadline. ``progress(done,
        total)`` is told after each call (lines acknowledged so far, lines in the bundle). A
        call that fails raises; the lines acknowledged before it are stored, and importing
        the bundle again answers them as duplicates.
        """
        data = bundle.encode("utf-8") if isinstance(bundle, str) else bundle
        lines = data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()  # the bundle's final newline ends the last line, it is not a line
        acks: list[ImportAck] = []
        done, size = 0, pacing.first_lines
        while done < len(lines) or not lines:
            part = lines[done : done + size]
            started = time.monotonic()
            requests = _import_requests(b"\n".join(part) + b"\n", dry_run, source_label)
            result = _import_result(await self._stream_unary("Import", requests))
            elapsed = max(time.monotonic() - started, 1e-3)
            acks.extend(dataclasses.replace(a, index=a.index + done) for a in result.acks)
            done += len(part)
            if progress is not None:
                progress(done, len(lines))
            if not lines:
                break
            fits = int(len(part) / elapsed * self.timeout * pacing.budget_share)
            size = max(pacing.min_lines, min(pacing.max_lines, fits))
        return ImportResult(tuple(acks))


class Client(ServiceClient[AsyncClient]):
    """AgentService, blocking; use as ``with Client(address) as client`` (same API).

    Every call is :class:`AsyncClient`'s, run over a blocking channel (see
    :class:`ServiceClient` for threads and event loops).
    """

    async_type = AsyncClient

    record_outcome = blocking(AsyncClient.record_outcome)
    recall = blocking(AsyncClient.recall)
    check_operation = blocking(AsyncClient.check_operation)
    remember = blocking(AsyncClient.remember)
    record_situation = blocking(AsyncClient.record_situation)
    get_lesson = blocking(AsyncClient.get_lesson)
    report_use = blocking(AsyncClient.report_use)
    edit = blocking(AsyncClient.edit)
    set_access = blocking(AsyncClient.set_access)
    retire = blocking(AsyncClient.retire)
    history = blocking(AsyncClient.history)
    list_lessons = blocking(AsyncClient.list_lessons)
    export_bundle = blocking(AsyncClient.export_bundle)
    import_bundle = blocking(AsyncClient.import_bundle)
