"""``OperatorService``: the operator's review of quarantined records and the rejection log.

Issue 5 §4.4. The import pipeline holds a record it will not believe on its own (two red
flags, a high-stakes claim without a quorum) as a quarantine row; here an operator lists,
reads, approves or rejects those rows.

Approving does not bypass verification. The row's stored bytes are parsed and verified again
exactly as stage (1) and (2) of the pipeline do (``SignedMemory.from_json`` then ``verify``),
and their sha256 must still be the row's ``content_hash``; only the quarantine verdict itself
is overridden. A record that fails is refused with the verification error and its row stays
pending. A verified record is stored the way the pipeline's store step (10) stores an accepted
import (``lamarck.node.importing.pipeline.imported_row``: a local id, an embedding computed
here from the content, the original signed bytes, a provenance entry), with the seed's
transfer confidence for its source's reputation and no verified votes; then the row is marked
approved. When the node runs the sharing side, stage (3) is checked again too (the source may
have been revoked, or its key rotated, since the record was held) and the import view learns
that the record is now stored, so a later copy is a duplicate and an older version is
superseded. Rejecting only marks the row: nothing is stored, nothing is deleted.

Decisions feed reputation like the pipeline's own refusals: a rejected row is a ``rejected``
event about its source (keyed by the record, so it counts once however many copies were
held). An approval emits nothing: an operator's word is not reality, and the source earns
reputation when the stored lesson is used and its outcomes confirm it.

Decisions are serialised by one lock and re-read the row under it, so two operators deciding
the same row get one success and one ``ConflictError(reason="already_decided")``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any

from lamarck.errors import (
    ConflictError,
    InvalidRecord,
    NotFound,
    VerificationError,
)
from lamarck.node.api.server import NodeContext, Provider, provider_of
from lamarck.node.embedding import Embedder
from lamarck.node.importing.decision import ImportParams
from lamarck.node.importing.pipeline import KeyPins, check_key_pin, imported_row
from lamarck.node.importing.transfer import TransferParams, transfer_confidence
from lamarck.node.importing.view import StoreImportView
from lamarck.node.store.port import LessonStore, QuarantineRow, RejectionRow
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import Clock
from lamarck.proto.signed import SignedMemory
from lamarck.proto.timefmt import format_ts
from lamarck.proto.v1 import operator_pb2, operator_pb2_grpc
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import ReputationSink

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_REJECTIONS",
    "MAX_PAGE_SIZE",
    "MAX_REJECTIONS",
    "PREVIEW_CHARS",
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
#: Characters of a record's content shown in a listing.
PREVIEW_CHARS = 200

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


def quarantine_entry(row: QuarantineRow) -> operator_pb2.QuarantineEntry:
    """The wire form of a quarantine row."""
    record_id, preview = _preview(row)
    return operator_pb2.QuarantineEntry(
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

    ``store`` may be a zero-argument callable read on each call (the daemon's raises
    ``StoreUnavailable`` until the store is migrated). ``reputation`` maps a source node id to
    its score in [0, 1]; without one every source stands at the initial score. ``pins`` and
    ``view`` return the registry's key pins and the import view when the node shares (else
    ``None``: no registry to re-check, no index to update).
    """

    def __init__(
        self,
        store: LessonStore | Provider[LessonStore],
        clock: Clock,
        *,
        embedder: Embedder,
        reputation: Callable[[str], float] | None = None,
        import_params: ImportParams | None = None,
        transfer_params: TransferParams | None = None,
        pins: Callable[[], KeyPins | None] | None = None,
        view: Callable[[], StoreImportView | None] | None = None,
        sink: Callable[[], ReputationSink | None] | None = None,
    ) -> None:
        self._store = provider_of(store, LessonStore)
        self._clock = clock
        self._embedder = embedder
        initial = ReputationParams().initial_score
        self._reputation = reputation or (lambda _node_id: initial)
        self._import_params = import_params or ImportParams()
        self._transfer_params = transfer_params or TransferParams()
        self._pins = pins or (lambda: None)
        self._view = view or (lambda: None)
        self._sink = sink or (lambda: None)
        self._decide_lock = asyncio.Lock()

    async def _row(self, quarantine_id: str) -> QuarantineRow:
        """The quarantine row ``quarantine_id`` in any state, or ``NotFound``."""
        if not quarantine_id:
            raise InvalidRecord("a quarantine id is required", reason="missing_id")
        for row in await self._store().list_quarantine(None):
            if row.id == quarantine_id:
                return row
        raise NotFound(f"quarantine {quarantine_id} not found", id=quarantine_id)

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
        return operator_pb2.ListQuarantineResponse(
            entries=[quarantine_entry(r) for r in page],
            next_page_token=str(offset + size) if more else "",
        )

    async def ShowQuarantine(
        self, request: operator_pb2.ShowQuarantineRequest, context: Any
    ) -> operator_pb2.ShowQuarantineResponse:
        """One row and the exact signed bytes held."""
        row = await self._row(request.id)
        return operator_pb2.ShowQuarantineResponse(
            entry=quarantine_entry(row), record_json=row.signed_record
        )

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
            lesson_id = await self._store_approved(row) if decision == "approved" else ""
            updated = await self._store().set_quarantine_state(row.id, decision)
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
                "note": request.note,
            },
        )
        return operator_pb2.DecideQuarantineResponse(
            entry=quarantine_entry(updated), lesson_id=lesson_id
        )

    async def ListRejections(
        self, request: operator_pb2.ListRejectionsRequest, context: Any
    ) -> operator_pb2.ListRejectionsResponse:
        """The rejection log, newest first."""
        limit = min(request.limit or DEFAULT_REJECTIONS, MAX_REJECTIONS)
        rows = await self._store().list_rejections(limit)
        return operator_pb2.ListRejectionsResponse(entries=[rejection_entry(r) for r in rows])

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
    def _reverify(self, row: QuarantineRow) -> SignedMemory:
        """Stages (1) and (2) again over the held bytes; raises ``InvalidRecord`` or
        ``VerificationError``."""
        # (0) the bytes are the ones the row was filed under.
        if sha256_hex(row.signed_record) != row.content_hash:
            raise VerificationError(
                f"quarantine {row.id}: stored bytes do not match their content hash",
                reason="hash_mismatch",
                id=row.id,
            )
        # (1) size and schema; (2) signature, hash, key binding, timestamps.
        signed = SignedMemory.from_json(row.signed_record)
        signed.verify(self._clock.now(), self._import_params.max_future_skew_s)
        if signed.source_agent_id != row.source_node_id:
            raise VerificationError(
                f"quarantine {row.id}: record names a different source than its row",
                reason="key_mismatch",
                id=row.id,
            )
        return signed

    async def _check_pin(self, signed: SignedMemory) -> None:
        """Stage (3) again, when the node has a registry: fail closed if it cannot answer."""
        pins = self._pins()
        if pins is not None:
            await check_key_pin(pins, signed)

    async def _store_approved(self, row: QuarantineRow) -> str:
        """Re-verify the held record and store it as an import; returns the lesson id."""
        signed = self._reverify(row)
        await self._check_pin(signed)
        store = self._store()
        held = await store.find_by_content_hash(signed.content_hash)
        if held is not None:
            # The same bytes arrived again by another path and were accepted meanwhile.
            return held.id
        record = signed.memory
        confidence = transfer_confidence(
            record.confidence,
            self._reputation(signed.source_agent_id),
            0.0,  # the operator's word is not a vote: no verified validations
            self._transfer_params,
        )
        vectors = await asyncio.to_thread(self._embedder.embed, [record.content])
        lesson = imported_row(
            signed,
            lesson_id=str(uuid.uuid4()),
            confidence=confidence,
            via_node_id="",
            now=self._clock.now(),
            embedding=vectors[0],
        )
        view = self._view()
        older = view.held.latest_lesson_id(record.id) if view is not None else None
        if older is not None:
            try:
                await store.supersede(older, lesson)
            except ConflictError:
                # The older copy was retired or superseded here already: keep that, add this.
                await store.insert_lesson(lesson)
        else:
            await store.insert_lesson(lesson)
        if view is not None:
            view.note_held(record, signed.content_hash, lesson_id=lesson.id)
        return lesson.id


def make_operator_servicer(ctx: NodeContext) -> OperatorServicer:
    """The OperatorService for a daemon's ``NodeContext``.

    The store, and the sharing side's reputation, key pins and import view, are read on each
    call: they appear once the node has started them.
    """

    def pins() -> KeyPins | None:
        sharing = ctx.sharing
        return sharing.directory if sharing is not None else None

    def view() -> StoreImportView | None:
        sharing = ctx.sharing
        return sharing.view if sharing is not None else None

    return OperatorServicer(
        lambda: ctx.store,
        ctx.clock,
        embedder=ctx.embedder,
        reputation=ctx.reputation_score,
        pins=pins,
        view=view,
        sink=ctx.reputation_sink,
    )
