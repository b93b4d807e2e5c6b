"""``OperatorService``: the operator's review of quarantined records and the rejection log.

The import pipeline holds a record it will not believe on its own (two red
flags, a high-stakes claim without a quorum) as a quarantine row; here an operator lists,
reads, approves or rejects those rows.

Approving does not bypass verification: the row goes to the node's one import pipeline as
an ``approval`` (``ImportPipeline.approve``). There the held bytes are parsed and verified
again exactly as stages (1) and (2) do, their sha256 must still be the row's ``content_hash``,
stage (3) is checked again when the node has a registry (the source may have been revoked, or
its key rotated, since the record was held; a row held as ``unknown_signer`` is the operator
vouching for a key no registry knows), and the history stages run against what is stored now
(an older version is superseded, a newer one makes this a ``rollback``). Only the quarantine
verdict itself is overridden: the record is stored with the decision kept with the row when
it was held (its transferred confidence and rule). A record that fails is refused with its
typed error and its row stays pending. Rejecting only marks the row: nothing is stored,
nothing is deleted.

Decisions feed reputation like the pipeline's own refusals: a rejected row is a ``rejected``
event about its source (keyed by the record, so it counts once however many copies were
held). An approval emits nothing: an operator's word is not reality, and the source earns
reputation when the stored lesson is used and its outcomes confirm it.

``ResetReputation`` is an operator's way to lift a graylisting (nothing else does but reality,
and a graylisted peer's lessons are no longer imported for reality to judge): the peer's score
goes back to an admitted newcomer's, and an ``operator_reset`` event with the operator's note
stays in its history. What reality judged of its lessons stays too (the transfer's track
record), so its claims remain capped by it.

Decisions are serialised by one lock and re-read the row under it, so two operators deciding
the same row get one success and one ``ConflictError(reason="already_decided")``.

``GetHealth`` computes the health report (``lamarck.health``) from the store on each
call; ``GetStatus`` says what the node knows of itself (``lamarck.node.api.node_status``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from lamarck.consensus.taint import taint_reason
from lamarck.domain.rows import (
    LessonEvent,
    QuarantineRow,
    RejectionRow,
)
from lamarck.errors import ConfigError, ConflictError, InvalidRecord, NotFound, StoreUnavailable
from lamarck.health.figures import Finding, HealthReport
from lamarck.health.params import HealthParams, refresh_spacing_s
from lamarck.health.render import report_to_json
from lamarck.learning.params import LearningParams
from lamarck.node import metrics
from lamarck.node.api.bulk_jobs import BulkJob, BulkJobs
from lamarck.node.api.health_loader import current_report, learned_variables
from lamarck.node.api.network_side import NetworkSide, TaintSide, serving_pipeline
from lamarck.node.api.node_status import (
    NetworkSource,
    ReputationSource,
    build_status,
    status_to_json,
)
from lamarck.node.api.ready import Provider, Ready, provider_of
from lamarck.node.api.reputation import GlobalTrustClock, event_to_pb, row_to_pb
from lamarck.node.crashpoint import crash_point
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.store.port import LessonStore
from lamarck.node.store.recall_index import HasRecallIndex
from lamarck.policy.decision import ImportOutcome
from lamarck.proto.clock import Clock
from lamarck.proto.signed import SignedMemory
from lamarck.proto.timefmt import format_ts
from lamarck.proto.v1 import operator_pb2, operator_pb2_grpc
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.port import ReputationSink
from lamarck.reputation.table import SortKey, select_rows

__all__ = [
    "BULK_REPLY_S",
    "DEFAULT_HISTORY",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_REJECTIONS",
    "MAX_HISTORY",
    "MAX_PAGE_SIZE",
    "MAX_REJECTIONS",
    "OPERATOR_ACTOR",
    "PREVIEW_CHARS",
    "REPUTATION_HISTORY",
    "REPUTATION_TOP",
    "RESET_NOTE_MAX",
    "STATUS_REJECTIONS",
    "OperatorServicer",
    "make_operator_servicer",
    "quarantine_entry",
    "rejection_entry",
]

_log = logging.getLogger(__name__)

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
DEFAULT_REJECTIONS = 100
MAX_REJECTIONS = 1000
#: Events of a peer's history returned by default, and at most (``GetPeerReputation``).
DEFAULT_HISTORY = 100
MAX_HISTORY = 1000
#: Longest a bulk decision call waits for its job before replying with the progress (the
#: client polls again); shorter when the call's deadline is nearer.
BULK_REPLY_S = 5.0
#: Characters of a record's content shown in a listing.
PREVIEW_CHARS = 200
#: Newest rejection log rows the status counts by reason.
STATUS_REJECTIONS = MAX_REJECTIONS
#: Peers shown in the status's reputation top.
REPUTATION_TOP = 5
#: A peer's latest reputation events shown on its console page.
REPUTATION_HISTORY = 100
#: Longest note an operator may give with a reputation reset (it is kept in history).
RESET_NOTE_MAX = 500

_STATE_TO_PB = {
    "pending": operator_pb2.QUARANTINE_STATE_PENDING,
    "approved": operator_pb2.QUARANTINE_STATE_APPROVED,
    "rejected": operator_pb2.QUARANTINE_STATE_REJECTED,
}
_STATE_FROM_PB = {v: k for k, v in _STATE_TO_PB.items()}


def _preview(row: QuarantineRow) -> tuple[str, str]:
    """``(record id, content preview)`` of the held bytes; empty strings if they do not parse."""
    try:
        record = SignedMemory.from_json(row.signed_record).memory
    except InvalidRecord:
        return "", ""
    content = record.content
    if len(content) > PREVIEW_CHARS:
        content = content[: PREVIEW_CHARS - 3] + "..."
    return record.id, content


#: The actor the event log names for a decision made through this API.
OPERATOR_ACTOR = "operator"
_DECISION_KINDS = ("approved", "rejected")
_BULK_DECISIONS = {
    operator_pb2.QUARANTINE_DECISION_APPROVE: "approved",
    operator_pb2.QUARANTINE_DECISION_REJECT: "rejected",
}
#: One decided row of a bulk job: its entry after the decision and the lesson id ("" if none).
_Decided = tuple[operator_pb2.QuarantineEntry, str]


def quarantine_entry(
    row: QuarantineRow, decision: LessonEvent | None = None
) -> operator_pb2.QuarantineEntry:
    """The wire form of a quarantine row, with the operator's logged decision if any."""
    record_id, preview = _preview(row)
    decided = {}
    if decision is not None:
        decided = {
            "decided_at": format_ts(decision.at),
            "decided_by": decision.actor,
            "note": decision.reason,
        }
    return operator_pb2.QuarantineEntry(
        **decided,
        id=row.id,
        content_hash=row.content_hash,
        source_node_id=row.source_node_id,
        reasons=list(row.reasons),
        received_at=format_ts(row.received_at),
        state=_STATE_TO_PB.get(row.state, operator_pb2.QUARANTINE_STATE_UNSPECIFIED),
        content_preview=preview,
        record_id=record_id,
    )


