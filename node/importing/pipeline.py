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

A record refused at (1)..(3) is charged to the *delivering* peer only when that peer is the
source the record names (``decision.charged_sender``): a relay forwards bytes it received, and
bytes broken on the way prove nothing about who broke them. A malformed record names nobody
provably, so it charges nobody. A refusal that charges nobody is counted as ``uncharged`` in
``IMPORTS`` (and so in the node's status) by its reason.

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
import json
import logging
import random
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from lamarck.domain.embedder import Embedder
from lamarck.domain.rows import (
    Category,
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
from lamarck.learning.evidence import (
    LocalCopy,
    carries_evidence,
    confidence_on_new_version,
)
from lamarck.learning.params import EvidenceParams
from lamarck.node.importing.effects import with_hold
from lamarck.node.importing.view import (
    HoldReason,
    ImportSnapshot,
    StoreImportView,
    counts_in_history,
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
    charged_sender,
    decide_import,
)
from lamarck.policy.filters import (
    established_floor,
    needs_established,
    texts_with_content,
)
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import Clock
from lamarck.proto.limits import DEFAULT_LIMITS, RecordLimits
from lamarck.proto.memory import MemoryV2
from lamarck.proto.signed import SignedMemory
from lamarck.proto.timefmt import parse_ts
from lamarck.registry.pins import KeyPins, pin_refusal
from lamarck.registry.rules import PinReason
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.port import ReputationSink

__all__ = [
    "PIN_CHARGES",
    "QUORUM_ACTOR",
    "RESULT_LABELS",
    "UNCHARGED",
    "CertificateCheck",
    "ExpectedHook",
    "HoldReason",
    "ImportPipeline",
    "ImportResult",
    "ImportSource",
    "check_key_pin",
    "imported_row",
    "newer_version_row",
    "record_status",
    "version_events",
]

_log = logging.getLogger(__name__)


class ImportSource(StrEnum):
    """By which path a record from another node arrived (every pipeline call names one)."""

    #: PeerService.Publish from an authenticated peer (``via_node_id``).
    PEER = "peer"
    #: An anti-entropy pull from a peer (``via_node_id``).
    SYNC = "sync"
    #: A bundle file given to AgentService.Import: a local source, no delivering peer.
    BUNDLE = "bundle"
    #: An operator approving a quarantined record (OperatorService.DecideQuarantine).
    APPROVAL = "approval"
    #: A record held ``awaiting_quorum`` stored once a quorum certificate for it verified.
    QUORUM = "quorum"


#: The actor the lesson event log names for a decision a quorum certificate made.
QUORUM_ACTOR = "quorum"


class CertificateCheck(Protocol):
    """Verifies a quorum certificate for a record, and keeps the ones that got one stored."""

    async def verify(self, signed: SignedMemory, certificate: bytes) -> int:
        """Check ``certificate`` for ``signed``; returns how many votes counted. Raises
        ``VerificationError`` / ``InvalidRecord`` (typed reasons) when it does not hold."""
        ...

    def keep(self, content_hash: str, certificate: bytes) -> None:
        """Remember the certificate of a record now stored (it travels on with the record)."""
        ...


#: ``IMPORTS`` ``result`` label counting, by reason, the refusals that charged nobody (they
#: are counted as ``rejected`` too): a fault no one provably made here.
UNCHARGED = "uncharged"

#: ``IMPORTS`` ``result`` label for each outcome.
RESULT_LABELS: dict[ImportOutcome, str] = {
    ImportOutcome.ACCEPT: "accepted",
    ImportOutcome.DUPLICATE: "duplicate",
    ImportOutcome.QUARANTINE: "quarantined",
    ImportOutcome.REJECT: "rejected",
}


#: The reputation event each stage (3) refusal charges to the delivering peer when it is the
#: source the record names. An unreachable registry is nobody's fault; a key that is not the
#: pinned one is a bad signature.
PIN_CHARGES: dict[PinReason, EventKind | None] = {
    PinReason.REGISTRY_UNAVAILABLE: None,
    PinReason.REVOKED_SOURCE: EventKind.REJECTED,
    PinReason.UNREGISTERED_SOURCE: EventKind.REJECTED,
    PinReason.KEY_NOT_PINNED: EventKind.BAD_SIGNATURE,
    # A compromised key's records are its thief's, not the relay's fault.
    PinReason.REVOKED_KEY: None,
}


async def check_key_pin(pins: KeyPins, signed: SignedMemory) -> None:
    """Stage (3): the claimed source is registered, not revoked, and pinned to the signing key
    (or the key its verified rotation chain retired after the record was last signed).

    Raises ``PolicyRejected`` (unregistered, revoked, registry unavailable: fail closed) or
    ``VerificationError`` (``key_not_pinned``), each with a ``PinReason`` as its reason.
    """
    signature = signed.memory.signature
    # Signed when last updated: a key retired by a rotation after that still verifies it.
    signed_at = parse_ts(signed.memory.provenance.updated_at)
    refusal = await pin_refusal(
        pins, signed.source_agent_id, signature.signed_by if signature else None, signed_at
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
    #: For an approval: the transfer rule of the decision applied (kept with the row).
    transfer_rule: str | None = None
    #: A quorum certificate given with the record verified and got it stored.
    certified: bool = False
    #: Why a certificate given with the record was refused (None: none given, or it held).
    certificate_error: LamarckError | None = None

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


class _Refused(Exception):
    """Internal: a stage (1)..(3) refusal with its error and the event kind to charge."""

    def __init__(self, error: LamarckError, charge: EventKind | None, subject: str) -> None:
        super().__init__(error.reason)
        self.error = error
        self.charge = charge
        self.subject = subject


@dataclass(frozen=True, slots=True)
class _Call:
    """One pipeline call: where the record came from and how to answer."""

    source: ImportSource
    via: str
    now: datetime
    label: str = ""
    dry_run: bool = False
    held: QuarantineRow | None = None
    # A quorum certificate that came with the record (its wire bytes), if any.
    certificate: bytes | None = None
    # Vectors the filters asked for (``texts_to_embed``), computed with the content's (the
    # dict is filled before the lock; the call itself stays frozen).
    text_vectors: dict[str, Vector] = dataclasses.field(default_factory=dict)

    @property
    def detail(self) -> str:
        """The rejection log's detail: who delivered it, or which path and file."""
        if self.via:
            return f"via {self.via}"
        return f"{self.source.value} {self.label}".strip()

    @property
    def records(self) -> bool:
        """Whether refusals are recorded and charged (not for a dry run, an approval or a
        quorum's certification: the record was judged when it arrived)."""
        return not self.dry_run and self.source not in (ImportSource.APPROVAL, ImportSource.QUORUM)


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
        call = _Call(
            source, via_node_id, self._clock.now(), label, dry_run, certificate=certificate
        )
        return await self._run(raw, call)

    async def certify(self, row: QuarantineRow, certificate: bytes) -> ImportResult:
        """Store the record held ``awaiting_quorum`` in ``row`` with its quorum ``certificate``
        (source ``quorum``): stages (1)..(3) again, the certificate verified, then the approval
        path; the row is marked approved by ``quorum``. A refused certificate or record changes
        nothing (REJECT with the typed error). Raises only ``StoreUnavailable``.
        """
        call = _Call(ImportSource.QUORUM, "", self._clock.now(), held=row, certificate=certificate)
        return await self._run(row.signed_record, call)

    async def approve(self, row: QuarantineRow) -> ImportResult:
        """Store the quarantined ``row`` an operator approved (source ``approval``).

        A refusal (REJECT, with the typed error) changes and records nothing; a DUPLICATE
        names the lesson already holding those bytes. Raises only ``StoreUnavailable``.
        """
        call = _Call(ImportSource.APPROVAL, "", self._clock.now(), held=row)
        return await self._run(row.signed_record, call)

    async def _run(self, raw: bytes, call: _Call) -> ImportResult:
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

    async def _stages(self, raw: bytes, call: _Call) -> ImportResult:
        try:
            signed = self._parse_and_verify(raw, call)
            hold = await self._check_pin(signed, call)
        except _Refused as refused:
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

    def _parse_and_verify(self, raw: bytes, call: _Call) -> SignedMemory:
        via = call.via
        held = call.held
        if held is not None and sha256_hex(raw) != held.content_hash:
            # (0) an approval: the bytes are the ones the row was filed under.
            error = VerificationError(
                f"quarantine {held.id}: stored bytes do not match their content hash",
                reason="hash_mismatch",
                id=held.id,
            )
            raise _Refused(error, None, "")
        # (1) size and schema.
        try:
            signed = SignedMemory.from_json(raw, limits=self._limits)
        except InvalidRecord as e:
            # Unparsed bytes name no signer: nobody provably made them.
            raise _Refused(e, None, "") from None
        # (2) signature and hash (the clock check inside verify comes after the signature).
        try:
            signed.verify(call.now, self.params.max_future_skew_s)
        except VerificationError as e:
            if e.reason == "future_timestamp":
                # The signature held, so the date is the signer's choice.
                raise _Refused(e, EventKind.REJECTED, signed.source_agent_id) from None
            sender = charged_sender(via, signed.source_agent_id)
            raise _Refused(e, EventKind.BAD_SIGNATURE, sender) from None
        if held is not None and signed.source_agent_id != held.source_node_id:
            error = VerificationError(
                f"quarantine {held.id}: record names a different source than its row",
                reason="key_mismatch",
                id=held.id,
            )
            raise _Refused(error, None, "")
        return signed

    async def _check_pin(self, signed: SignedMemory, call: _Call) -> HoldReason | None:
        """(3) the claimed source must be registered, not revoked, and pinned to this key.

        Returns ``unknown_signer`` for a bundle whose signer no registry knows (held for an
        operator); raises ``_Refused`` for any other refusal.
        """
        if signed.source_agent_id == self._view.self_node_id:
            return None  # verify bound the id to the key: this node knows its own key
        held = call.held
        if self._pins is None:
            if call.source is ImportSource.BUNDLE:
                return HoldReason.UNKNOWN_SIGNER
            if held is not None:
                return None  # no registry to ask again: the operator's word stands
            error = PolicyRejected(
                f"source {signed.source_agent_id} cannot be checked: this node has no registry",
                reason=PinReason.REGISTRY_UNAVAILABLE,
            )
            raise _Refused(error, None, call.via)
        try:
            await check_key_pin(self._pins, signed)
        except (PolicyRejected, VerificationError) as e:
            reason = PinReason(e.reason)
            if reason is PinReason.UNREGISTERED_SOURCE:
                if call.source is ImportSource.BUNDLE:
                    return HoldReason.UNKNOWN_SIGNER
                if held is not None and HoldReason.UNKNOWN_SIGNER in held.reasons:
                    return None  # the operator vouched for a key no registry knows
            sender = charged_sender(call.via, signed.source_agent_id)
            raise _Refused(e, PIN_CHARGES[reason], sender) from None
        return None

    async def _refuse(self, refused: _Refused, content_hash: str, call: _Call) -> ImportResult:
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
        call: _Call,
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
        self, signed: SignedMemory, call: _Call, hold: HoldReason | None, vector: Vector | None
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
        if decision.outcome is ImportOutcome.REJECT:
            error = decision.error or PolicyRejected(reason=decision.reason)
            if call.records:
                self._view.held.reject(signed.content_hash, decision.reason)
            return await self._reject(
                error, signed.content_hash, source, call, decision.events, record
            )
        # Stage (3) could not vouch for the signer: an operator decides.
        decision = with_hold(decision, hold)
        if call.dry_run:
            return dataclasses.replace(
                base, outcome=decision.outcome, reasons=decision.reasons, error=decision.error
            )
        for event in decision.events:
            self._reputation.emit(event)
        if decision.outcome is ImportOutcome.DUPLICATE:
            lesson_id = await self._add_provenance(signed, via, now)
            IMPORTS.labels(result="duplicate", reason="").inc()
            return dataclasses.replace(base, lesson_id=lesson_id)
        if decision.outcome is ImportOutcome.QUARANTINE:
            kept = await self._quarantine(signed, decision, base, now)
            if counts_in_history(kept.reasons):
                # Held is published too: a source's history counts what it sent that is
                # kept here, held or stored. Counting only the stored copies skewed it: the
                # high-stakes records a quorum holds are the surer ones, and leaving them out
                # made every sure record after them a "statistical outlier" (a catch-up: a
                # fifth of its records). Not a record whose signer nobody vouched for: it
                # says nothing about the source it names.
                self._count(record, now)
            return kept
        stored = await self._store_accepted(signed, decision, base, via, now, vector=vector)
        if call.certificate is not None and cert_error is None:
            self._keep(stored, call.certificate)
            return dataclasses.replace(stored, certified=stored.outcome is ImportOutcome.ACCEPT)
        return stored

    def _snapshot(
        self, record: MemoryV2, content_hash: str, now: datetime, call: _Call
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
        call: _Call,
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
        call: _Call,
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
        accepted = ImportDecision(outcome=ImportOutcome.ACCEPT, confidence=confidence)
        result = await self._store_accepted(
            signed,
            accepted,
            base,
            "",
            call.now,
            vector=vector,
            counted=counts_in_history(row.reasons),
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
        counted: bool = False,
    ) -> ImportResult:
        """Store an accepted record (``counted``: a held one, approved, that was counted in
        its source's history when it was held)."""
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
            if not counted:
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
        if not counted:
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
