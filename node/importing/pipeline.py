"""The import pipeline: received bytes in, one fail-closed decision out (issue 5 §3).

Stages, in order; the first refusal wins and nothing already stored is altered by it:

(1) size and schema — ``SignedMemory.from_json`` (``too_large``, ``malformed``, ...).
(2) signature and hash — ``SignedMemory.verify`` (``bad_signature``, ``hash_mismatch``,
    ``key_mismatch``, ``not_canonical``, ...). Charged to the *delivering* peer as
    ``bad_signature``: anyone can write any source id into a record, so only the relay is known.
(3) key pinned to the claimed source in the registry (:class:`KeyPins`):
    ``unregistered_source``, ``revoked_source``, ``key_not_pinned``.
(4)..(9) ``decide_import`` over a prefetched, pure :class:`ImportSnapshot`.
(10) store: an accepted record becomes an imported ``LessonRow`` (local id, embedding computed
     here from the content — a shipped vector is never read), keeping ``imported_from``,
     ``original_confidence``, the original signed bytes and a provenance entry; a newer
     version supersedes the older row; a duplicate adds a provenance entry to the one row it
     already has; a quarantine verdict becomes a quarantine row.
(11) the answer says whether to forward.

Every rejection has a typed error (``ImportResult.error``), is counted in ``IMPORTS``,
recorded with ``LessonStore.record_rejection`` and reported to reputation as an event.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from lamarck.errors import (
    ConflictError,
    InvalidRecord,
    LamarckError,
    PolicyRejected,
    RegistryError,
    VerificationError,
)
from lamarck.node.embedding import Embedder
from lamarck.node.importing.decision import (
    ImportDecision,
    ImportOutcome,
    ImportParams,
    Incoming,
    decide_import,
)
from lamarck.node.importing.view import StoreImportView
from lamarck.node.metrics import IMPORTS
from lamarck.node.store.port import (
    Category,
    LessonRow,
    LessonStatus,
    LessonStore,
    ProvenanceEntry,
    QuarantineRow,
    RejectionRow,
    Vector,
)
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import Clock
from lamarck.proto.limits import DEFAULT_LIMITS, RecordLimits
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import SignedMemory
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.port import ReputationSink

__all__ = [
    "PIN_CHARGES",
    "RESULT_LABELS",
    "ImportPipeline",
    "ImportResult",
    "KeyPins",
    "PinReason",
    "check_key_pin",
    "imported_row",
    "pin_refusal",
]

#: ``IMPORTS`` ``result`` label for each outcome.
RESULT_LABELS: dict[ImportOutcome, str] = {
    ImportOutcome.ACCEPT: "accepted",
    ImportOutcome.DUPLICATE: "duplicate",
    ImportOutcome.QUARANTINE: "quarantined",
    ImportOutcome.REJECT: "rejected",
}


class PinReason(StrEnum):
    """Stage (3) refusals: the claimed source is not bound to the signing key."""

    UNREGISTERED_SOURCE = "unregistered_source"
    REVOKED_SOURCE = "revoked_source"
    KEY_NOT_PINNED = "key_not_pinned"
    REGISTRY_UNAVAILABLE = "registry_unavailable"


class KeyPins(Protocol):
    """The registry facts stage (3) needs (the node implements it over ``CachedDirectory``)."""

    async def pinned_key(self, node_id: str) -> str | None:
        """The base64url public key pinned to ``node_id``, or None if it never registered."""
        ...

    async def is_revoked(self, node_id: str) -> bool:
        """Whether ``node_id`` was revoked."""
        ...


#: The reputation event each stage (3) refusal charges to the delivering peer. An unreachable
#: registry is nobody's fault; a key that is not the pinned one is a bad signature.
PIN_CHARGES: dict[PinReason, EventKind | None] = {
    PinReason.REGISTRY_UNAVAILABLE: None,
    PinReason.REVOKED_SOURCE: EventKind.REJECTED,
    PinReason.UNREGISTERED_SOURCE: EventKind.REJECTED,
    PinReason.KEY_NOT_PINNED: EventKind.BAD_SIGNATURE,
}


async def pin_refusal(pins: KeyPins, node_id: str, key: str | None) -> tuple[PinReason, str] | None:
    """Why ``key`` is not the registered, unrevoked key of ``node_id`` (reason and a phrase
    about ``node_id``), or None when it is. An unreachable registry is a refusal: fail closed.

    The one pin check: stage (3) of the pipeline and the peer authentication of the
    PeerService calls both ask it, and map the reason to their own errors.
    """
    try:
        revoked = await pins.is_revoked(node_id)
        pinned = None if revoked else await pins.pinned_key(node_id)
    except RegistryError as e:
        return PinReason.REGISTRY_UNAVAILABLE, f"{node_id} cannot be checked: {e}"
    if revoked:
        return PinReason.REVOKED_SOURCE, f"{node_id} is revoked"
    if pinned is None:
        return PinReason.UNREGISTERED_SOURCE, f"{node_id} is not registered"
    if key != pinned:
        return PinReason.KEY_NOT_PINNED, f"{node_id} is pinned to another key"
    return None


async def check_key_pin(pins: KeyPins, signed: SignedMemory) -> None:
    """Stage (3): the claimed source is registered, not revoked, and pinned to the signing key.

    Raises ``PolicyRejected`` (unregistered, revoked, registry unavailable: fail closed) or
    ``VerificationError`` (``key_not_pinned``), each with a ``PinReason`` as its reason.
    """
    signature = signed.memory.signature
    refusal = await pin_refusal(
        pins, signed.source_agent_id, signature.signed_by if signature else None
    )
    if refusal is not None:
        reason, why = refusal
        error = VerificationError if reason is PinReason.KEY_NOT_PINNED else PolicyRejected
        raise error(f"source {why}", reason=reason)


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What became of one received record.

    ``content_hash`` is the sha256 hex of the exact bytes; ``lesson_id`` the local row that
    holds it (accept, and duplicate of a stored lesson); ``forward`` whether to gossip it on.
    """

    outcome: ImportOutcome
    content_hash: str
    reasons: tuple[str, ...] = ()
    record_id: str | None = None
    source_node_id: str | None = None
    lesson_id: str | None = None
    forward: bool = False
    error: LamarckError | None = None

    @property
    def reason(self) -> str:
        """The first reason ("" for accept and duplicate)."""
        return self.reasons[0] if self.reasons else ""


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
        status=LessonStatus.ACTIVE,
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
        memory_type=record.type,
        access_level=record.access_level,
        source_node_id=source,
        imported_from=source,
        original_confidence=record.confidence,
        signed_record=signed.raw,
        content_hash=signed.content_hash,
        provenance=(ProvenanceEntry(source, via_node_id, now, signed.content_hash),),
        embedding=embedding,
    )


