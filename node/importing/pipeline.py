"""The import pipeline: received bytes in, one fail-closed decision out.

Stages, in order; the first refusal wins and nothing already stored is altered by it:

(1) size and schema — ``SignedMemory.from_json`` (``too_large``, ``malformed``, ...).
(2) signature and hash — ``SignedMemory.verify`` (``bad_signature``, ``hash_mismatch``,
    ``key_mismatch``, ``not_canonical``, ...).
(3) key pinned to the claimed source in the registry (:class:`KeyPins`):
    ``unregistered_source``, ``revoked_source``, ``key_not_pinned``.
(4)..(9) ``decide_import`` over a prefetched, pure :class:`ImportSnapshot`.
(10) store: an accepted record becomes an imported ``LessonRow`` (local id, embedding computed
     here from the content — a shipped vector is never read), keeping ``imported_from``,
     ``original_confidence``, the original signed bytes and a provenance entry; a newer
     version supersedes the older row; a duplicate adds a provenance entry to the one row it
     already has; a quarantine verdict becomes a quarantine row.
(11) the answer says whether to forward.

Who a refusal at (1)..(3) charges: ``lamarck.node.importing.intake``.

Every rejection has a typed error (``ImportResult.error``), is counted in ``IMPORTS``,
recorded with ``LessonStore.record_rejection`` and, where someone provably caused it, reported
to reputation as an event (``decision.py`` says who).

**One way in**. This is the only code that writes a row that came from another
node; every call names its :class:`ImportSource`:

* ``peer`` (PeerService.Publish) and ``sync`` (an anti-entropy pull) name the delivering peer;
* ``bundle`` (AgentService.Import) is a local file: nobody delivered it, so nobody is charged
  for stale or misrouted bytes. Stage (3) still runs: a record signed by a key no registry
  of this node knows (not registered, or no registry at all) is held in quarantine with
  reason ``unknown_signer`` for an operator, after stages (4)..(9) (a poisoned record is
  still refused outright). This node always knows its own key (verify binds id and key);
* ``quorum`` stores a record held ``awaiting_quorum`` once a quorum certificate for it
  verifies here (this node's own round, ``ImportPipeline.certify``; or a certificate that
  arrived with a copy of the record from a peer): the approval path below, with the
  certificate as the evidence that lifts the high-stakes hold and the confidence the
  transfer rule gives a certified record; the row is marked approved by ``quorum``;
* ``approval`` (OperatorService) stores a quarantined record an operator approved: stages
  (1)..(3) again (``unknown_signer`` rows skip the "not registered" refusal: the operator
  vouched for that key), the history and access stages against what is *stored* now (a newer
  stored version makes it a ``rollback``), then the decision kept with the row (its
  transferred confidence and rule) is applied — not a recomputation. A refused approval
  changes nothing and records nothing: the record was judged when it arrived.

A certificate given with a record (``certificate=``) is verified by the pipeline's
``CertificateCheck`` (every vote's signature, and the count re-run over this node's own view
of who is admitted under which principal); a refused certificate leaves the record to the
usual rules (held ``awaiting_quorum`` if it is high-stakes) and is reported on the result as
``certificate_error`` with its typed reason.

A duplicate is answered as a duplicate whatever the path and whatever the index knew (a
``ConflictError`` on the content hash is looked up and answered DUPLICATE). Only
``StoreUnavailable`` escapes (nothing decided: retry, which Publish answers DEFERRED); any
other store failure on one record is that record's REJECT (not recorded as judged, so a later
copy is tried again), and never aborts a batch or a Sync round.

The embedding (the slow step) is computed before the import lock is taken, so intake is not
serialised on the embedder; the decision is re-taken under the lock, so two copies of one
record arriving together cannot both look new (the second's vector is discarded).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

from lamarck.domain.embedder import Embedder
from lamarck.domain.rows import (
    LessonEvent,
    LessonRow,
    LessonStatus,
    ProvenanceEntry,
    QuarantineRow,
    RejectionRow,
    Vector,
)
from lamarck.errors import (
    ConflictError,
    InvalidRecord,
    LamarckError,
    PolicyRejected,
    StoreError,
    StoreUnavailable,
    VerificationError,
)
from lamarck.node.importing.intake import (
    ImportCall,
    Refused,
    parse_and_verify,
    pin_hold,
)
from lamarck.node.importing.results import (
    QUORUM_ACTOR,
    RESULT_LABELS,
    UNCHARGED,
    CertificateCheck,
    ImportResult,
    ImportSource,
)
from lamarck.node.importing.versions import (
    held_record_id,
    imported_row,
    newer_version_row,
    version_events,
)
from lamarck.node.importing.view import (
    ImportSnapshot,
    StoreImportView,
)
from lamarck.node.metrics import IMPORTS
from lamarck.node.store.port import LessonStore
from lamarck.policy.chain import build_policy
from lamarck.policy.decision import (
    DecisionReason,
    ImportDecision,
    ImportOutcome,
    ImportParams,
    ImportPolicy,
    Incoming,
    decide_import,
)
from lamarck.policy.effects import HoldReason, apply_decision, counts_in_history
from lamarck.policy.filters import established_floor, needs_established, texts_with_content
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import Clock
from lamarck.proto.limits import DEFAULT_LIMITS, RecordLimits
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import SignedMemory
from lamarck.registry.pins import KeyPins
from lamarck.reputation.events import ReputationEvent
from lamarck.reputation.port import ReputationSink

__all__ = [
    "QUORUM_ACTOR",
    "CertificateCheck",
    "ExpectedHook",
    "ImportPipeline",
    "ImportResult",
    "ImportSource",
    "imported_row",
]

_log = logging.getLogger(__name__)


#: Told of each active copy the pipeline stored (the lesson service contests its conflicts).
StoredHook = Callable[[LessonRow], Awaitable[object]]
#: Told of the operations of the records an import is about to store (empty: it ended).
ExpectedHook = Callable[[Sequence[str]], Awaitable[object]]


class ImportPipeline:
    """Runs the stages over one record at a time; see the module docstring.

    ``pins`` is the registry's key pins, or ``None`` when this node has no registry (then a
    peer's record is refused ``registry_unavailable`` and a bundle's held ``unknown_signer``).
    """

    def __init__(
        self,
        *,
        store: LessonStore,
        view: StoreImportView,
        pins: KeyPins | None,
        reputation: ReputationSink,
        embedder: Embedder,
        clock: Clock,
        rng: random.Random,
        params: ImportParams,
        policy: ImportPolicy | None = None,
        limits: RecordLimits = DEFAULT_LIMITS,
        certificates: CertificateCheck | None = None,
        on_stored: StoredHook | None = None,
        on_expected: ExpectedHook | None = None,
    ) -> None:
        self._store = store
        # Told ahead of the operations of a batch's records (``expect``): the lesson service
        # reads once which of them its contests could meet a proven lesson on.
        self._on_expected = on_expected
        # Told of every active copy stored, so the lesson service can contest what it
        # contradicts at once: a peer's reversal reaches this node's prompts now,
        # not at the next daily reconcile.
        self._on_stored = on_stored
        self._view = view
        self._pins = pins
        self._reputation = reputation
        self._embedder = embedder
        self._clock = clock
        self._rng = rng
        self.params = params
        # The checks built from the params at wiring (the node passes its own, with its
        # embedder's meaning check; else structure only).
        self.policy = policy or build_policy(self.params)
        # The least confidence of the established lessons the filters read (None: they read
        # none); the chain is fixed, so it is walked once, not per record.
        self._established_from = established_floor(self.policy.filters)
        self._limits = limits
        # Without a checker every certificate is refused (``no_quorum_check``): fail closed.
        self._certificates = certificates
        # Stages (5)..(10) read and then write the local state: one record at a time, so two
        # copies of one record arriving together cannot both look new. The embedding is
        # computed before it is taken.
        self._lock = asyncio.Lock()

    @property
    def view(self) -> StoreImportView:
        """The view (and its indexes) the pipeline decides over."""
        return self._view

    @property
    def store(self) -> LessonStore:
        """The lesson store the pipeline writes to (a long catch-up bulk-loads it)."""
        return self._store

    async def expect(self, operations: Sequence[str]) -> None:
        """The operations of the records about to be imported (a catch-up's next chunk, read
        ahead by its ``Prefetch``; empty: the import ended), told to the ``on_expected``
        hook."""
        if self._on_expected is not None:
            await self._on_expected(operations)

    async def import_record(
        self,
        raw: bytes,
        *,
        source: ImportSource,
        via_node_id: str = "",
        label: str = "",
        dry_run: bool = False,
        certificate: bytes | None = None,
    ) -> ImportResult:
        """Run every stage on ``raw`` arriving by ``source``, delivered by ``via_node_id``
        ("" for a bundle). ``label`` names a bundle file in the rejection log; ``dry_run``
        decides without writing, recording or charging anything. ``certificate`` is a quorum
        certificate that came with the record (see the module doc).

        Raises only ``StoreUnavailable`` (nothing was decided: retry later).
        """
        if source in (ImportSource.APPROVAL, ImportSource.QUORUM):
            raise ValueError("an approval is made with approve(row), a quorum with certify(row)")
        call = ImportCall(
            source, via_node_id, self._clock.now(), label, dry_run, certificate=certificate
        )
        return await self._run(raw, call)

    async def certify(self, row: QuarantineRow, certificate: bytes) -> ImportResult:
        """Store the record held ``awaiting_quorum`` in ``row`` with its quorum ``certificate``
        (source ``quorum``): stages (1)..(3) again, the certificate verified, then the approval
        path; the row is marked approved by ``quorum``. A refused certificate or record changes
        nothing (REJECT with the typed error). Raises only ``StoreUnavailable``.
        """
        call = ImportCall(
            ImportSource.QUORUM, "", self._clock.now(), held=row, certificate=certificate
        )
        return await self._run(row.signed_record, call)

    async def approve(self, row: QuarantineRow) -> ImportResult:
        """Store the quarantined ``row`` an operator approved (source ``approval``).

        A refusal (REJECT, with the typed error) changes and records nothing; a DUPLICATE
        names the lesson already holding those bytes. Raises only ``StoreUnavailable``.
        """
        call = ImportCall(ImportSource.APPROVAL, "", self._clock.now(), held=row)
        return await self._run(row.signed_record, call)

    async def _run(self, raw: bytes, call: ImportCall) -> ImportResult:
        try:
            return await self._stages(raw, call)
        except StoreUnavailable:
            raise
        except StoreError as e:
            # One record's store failure is that record's answer, never the batch's; it is
            # not recorded as judged, so a later copy is tried again.
            IMPORTS.labels(result=RESULT_LABELS[ImportOutcome.REJECT], reason=e.reason).inc()
            content_hash = sha256_hex(raw) if isinstance(raw, bytes) else ""
            _log.warning(
                "import not stored",
                extra={"content_hash": content_hash, "reason": e.reason, "error": str(e)},
            )
            return ImportResult(
                outcome=ImportOutcome.REJECT,
                content_hash=content_hash,
                reasons=(e.reason,),
                error=e,
            )

    async def _stages(self, raw: bytes, call: ImportCall) -> ImportResult:
        try:
            signed = parse_and_verify(
                raw, call, limits=self._limits, max_future_skew_s=self.params.max_future_skew_s
            )
            hold = await pin_hold(
                signed, call, pins=self._pins, self_node_id=self._view.self_node_id
            )
        except Refused as refused:
            content_hash = sha256_hex(raw) if isinstance(raw, bytes) else ""
            return await self._refuse(refused, content_hash, call)
        vector = None
        if not call.dry_run and self._may_be_new(signed):
            # Outside the lock: intake is not serialised on the embedder. Discarded if the
            # decision under the lock is not an accept (e.g. a copy got in first). The same
            # call embeds the texts the filters read by meaning; row 0 is the content's.
            record = signed.memory
            texts = texts_with_content(self.policy.filters, record.content)
            extra = texts[1:]
            # Computed a chunk ahead (a catch-up's prefetch): taken here, no thread needed.
            vectors = self._embedder.computed(texts)
            if vectors is None:
                vectors = await asyncio.to_thread(self._embedder.embed, texts)
            vector = vectors[0]
            call.text_vectors[record.content] = vector
            call.text_vectors.update((t, vectors[i + 1]) for i, t in enumerate(extra))
        async with self._lock:
            if call.held is not None and call.source is ImportSource.QUORUM:
                return await self._promote(signed, call.held, call, vector)
            if call.held is not None:
                return await self._approve(signed, call.held, call, vector)
            return await self._decide_and_store(signed, call, hold, vector)

    def _may_be_new(self, signed: SignedMemory) -> bool:
        """Cheap look at the index: worth embedding (re-decided under the lock)."""
        held = self._view.held
        known = held.known_versions(signed.memory.id)
        if any(k.content_hash == signed.content_hash for k in known):
            return False
        return held.previously_rejected(signed.content_hash) is None

    async def _embed(self, content: str) -> Vector:
        vectors = await asyncio.to_thread(self._embedder.embed, [content])
        vector: Vector = vectors[0]
        return vector

    # -- stages (1)..(3) -----------------------------------------------------------------

    async def _refuse(self, refused: Refused, content_hash: str, call: ImportCall) -> ImportResult:
        events: tuple[ReputationEvent, ...] = ()
        if refused.charge is not None and refused.subject:
            events = (
                ReputationEvent(
                    kind=refused.charge,
                    node_id=refused.subject,
                    at=call.now,
                    record_hash=content_hash,
                    detail=refused.error.reason,
                ),
            )
        return await self._reject(
            refused.error, content_hash, refused.subject or call.via, call, events, None
        )

    async def _reject(
        self,
        error: LamarckError,
        content_hash: str,
        source: str,
        call: ImportCall,
        events: Sequence[ReputationEvent],
        record: MemoryV2 | None,
    ) -> ImportResult:
        reason = error.reason
        if call.records:
            IMPORTS.labels(result=RESULT_LABELS[ImportOutcome.REJECT], reason=reason).inc()
            await self._store.record_rejection(
                RejectionRow(
                    source_node_id=source,
                    reason=reason,
                    content_hash=content_hash,
                    received_at=call.now,
                    detail=call.detail[:500],
                )
            )
            for event in events:
                self._reputation.emit(event)
            if not events:
                IMPORTS.labels(result=UNCHARGED, reason=reason).inc()
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
        self, signed: SignedMemory, call: ImportCall, hold: HoldReason | None, vector: Vector | None
    ) -> ImportResult:
        record = signed.memory
        source = record.provenance.source_agent_id
        via, now = call.via, call.now
        base = ImportResult(
            outcome=ImportOutcome.DUPLICATE,
            content_hash=signed.content_hash,
            record_id=record.id,
            source_node_id=source,
        )
        if source == self._view.self_node_id and await self._own_lesson_held(record.id):
            # Our own lesson coming back through gossip: we hold the original.
            if not call.dry_run:
                IMPORTS.labels(result="duplicate", reason="").inc()
            return dataclasses.replace(base, lesson_id=record.id)
        snapshot = self._snapshot(record, signed.content_hash, now, call)
        cert_error: LamarckError | None = None
        if call.certificate is not None:
            cert_error = await self._check_certificate(signed, call.certificate)
            if cert_error is None:
                # (9) a verified certificate is the evidence the high-stakes hold waits for.
                snapshot = dataclasses.replace(
                    snapshot, corr=dataclasses.replace(snapshot.corr, quorum_certified=True)
                )
            base = dataclasses.replace(base, certificate_error=cert_error)
        incoming = Incoming(
            record=record,
            content_hash=signed.content_hash,
            via_node_id=via,
            pulled=call.source is ImportSource.SYNC,
        )
        decision = await self._decided(incoming, snapshot, now)
        if (
            decision.outcome is ImportOutcome.DUPLICATE
            and call.certificate is not None
            and cert_error is None
            and not call.dry_run
        ):
            # A copy held here awaiting its quorum, now with a certificate made elsewhere.
            held = await self._awaiting_quorum(signed.content_hash)
            if held is not None:
                return await self._promote(
                    signed, held, dataclasses.replace(call, held=held), vector, checked=True
                )
        # What the decision changes here: the one step the simulator applies too. Stage (3)
        # could not vouch for the signer (``hold``): an operator decides.
        effects = apply_decision(decision, hold=hold, recorded=call.records)
        decision = effects.decision
        if effects.judged is not None:
            self._view.held.reject(signed.content_hash, effects.judged)
        if decision.outcome is ImportOutcome.REJECT:
            error = decision.error or PolicyRejected(reason=decision.reason)
            return await self._reject(
                error, signed.content_hash, source, call, effects.charges, record
            )
        if call.dry_run:
            return dataclasses.replace(
                base, outcome=decision.outcome, reasons=decision.reasons, error=decision.error
            )
        for event in effects.charges:
            self._reputation.emit(event)
        if decision.outcome is ImportOutcome.DUPLICATE:
            lesson_id = await self._add_provenance(signed, via, now)
            IMPORTS.labels(result="duplicate", reason="").inc()
            return dataclasses.replace(base, lesson_id=lesson_id)
        if effects.hold:
            kept = await self._quarantine(signed, decision, base, now)
            if effects.counted:
                self._count(record, now)
            return kept
        stored = await self._store_accepted(
            signed, decision, base, via, now, vector=vector, count=effects.counted
        )
        if call.certificate is not None and cert_error is None:
            self._keep(stored, call.certificate)
            return dataclasses.replace(stored, certified=stored.outcome is ImportOutcome.ACCEPT)
        return stored

    def _snapshot(
        self, record: MemoryV2, content_hash: str, now: datetime, call: ImportCall
    ) -> ImportSnapshot:
        # The established lessons are read apart, once the rest is known (``_decided``).
        return self._view.snapshot(record, content_hash, now, call.text_vectors)

    async def _decided(
        self, incoming: Incoming, snapshot: ImportSnapshot, now: datetime
    ) -> ImportDecision:
        """``decide_import`` over ``snapshot``, with the established lessons read first when
        the filters could use them: a round trip a record saved where they could not change
        the verdict (``filters.needs_established``)."""
        floor, record = self._established_from, incoming.record
        if floor is not None and needs_established(self.policy.filters, record, snapshot):
            snapshot = dataclasses.replace(
                snapshot, established=await self._view.established(record, floor)
            )
        return decide_import(incoming, snapshot, self.params, now, self.policy)

    # -- quorum certificates -------------------------------------------------------------

    async def _check_certificate(self, signed: SignedMemory, raw: bytes) -> LamarckError | None:
        """None when ``raw`` certifies ``signed`` here, else the typed refusal."""
        if self._certificates is None:
            return VerificationError(
                "this node cannot check quorum certificates", reason="no_quorum_check"
            )
        try:
            await self._certificates.verify(signed, raw)
        except (VerificationError, InvalidRecord) as e:
            return e
        return None

    def _keep(self, result: ImportResult, certificate: bytes) -> None:
        if self._certificates is not None and result.lesson_id:
            self._certificates.keep(result.content_hash, certificate)

    async def _awaiting_quorum(self, content_hash: str) -> QuarantineRow | None:
        """The pending row holding ``content_hash`` for nothing but its quorum, if any."""
        row = await self._store.quarantine_of(content_hash)
        if row is None or row.state != "pending":
            return None
        return row if set(row.reasons) == {DecisionReason.AWAITING_QUORUM} else None

    async def _promote(
        self,
        signed: SignedMemory,
        row: QuarantineRow,
        call: ImportCall,
        vector: Vector | None,
        *,
        checked: bool = False,
    ) -> ImportResult:
        """Store ``row``'s record with the certificate of ``call`` and mark the row approved
        by ``quorum`` (one unit of work); a refusal changes nothing."""
        assert call.certificate is not None  # certify() and the duplicate branch pass one
        base = ImportResult(
            outcome=ImportOutcome.REJECT,
            content_hash=signed.content_hash,
            record_id=signed.memory.id,
            source_node_id=signed.source_agent_id,
        )
        if row.state != "pending" or set(row.reasons) != {DecisionReason.AWAITING_QUORUM}:
            error = PolicyRejected(
                f"quarantine {row.id} is {row.state} for {', '.join(row.reasons)}: "
                "a certificate lifts the quorum hold only",
                reason="not_awaiting_quorum",
            )
            return dataclasses.replace(base, reasons=(error.reason,), error=error)
        if not checked:
            cert_error = await self._check_certificate(signed, call.certificate)
            if cert_error is not None:
                return dataclasses.replace(
                    base,
                    reasons=(cert_error.reason,),
                    error=cert_error,
                    certificate_error=cert_error,
                )
        async with self._store.atomic():
            result = await self._approve(signed, row, call, vector, certified=True)
            if result.outcome is ImportOutcome.REJECT or not result.lesson_id:
                return result
            await self._store.set_quarantine_state(row.id, "approved")
            note = LessonEvent(
                row.id, call.now, "approved", QUORUM_ACTOR, reason="quorum certificate verified"
            )
            await self._store.append_events(
                [note, dataclasses.replace(note, lesson_id=result.lesson_id)]
            )
        self._keep(result, call.certificate)
        IMPORTS.labels(result="certified", reason="").inc()
        return dataclasses.replace(result, certified=True)

    async def _approve(
        self,
        signed: SignedMemory,
        row: QuarantineRow,
        call: ImportCall,
        vector: Vector | None,
        *,
        certified: bool = False,
    ) -> ImportResult:
        record = signed.memory
        base = ImportResult(
            outcome=ImportOutcome.DUPLICATE,
            content_hash=signed.content_hash,
            record_id=record.id,
            source_node_id=signed.source_agent_id,
        )
        stored = await self._store.find_by_content_hash(signed.content_hash)
        if stored is not None:
            # The same bytes arrived again by another path and were accepted meanwhile.
            return dataclasses.replace(base, lesson_id=stored.id)
        # Stages (4)..(9) against what is stored now (not the held copy itself, nor other
        # held ones): a newer stored version makes this a rollback; red flags and the
        # high-stakes hold are what the operator overrides.
        snapshot: ImportSnapshot = dataclasses.replace(
            self._snapshot(record, signed.content_hash, call.now, call),
            versions=self._view.held.stored_versions(record.id),
            rejected_reason=None,
        )
        if certified:
            snapshot = dataclasses.replace(
                snapshot, corr=dataclasses.replace(snapshot.corr, quorum_certified=True)
            )
        incoming = Incoming(record=record, content_hash=signed.content_hash)
        decision = await self._decided(incoming, snapshot, call.now)
        if decision.outcome is ImportOutcome.REJECT:
            error = decision.error or PolicyRejected(reason=decision.reason)
            return await self._reject(
                error, signed.content_hash, signed.source_agent_id, call, (), record
            )
        if decision.outcome is ImportOutcome.DUPLICATE:
            return base
        # The decision kept with the row; a row held before decisions were kept takes the
        # pipeline's own (same params as every other path).
        if row.confidence is not None and not certified:
            confidence, rule = row.confidence, row.transfer_rule
        else:
            assert decision.transfer is not None  # set for accept and quarantine
            confidence, rule = decision.transfer.confidence, decision.transfer.rule.value
        effects = apply_decision(
            ImportDecision(outcome=ImportOutcome.ACCEPT, confidence=confidence),
            recorded=False,
            counted_before=counts_in_history(row.reasons),
        )
        result = await self._store_accepted(
            signed,
            effects.decision,
            base,
            "",
            call.now,
            vector=vector,
            count=effects.counted,
        )
        return dataclasses.replace(result, transfer_rule=rule)

    def _count(self, record: MemoryV2, now: datetime) -> None:
        """One more record of its source kept here (held or stored), for the outlier flag."""
        self._view.history.add(record.provenance.source_agent_id, now, record.confidence)

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
                confidence=decision.confidence,
                transfer_rule=decision.transfer.rule.value if decision.transfer else None,
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
        *,
        vector: Vector | None = None,
        count: bool = True,
    ) -> ImportResult:
        """Store an accepted record; ``count``: count it in its source's history now (not a
        held one, approved, that was counted when it was held: ``Effects.counted``)."""
        record = signed.memory
        assert decision.confidence is not None  # set for every accept
        older = await self._older_copy(record.id)
        past: LessonRow | None = None
        edited: str | None = None  # the bytes an edit moves the copy past
        if older is None:
            # The source's edit of a lesson held here: a new version of the same lesson.
            older = await self._edited_copy(record)
            edited = older.content_hash if older is not None else None
            past = None if older is not None else await self._successor_copy(record)
        elif held_record_id(older) not in (None, record.id):
            past, older = older, None
        if past is not None:
            # A version of a record whose copy here has moved on to the source's edit of it
            # (or one naming a successor held here): history, the copy stays as it is.
            self._view.note_held(record, signed.content_hash, lesson_id=past.id)
            self._view.held.keep_history(signed.content_hash)
            if count:
                self._count(record, now)
            IMPORTS.labels(result="accepted", reason="").inc()
            return dataclasses.replace(
                base, outcome=ImportOutcome.ACCEPT, lesson_id=past.id, forward=decision.forward
            )
        # (10) the embedding is computed from the content (before the lock, when it looked
        # new): never a shipped vector; a newer version with unchanged content keeps the
        # stored one.
        embedding: Vector | None = None
        if older is None or record.content != older.content:
            embedding = vector if vector is not None else await self._embed(record.content)
        try:
            if older is not None:
                # A newer version of a record held here: the same local row takes the
                # source's new claim and content, and keeps this node's own evidence.
                row = newer_version_row(
                    older,
                    signed,
                    transferred=decision.confidence,
                    via_node_id=via,
                    now=now,
                    params=self.params.evidence,
                    embedding=embedding,
                )
                await self._store.update_lesson(row, version_events(older, row, record, now))
            else:
                row = imported_row(
                    signed,
                    lesson_id=self._new_id(),
                    confidence=decision.confidence,
                    via_node_id=via,
                    now=now,
                    embedding=embedding,
                )
                # The row and its log entry in one transaction: one round trip per record.
                await self._store.insert_lesson(row, version_events(None, row, record, now))
        except ConflictError:
            held = await self._store.find_by_content_hash(signed.content_hash)
            if held is None:
                raise
            # Stored already by a path the index did not see: a duplicate, never a retry.
            self._view.note_held(record, signed.content_hash, lesson_id=held.id)
            lesson_id = await self._add_provenance(signed, via, now)
            IMPORTS.labels(result="duplicate", reason="").inc()
            return dataclasses.replace(base, lesson_id=lesson_id)
        self._view.note_held(record, signed.content_hash, lesson_id=row.id)
        if edited is not None:
            self._view.held.keep_history(edited)
        if count:
            self._count(record, now)
        IMPORTS.labels(result="accepted", reason="").inc()
        if self._on_stored is not None and row.status is LessonStatus.ACTIVE:
            try:
                await self._on_stored(row)
            except StoreError as e:
                # The copy is stored; its conflicts are contested at the next reconcile.
                _log.warning("contesting the conflicts of %s failed: %s", row.id, e)
        # (11) forward.
        return dataclasses.replace(
            base, outcome=ImportOutcome.ACCEPT, lesson_id=row.id, forward=decision.forward
        )

    async def _edited_copy(self, record: MemoryV2) -> LessonRow | None:
        """The copy held here of the record ``record`` is an edit of (``metadata.supersedes``),
        if its source signed both and the copy still holds that record (an edit supersedes
        one version: a second successor of the same record is a lesson of its own)."""
        previous = record.metadata.supersedes
        if previous is None:
            return None
        copy = await self._older_copy(previous)
        if copy is None or copy.imported_from != record.provenance.source_agent_id:
            return None
        return copy if held_record_id(copy) == previous else None

    async def _successor_copy(self, record: MemoryV2) -> LessonRow | None:
        """The copy held here of the successor ``record`` names (``metadata.superseded_by``:
        the source's edit of it), if its source signed both and the copy holds it."""
        successor = record.metadata.superseded_by
        if successor is None or successor.startswith("retired:"):
            return None
        copy = await self._older_copy(successor)
        if copy is None or copy.imported_from != record.provenance.source_agent_id:
            return None
        return copy if held_record_id(copy) == successor else None

    async def _older_copy(self, record_id: str) -> LessonRow | None:
        lesson_id = self._view.held.latest_lesson_id(record_id)
        if lesson_id is None:
            return None
        held = await self._store.get_lessons([lesson_id])
        return held[0] if held else None

    def _new_id(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