def rejection_entry(row: RejectionRow) -> operator_pb2.RejectionEntry:
    """The wire form of a rejection log row."""
    return operator_pb2.RejectionEntry(
        source_node_id=row.source_node_id,
        reason=row.reason,
        content_hash=row.content_hash,
        received_at=format_ts(row.received_at),
        detail=row.detail,
    )


class OperatorServicer(operator_pb2_grpc.OperatorServiceServicer):
    """Every OperatorService RPC over a ``LessonStore``; see the module docstring.

    ``store`` and ``pipeline`` may be zero-argument callables read on each call (the
    daemon's raise ``StoreUnavailable`` until the node is ready). ``sink`` is where an
    operator's rejection is reported (``None``: nowhere yet). ``health`` holds the health
    report's windows and thresholds (``GetHealth`` is refused without them); ``network``
    returns the network side's facts and ``reputation`` reads the book, for ``GetStatus``
    (each ``None`` or returning ``None`` while there is none: the status says so).
    """

    def __init__(
        self,
        store: LessonStore | Provider[LessonStore],
        clock: Clock,
        *,
        pipeline: ImportPipeline | Provider[ImportPipeline],
        sink: Callable[[], ReputationSink | None] | None = None,
        health: HealthParams | None = None,
        node_id: str = "",
        network: Callable[[], NetworkSource | None] | None = None,
        reputation: Callable[[], ReputationSource | None] | None = None,
        quorum: Callable[[str], str] | None = None,
        taint: Callable[[], TaintSide | None] | None = None,
        variables: Callable[[], Awaitable[dict[str, dict[str, object]]]] | None = None,
        labels: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        """``labels``: node id -> human label of the nodes known (the registry's), for the
        status (``None``: none known)."""
        self._store = provider_of(store, LessonStore)
        self._labels = labels or dict
        # The learned context-variable classes, added to the health report.
        self._variables = variables
        # The quorum on a held record as JSON, by content hash ("" when none was asked).
        self._quorum = quorum or (lambda _: "")
        # Releases the lessons of rows held ``tainted_source`` (None: no sharing side yet).
        self._taint = taint or (lambda: None)
        self._clock = clock
        self._pipeline = provider_of(pipeline, ImportPipeline)
        self._sink = sink or (lambda: None)
        self._health = health
        self._node_id = node_id
        self._network = network or (lambda: None)
        self._reputation = reputation or (lambda: None)
        self._decide_lock = asyncio.Lock()
        self._bulk: BulkJobs[_Decided] = BulkJobs()
        # The last health report computed and when: a status within
        # ``HealthParams.status_warnings_max_age_s`` shows its warnings.
        self._last_report: tuple[datetime, HealthReport, float] | None = None

    def labels(self) -> dict[str, str]:
        """Node id -> human label of the nodes known (this one included), to show beside ids."""
        return dict(self._labels())

    async def _row(self, quarantine_id: str) -> QuarantineRow:
        """The quarantine row ``quarantine_id`` in any state, or ``NotFound``."""
        if not quarantine_id:
            raise InvalidRecord("a quarantine id is required", reason="missing_id")
        return await self._store().get_quarantine(quarantine_id)

    # -- RPCs ------------------------------------------------------------------------------
    async def ListQuarantine(
        self, request: operator_pb2.ListQuarantineRequest, context: Any
    ) -> operator_pb2.ListQuarantineResponse:
        """Rows in the requested state (every state for UNSPECIFIED), oldest first, paged."""
        if request.state == operator_pb2.QUARANTINE_STATE_UNSPECIFIED:
            state: str | None = None
        elif request.state in _STATE_FROM_PB:
            state = _STATE_FROM_PB[request.state]
        else:
            raise InvalidRecord(f"unknown quarantine state {request.state}", reason="bad_state")
        size = min(request.page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        try:
            offset = int(request.page_token) if request.page_token else 0
            if offset < 0:
                raise ValueError(offset)
        except ValueError:
            raise InvalidRecord(
                "page_token is not one this server issued", reason="bad_page_token"
            ) from None
        rows = await self._store().list_quarantine(state)
        page = rows[offset : offset + size]
        more = offset + size < len(rows)
        decisions = await self._decisions([r.id for r in page])
        return operator_pb2.ListQuarantineResponse(
            entries=[quarantine_entry(r, decisions.get(r.id)) for r in page],
            next_page_token=str(offset + size) if more else "",
        )

    async def ShowQuarantine(
        self, request: operator_pb2.ShowQuarantineRequest, context: Any
    ) -> operator_pb2.ShowQuarantineResponse:
        """One row and the exact signed bytes held."""
        row = await self._row(request.id)
        decision = (await self._decisions([row.id])).get(row.id)
        return operator_pb2.ShowQuarantineResponse(
            entry=quarantine_entry(row, decision),
            record_json=row.signed_record,
            quorum_json=self._quorum(row.content_hash),
        )

    def quorum_json(self, content_hash: str) -> str:
        """The quorum on the held record ``content_hash`` as ``ShowQuarantine`` returns it
        ("" when none was asked); the console lists it for every row of its queue."""
        return self._quorum(content_hash)

    async def _decisions(self, quarantine_ids: Sequence[str]) -> dict[str, LessonEvent]:
        """The latest logged operator decision on each of ``quarantine_ids``."""
        found: dict[str, LessonEvent] = {}
        for event in await self._store().lesson_events(quarantine_ids):
            if event.kind in _DECISION_KINDS:
                found[event.lesson_id] = event
        return found

    async def DecideQuarantine(
        self, request: operator_pb2.DecideQuarantineRequest, context: Any
    ) -> operator_pb2.DecideQuarantineResponse:
        """Approve (re-verify, store as an import) or reject a pending row."""
        if request.decision == operator_pb2.QUARANTINE_DECISION_APPROVE:
            decision = "approved"
        elif request.decision == operator_pb2.QUARANTINE_DECISION_REJECT:
            decision = "rejected"
        else:
            raise InvalidRecord("decision must be APPROVE or REJECT", reason="bad_decision")
        async with self._decide_lock:
            row = await self._row(request.id)
            if row.state != "pending":
                raise ConflictError(
                    f"quarantine {row.id} is already {row.state}",
                    reason="already_decided",
                    id=row.id,
                    state=row.state,
                )
            rule = None
            lesson_id = ""
            store = self._store()
            # The stored lesson, the row's new state and the decision's events commit
            # together: a crash between them would leave an approved lesson whose row is
            # still pending (or decided without its note).
            async with store.atomic():
                if decision == "approved":
                    lesson_id, rule = await self._store_approved(row)
                crash_point("quarantine_decided")
                updated = await store.set_quarantine_state(row.id, decision)
                # The decision's note, actor and time are kept (``quarantine show`` prints
                # them), on the held record and, once approved, on the lesson it became.
                decided = LessonEvent(
                    row.id, self._clock.now(), decision, OPERATOR_ACTOR, reason=request.note
                )
                logged = [decided]
                if lesson_id:
                    logged.append(dataclasses.replace(decided, lesson_id=lesson_id))
                await store.append_events(logged)
        if decision == "rejected":
            self._charge_rejection(row, request.note)
        _log.info(
            "quarantine decided",
            extra={
                "quarantine_id": row.id,
                "decision": decision,
                "content_hash": row.content_hash,
                "source_node_id": row.source_node_id,
                "lesson_id": lesson_id,
                "transfer_rule": rule,
                "note": request.note,
            },
        )
        return operator_pb2.DecideQuarantineResponse(
            entry=quarantine_entry(updated, decided), lesson_id=lesson_id
        )

    async def DecideQuarantineBulk(
        self, request: operator_pb2.DecideQuarantineBulkRequest, context: Any
    ) -> operator_pb2.DecideQuarantineBulkResponse:
        """Start (or join, or poll by ``job_id``) the node-side job deciding every pending row
        held for ``reason`` (of one source if given), oldest first, each as
        ``DecideQuarantine`` does; reply with its progress before the call's deadline (see
        ``bulk_jobs``). A row another operator decided meanwhile is skipped."""
        if request.job_id:
            job = self._bulk.get(request.job_id)
            if job is None:
                raise NotFound(
                    f"no bulk job {request.job_id} on this node (start again: what is left)",
                    reason="unknown_job",
                )
        else:
            job = await self._start_bulk(request)
        await self._bulk.wait(job, _reply_within(context))
        start = min(request.after, len(job.decided))
        # A snapshot: the job may append while the reply is built.
        decided = list(job.decided[start:])
        return operator_pb2.DecideQuarantineBulkResponse(
            entries=[entry for entry, _ in decided],
            lesson_ids=[lesson_id for _, lesson_id in decided],
            job_id=job.id,
            total=job.total,
            done=job.done,
            finished=job.finished,
            failed=[
                operator_pb2.BulkFailure(id=f.id, reason=f.reason, detail=f.detail)
                for f in job.failed
            ],
        )

    async def _start_bulk(
        self, request: operator_pb2.DecideQuarantineBulkRequest
    ) -> BulkJob[_Decided]:
        """The job running for the request's work, or a new one over the rows left."""
        if not request.reason:
            raise InvalidRecord("a reason is required for a bulk decision", reason="missing_reason")
        if request.decision not in _BULK_DECISIONS:
            raise InvalidRecord("decision must be APPROVE or REJECT", reason="bad_decision")
        key = (request.reason, request.source_node_id, _BULK_DECISIONS[request.decision])
        running = self._bulk.running(key)
        if running is not None:
            return running
        rows = [
            r
            for r in await self._store().list_quarantine("pending")
            if request.reason in r.reasons
            and (not request.source_node_id or r.source_node_id == request.source_node_id)
        ]
        decision, note = request.decision, request.note

        async def decide(row: QuarantineRow) -> _Decided:
            one = operator_pb2.DecideQuarantineRequest(id=row.id, decision=decision, note=note)
            decided = await self.DecideQuarantine(one, None)
            return decided.entry, decided.lesson_id

        return self._bulk.start(key, rows, decide)

    async def drain_bulk(self) -> None:
        """Wait for every running bulk job to finish."""
        await self._bulk.drain()

    async def ListRejections(
        self, request: operator_pb2.ListRejectionsRequest, context: Any
    ) -> operator_pb2.ListRejectionsResponse:
        """The rejection log, newest first."""
        limit = min(request.limit or DEFAULT_REJECTIONS, MAX_REJECTIONS)
        rows = await self._store().list_rejections(limit)
        return operator_pb2.ListRejectionsResponse(entries=[rejection_entry(r) for r in rows])

    async def GetHealth(
        self, request: operator_pb2.GetHealthRequest, context: Any
    ) -> operator_pb2.GetHealthResponse:
        """The health report of the store now, as ``report_to_json``'s JSON."""
        data = report_to_json(await self.health_report())
        if self._variables is not None:
            data["variables"] = await self._variables()
        return operator_pb2.GetHealthResponse(report_json=json.dumps(data))

    async def health_report(self) -> HealthReport:
        """The health report of the store now (it reads every lesson's facts and events)."""
        if self._health is None:
            raise ConfigError(
                "this node was started without health parameters", reason="health_unconfigured"
            )
        now = self._clock.now()
        report = await current_report(self._store(), self._health, now)
        self._last_report = (now, report, (self._clock.now() - now).total_seconds())
        return report

    async def _warnings(self) -> tuple[Finding, ...]:
        """The health warnings for a status: the last report's if recent enough, else now's."""
        if self._health is None:
            return ()
        last = self._last_report
        max_age = self._health.status_warnings_max_age_s
        if last is not None and max_age > 0:
            # As old as the refresh that made it may be: a report that took long is made
            # less often (``refresh_spacing_s``), and a status must not make its own then.
            at, report, took = last
            max_age = refresh_spacing_s(max_age, took, self._health.refresh_max_share)
            if (self._clock.now() - at).total_seconds() <= max_age:
                return report.warnings
        return (await self.health_report()).warnings

    async def GetStatus(
        self, request: operator_pb2.GetStatusRequest, context: Any
    ) -> operator_pb2.GetStatusResponse:
        """The node status (``lamarck.node.api.node_status``) as JSON."""
        return operator_pb2.GetStatusResponse(status_json=json.dumps(await self.status()))

    async def status(self) -> dict[str, Any]:
        """The node status as ``status_to_json``'s dict (its health warnings: ``_warnings``)."""
        store = self._store()
        now = self._clock.now()
        source = self._network()
        network = await source() if source is not None else None
        pending = await store.quarantine_reasons("pending")
        rejections = await store.list_rejections(STATUS_REJECTIONS)
        warnings = await self._warnings()
        book = self._reputation()
        table = await book.rows() if book is not None else []
        index = store.recall_index_state if isinstance(store, HasRecallIndex) else None
        status = build_status(
            node_id=self._node_id,
            now=now,
            network=network,
            pending_reasons=pending,
            rejection_reasons=[r.reason for r in rejections],
            imports=metrics.import_counts(),
            warnings=warnings,
            reputation=table,
            top=REPUTATION_TOP,
            recall_index=index,
            labels=self._labels(),
        )
        return status_to_json(status)

    def _table(self) -> ReputationSource:
        source = self._reputation()
        if source is None:
            raise StoreUnavailable("the reputation book is not loaded yet", reason="starting")
        return source

    async def GetReputation(
        self, request: operator_pb2.ReputationTableRequest, context: Any
    ) -> operator_pb2.ReputationTableResponse:
        """The reputation table: one row per peer, sorted and filtered as asked."""
        try:
            sort = SortKey(request.sort or SortKey.SCORE.value)
        except ValueError:
            keys = ", ".join(k.value for k in SortKey)
            raise InvalidRecord(
                f"unknown sort key {request.sort!r} (one of {keys})", reason="bad_sort"
            ) from None
        source = self._table()
        rows = select_rows(await source.rows(), sort=sort, domain=request.domain)
        at = source.global_trust_at if isinstance(source, GlobalTrustClock) else None
        return operator_pb2.ReputationTableResponse(
            observer_node_id=self._node_id,
            computed_at=format_ts(self._clock.now()),
            global_trust_computed_at=format_ts(at) if at is not None else "",
            rows=[row_to_pb(r) for r in rows],
        )

    async def GetPeerReputation(
        self, request: operator_pb2.PeerReputationRequest, context: Any
    ) -> operator_pb2.PeerReputationResponse:
        """One peer's row and its events with reasons, newest first; ``NotFound`` for a peer
        this node has no row for."""
        if not request.node_id:
            raise InvalidRecord("a peer's node id is required", reason="missing_id")
        source = self._table()
        row = next((r for r in await source.rows() if r.peer == request.node_id), None)
        if row is None:
            raise NotFound(f"no reputation for {request.node_id}", id=request.node_id)
        events = await source.history(request.node_id)
        limit = min(request.limit or DEFAULT_HISTORY, MAX_HISTORY)
        return operator_pb2.PeerReputationResponse(
            row=row_to_pb(row), events=[event_to_pb(e) for e in events[:limit]]
        )

    async def ResetReputation(
        self, request: operator_pb2.ResetReputationRequest, context: Any
    ) -> operator_pb2.ResetReputationResponse:
        """Reset one peer's score to an admitted newcomer's (lifting a graylisting), the note
        kept in its history; ``NotFound`` for a peer this node has no row for."""
        node_id, note = request.node_id, request.note.strip()
        if not node_id:
            raise InvalidRecord("a peer's node id is required", reason="missing_id")
        if not note:
            raise InvalidRecord(
                "a note is required: it says in the peer's history why it was reset",
                reason="missing_note",
            )
        if len(note) > RESET_NOTE_MAX:
            raise InvalidRecord(
                f"the note is over {RESET_NOTE_MAX} characters", reason="note_too_long"
            )
        source = self._table()
        if not any(r.peer == node_id for r in await source.rows()):
            raise NotFound(f"no reputation for {node_id}", id=node_id)
        sink = self._sink()
        if sink is None:
            raise StoreUnavailable("the reputation book is not loaded yet", reason="starting")
        event = ReputationEvent(
            kind=EventKind.OPERATOR_RESET,
            node_id=node_id,
            at=self._clock.now(),
            detail=f"operator reset: {note}",
        )
        sink.emit(event)
        _log.info("reputation reset", extra={"node_id": node_id, "note": note})
        row = next(r for r in await source.rows() if r.peer == node_id)
        return operator_pb2.ResetReputationResponse(row=row_to_pb(row), event=event_to_pb(event))

    def _charge_rejection(self, row: QuarantineRow, note: str) -> None:
        sink = self._sink()
        if sink is None or not row.source_node_id:
            return
        detail = "operator rejected quarantine " + row.id + (f": {note}" if note else "")
        sink.emit(
            ReputationEvent(
                kind=EventKind.REJECTED,
                node_id=row.source_node_id,
                at=self._clock.now(),
                record_hash=row.content_hash,
                detail=detail[:500],
            )
        )

    # -- approval ----------------------------------------------------------------------------
    async def _store_approved(self, row: QuarantineRow) -> tuple[str, str | None]:
        """Store the held record through the import pipeline; its lesson id and the transfer
        rule applied. A refusal raises its typed error (the row stays pending)."""
        if taint_reason(row.reasons) is not None:
            # The lesson is stored (retired by the taint): a release makes it active again.
            sweeper = self._taint()
            if sweeper is None:
                raise StoreUnavailable("sharing is starting or stopping", reason="starting")
            return await sweeper.release(row, "", OPERATOR_ACTOR), None
        result = await self._pipeline().approve(row)
        if result.outcome is ImportOutcome.REJECT:
            assert result.error is not None  # every refusal carries its typed error
            raise result.error
        return result.lesson_id or "", result.transfer_rule


def _reply_within(context: Any) -> float | None:
    """How long a bulk call waits for its job before replying with the progress: half the
    call's remaining deadline, at most ``BULK_REPLY_S`` (no context: until it finishes)."""
    if context is None:
        return None
    remaining: float | None = context.time_remaining()
    if remaining is None:
        return BULK_REPLY_S
    return max(0.0, min(BULK_REPLY_S, remaining / 2))


def make_operator_servicer(
    node_id: str,
    clock: Clock,
    *,
    health: HealthParams,
    learning: LearningParams,
    store: Ready[LessonStore],
    network: Ready[NetworkSide],
    book: Ready[ReputationSink],
    table: Ready[ReputationSource],
) -> OperatorServicer:
    """The daemon's OperatorService over the parts it publishes once started.

    The store and the import pipeline refuse ``starting`` until the node serves (the
    pipeline also until the network side has built it). ``health`` and ``learning`` are the
    node's (its one ``NodeParams``). The reputation ``book`` (where a rejection is reported),
    the ``network`` side and the reputation ``table`` are read as they are on each call
    (``None`` while there is none: the status says so).
    """

    def snapshot() -> NetworkSource | None:
        side = network.peek()
        return side.status.network_snapshot if side is not None else None

    def quorum(content_hash: str) -> str:
        side = network.peek()
        return side.quorum.describe(content_hash) if side is not None else ""

    def taint() -> TaintSide | None:
        side = network.peek()
        return side.taint if side is not None else None

    def labels() -> Mapping[str, str]:
        side = network.peek()
        return side.membership.labels() if side is not None else {}

    return OperatorServicer(
        store.get,
        clock,
        pipeline=serving_pipeline(store, network),
        sink=book.peek,
        health=health,
        node_id=node_id,
        network=snapshot,
        reputation=table.peek,
        quorum=quorum,
        taint=taint,
        variables=lambda: learned_variables(store.get(), learning),
        labels=labels,
    )