class _Refused(Exception):
    """Internal: a stage (1)..(3) refusal with its error and the event kind to charge."""

    def __init__(self, error: LamarckError, charge: EventKind | None, subject: str) -> None:
        super().__init__(error.reason)
        self.error = error
        self.charge = charge
        self.subject = subject


class ImportPipeline:
    """Runs the stages over one record at a time; see the module docstring."""

    def __init__(
        self,
        *,
        store: LessonStore,
        view: StoreImportView,
        pins: KeyPins,
        reputation: ReputationSink,
        embedder: Embedder,
        clock: Clock,
        rng: random.Random,
        params: ImportParams | None = None,
        limits: RecordLimits = DEFAULT_LIMITS,
    ) -> None:
        self._store = store
        self._view = view
        self._pins = pins
        self._reputation = reputation
        self._embedder = embedder
        self._clock = clock
        self._rng = rng
        self.params = params or ImportParams()
        self._limits = limits
        # Stages (5)..(10) read and then write the local state: one record at a time, so two
        # copies of one record arriving together cannot both look new.
        self._lock = asyncio.Lock()

    @property
    def view(self) -> StoreImportView:
        """The view (and its indexes) the pipeline decides over."""
        return self._view

    async def import_many(
        self, raws: Sequence[bytes], *, via_node_id: str = ""
    ) -> list[ImportResult]:
        """Import a batch in order; one result per record."""
        return [await self.import_record(raw, via_node_id=via_node_id) for raw in raws]

    async def import_record(self, raw: bytes, *, via_node_id: str = "") -> ImportResult:
        """Run every stage on ``raw`` delivered by ``via_node_id`` ("" for a local file).

        Raises only ``StoreError`` (the store is down: nothing was decided, retry later).
        """
        now = self._clock.now()
        try:
            signed = self._parse_and_verify(raw, via_node_id, now)
            await self._check_pin(signed, via_node_id)
        except _Refused as refused:
            content_hash = sha256_hex(raw) if isinstance(raw, bytes) else ""
            return await self._refuse(refused, content_hash, via_node_id, now)
        async with self._lock:
            return await self._decide_and_store(signed, via_node_id, now)

    # -- stages (1)..(3) -----------------------------------------------------------------

    def _parse_and_verify(self, raw: bytes, via: str, now: datetime) -> SignedMemory:
        # (1) size and schema.
        try:
            signed = SignedMemory.from_json(raw, limits=self._limits)
        except InvalidRecord as e:
            raise _Refused(e, EventKind.REJECTED, via) from None
        # (2) signature and hash (the clock check inside verify comes after the signature).
        try:
            signed.verify(now, self.params.max_future_skew_s)
        except VerificationError as e:
            if e.reason == "future_timestamp":
                # The signature held, so the date is the signer's choice.
                raise _Refused(e, EventKind.REJECTED, signed.source_agent_id) from None
            raise _Refused(e, EventKind.BAD_SIGNATURE, via) from None
        return signed

    async def _check_pin(self, signed: SignedMemory, via: str) -> None:
        # (3) the claimed source must be registered, not revoked, and pinned to this key.
        try:
            await check_key_pin(self._pins, signed)
        except (PolicyRejected, VerificationError) as e:
            raise _Refused(e, PIN_CHARGES[PinReason(e.reason)], via) from None

    async def _refuse(
        self, refused: _Refused, content_hash: str, via: str, now: datetime
    ) -> ImportResult:
        events: tuple[ReputationEvent, ...] = ()
        if refused.charge is not None and refused.subject:
            events = (
                ReputationEvent(
                    kind=refused.charge,
                    node_id=refused.subject,
                    at=now,
                    record_hash=content_hash,
                    detail=refused.error.reason,
                ),
            )
        return await self._reject(
            refused.error, content_hash, refused.subject or via, via, now, events, None
        )

    async def _reject(
        self,
        error: LamarckError,
        content_hash: str,
        source: str,
        via: str,
        now: datetime,
        events: Sequence[ReputationEvent],
        record: MemoryV2 | None,
    ) -> ImportResult:
        reason = error.reason
        IMPORTS.labels(result=RESULT_LABELS[ImportOutcome.REJECT], reason=reason).inc()
        await self._store.record_rejection(
            RejectionRow(
                source_node_id=source,
                reason=reason,
                content_hash=content_hash,
                received_at=now,
                detail=f"via {via}" if via else "",
            )
        )
        for event in events:
            self._reputation.emit(event)
        return ImportResult(
            outcome=ImportOutcome.REJECT,
            content_hash=content_hash,
            reasons=(reason,),
            record_id=record.id if record is not None else None,
            source_node_id=record.provenance.source_agent_id if record is not None else None,
            error=error,
        )

    # -- stages (4)..(11) ----------------------------------------------------------------

    async def _decide_and_store(
        self, signed: SignedMemory, via: str, now: datetime
    ) -> ImportResult:
        record = signed.memory
        source = record.provenance.source_agent_id
        base = ImportResult(
            outcome=ImportOutcome.DUPLICATE,
            content_hash=signed.content_hash,
            record_id=record.id,
            source_node_id=source,
        )
        if source == self._view.self_node_id and await self._own_lesson_held(record.id):
            # Our own lesson coming back through gossip: we hold the original.
            IMPORTS.labels(result="duplicate", reason="").inc()
            return dataclasses.replace(base, lesson_id=record.id)
        snapshot = await self._view.snapshot(record, signed.content_hash, now)
        incoming = Incoming(record=record, content_hash=signed.content_hash, via_node_id=via)
        decision = decide_import(incoming, snapshot, self.params, now)
        if decision.outcome is ImportOutcome.REJECT:
            error = decision.error or PolicyRejected(reason=decision.reason)
            self._view.held.reject(signed.content_hash, decision.reason)
            result = await self._reject(
                error, signed.content_hash, source, via, now, decision.events, record
            )
            return result
        for event in decision.events:
            self._reputation.emit(event)
        if decision.outcome is ImportOutcome.DUPLICATE:
            lesson_id = await self._add_provenance(signed, via, now)
            IMPORTS.labels(result="duplicate", reason="").inc()
            return dataclasses.replace(base, lesson_id=lesson_id)
        if decision.outcome is ImportOutcome.QUARANTINE:
            return await self._quarantine(signed, decision, base, now)
        return await self._store_accepted(signed, decision, base, via, now)

    async def _own_lesson_held(self, lesson_id: str) -> bool:
        return bool(await self._store.get_lessons([lesson_id]))

    async def _add_provenance(self, signed: SignedMemory, via: str, now: datetime) -> str | None:
        row = await self._store.find_by_content_hash(signed.content_hash)
        if row is None:
            return None  # held in quarantine: nothing to merge into
        if any(p.via_node_id == via for p in row.provenance):
            return row.id
        entry = ProvenanceEntry(signed.source_agent_id, via, now, signed.content_hash)
        await self._store.update_lesson(
            dataclasses.replace(row, provenance=(*row.provenance, entry), embedding=None)
        )
        return row.id

    async def _quarantine(
        self, signed: SignedMemory, decision: ImportDecision, base: ImportResult, now: datetime
    ) -> ImportResult:
        await self._store.quarantine(
            QuarantineRow(
                id=self._new_id(),
                content_hash=signed.content_hash,
                source_node_id=signed.source_agent_id,
                reasons=decision.reasons,
                received_at=now,
                signed_record=signed.raw,
            )
        )
        self._view.note_held(signed.memory, signed.content_hash)
        IMPORTS.labels(result="quarantined", reason=decision.reason).inc()
        return dataclasses.replace(
            base,
            outcome=ImportOutcome.QUARANTINE,
            reasons=decision.reasons,
            error=decision.error,
        )

    async def _store_accepted(
        self,
        signed: SignedMemory,
        decision: ImportDecision,
        base: ImportResult,
        via: str,
        now: datetime,
    ) -> ImportResult:
        record = signed.memory
        assert decision.confidence is not None  # set for every accept
        # (10) the embedding is computed here, from the content: never a shipped vector.
        vectors = await asyncio.to_thread(self._embedder.embed, [record.content])
        row = imported_row(
            signed,
            lesson_id=self._new_id(),
            confidence=decision.confidence,
            via_node_id=via,
            now=now,
            embedding=vectors[0],
        )
        older = self._view.held.latest_lesson_id(record.id)
        if older is not None:
            try:
                await self._store.supersede(older, row)
            except ConflictError:
                # The older copy was retired or superseded here already: keep that, add this.
                await self._store.insert_lesson(row)
        else:
            await self._store.insert_lesson(row)
        self._view.note_held(record, signed.content_hash, lesson_id=row.id)
        self._view.history.add(record.provenance.source_agent_id, now, record.confidence)
        IMPORTS.labels(result="accepted", reason="").inc()
        # (11) forward.
        return dataclasses.replace(
            base, outcome=ImportOutcome.ACCEPT, lesson_id=row.id, forward=decision.forward
        )

    def _new_id(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
