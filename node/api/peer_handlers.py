"""PeerService.Publish, Sync and RequestVote over the import pipeline and the store.

The servicer in ``peer_service.py`` delegates to these functions; they take the request
message and plain collaborators and return response messages, so they are tested without a
gRPC server.

Quorum certificates travel as their own records (``RECORD_KIND_QUORUM_CERTIFICATE``) right
after the memory they certify, in a Publish batch and in a Sync page; Publish hands each to
the pipeline with its memory (the pipeline verifies it) and acks it on its own. Outcome
attestations (``RECORD_KIND_ATTESTATION``) travel the same way after their memory, or alone
for a memory the receiver holds already: Publish hands them, once the batch's memories are
decided, to ``node/sharing/attestations.py``, which verifies and keeps them, and acks each;
a Sync page carries the attestations of the memories it offers as records of their own.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from lamarck.consensus.evidence import OutcomeFacts, own_evidence
from lamarck.consensus.params import QuorumParams
from lamarck.consensus.votes import make_vote
from lamarck.domain.rows import (
    LessonFilter,
    LessonStatus,
    OutcomeRow,
)
from lamarck.errors import InvalidRecord, StoreError, StoreUnavailable
from lamarck.gossip.audience import BandOf, may_receive, scope_audience
from lamarck.gossip.publisher import (
    PUBLISHED_STATUSES,
    GossipParams,
    may_publish,
    sign_lesson,
)
from lamarck.gossip.router import Forwardable, ForwardSend, GossipRouter
from lamarck.gossip.sync import Bucket, SyncQuery, select_for_sync
from lamarck.learning.mechanical import avoided_operation
from lamarck.node.importing.pipeline import ImportPipeline, ImportResult, ImportSource
from lamarck.node.metrics import IMPORTS
from lamarck.node.store.port import (
    LessonStore,
    keyset_pages,
)
from lamarck.policy.decision import ImportOutcome
from lamarck.proto.canonical import canonical_bytes, sha256_hex
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.signed import SignedMemory
from lamarck.proto.v1 import peer_pb2, records_pb2
from lamarck.reputation.scores import PeerBand

if TYPE_CHECKING:
    from lamarck.node.api.network_side import AttestationsSide

__all__ = [
    "ACK_FOR",
    "CertificateOf",
    "PublishDeps",
    "certificate_ack",
    "handle_publish",
    "handle_request_vote",
    "handle_sync",
    "outcome_facts",
    "shareable_records",
]

CertificateOf = Callable[[str], bytes | None]
"""The quorum certificate this node holds for a record, by content hash (None: none)."""

#: Wire ack for each import outcome.
ACK_FOR: dict[ImportOutcome, records_pb2.AckStatus.ValueType] = {
    ImportOutcome.ACCEPT: records_pb2.ACK_STATUS_ACCEPTED,
    ImportOutcome.DUPLICATE: records_pb2.ACK_STATUS_DUPLICATE,
    ImportOutcome.QUARANTINE: records_pb2.ACK_STATUS_QUARANTINED,
    ImportOutcome.REJECT: records_pb2.ACK_STATUS_REJECTED,
}

_PAGE = 1000


@dataclass(frozen=True, slots=True)
class PublishDeps:
    """What Publish needs besides the request: the pipeline, and optionally forwarding."""

    pipeline: ImportPipeline
    router: GossipRouter | None = None
    live_peers: Callable[[], Awaitable[Sequence[str]]] | None = None
    forward_send: ForwardSend | None = None
    #: Runs the forwarding after the answer (so the sender is not held for our fanout);
    #: None awaits it before answering.
    spawn: Callable[[Awaitable[object]], None] | None = None
    #: Where received outcome attestations are verified and kept (None: refused as
    #: ``unsupported_kind``).
    attestations: AttestationsSide | None = None


async def handle_publish(
    request: peer_pb2.PublishRequest, deps: PublishDeps
) -> peer_pb2.PublishResponse:
    """Import each record in order, one ack each; forward the accepted public ones.

    ``sender_node_id`` is the delivering peer the pipeline charges for bad bytes (the
    servicer has authenticated it with the caller's peer token). A store outage answers
    DEFERRED: nothing was decided, the sender retries. DEFERRED means that and nothing else:
    a duplicate is DUPLICATE, any other failure on one record is that record's REJECTED.
    """
    via = request.sender_node_id
    acks: list[records_pb2.RecordAck] = []
    forwards: list[Forwardable] = []
    certificates = _certificates_by_record(request.records)
    used: dict[str, ImportResult] = {}
    for index, record in enumerate(request.records):
        raw = bytes(record.canonical_json)
        if record.kind in _AFTER_MEMORIES:
            continue  # acked below, once the memories were decided
        if record.kind != records_pb2.RECORD_KIND_MEMORY:
            IMPORTS.labels(result="rejected", reason="unsupported_kind").inc()
            acks.append(
                records_pb2.RecordAck(
                    index=index,
                    status=records_pb2.ACK_STATUS_REJECTED,
                    reason="unsupported_kind",
                )
            )
            continue
        content_hash = sha256_hex(raw)
        try:
            result = await deps.pipeline.import_record(
                raw,
                source=ImportSource.PEER,
                via_node_id=via,
                certificate=certificates.get(content_hash),
            )
        except StoreUnavailable as e:
            IMPORTS.labels(result="deferred", reason=e.reason).inc()
            acks.append(
                records_pb2.RecordAck(
                    index=index, status=records_pb2.ACK_STATUS_DEFERRED, reason=e.reason
                )
            )
            continue
        used[content_hash] = result
        acks.append(
            records_pb2.RecordAck(
                index=index,
                record_hash=result.content_hash,
                status=ACK_FOR[result.outcome],
                reason=result.reason,
            )
        )
        if result.forward and result.source_node_id:
            forwards.append(Forwardable(result.content_hash, raw, result.source_node_id))
    for index, record in enumerate(request.records):
        if record.kind == records_pb2.RECORD_KIND_QUORUM_CERTIFICATE:
            acks.append(certificate_ack(index, bytes(record.canonical_json), used))
    acks.extend(await _attestation_acks(request.records, deps.attestations))
    acks.sort(key=lambda a: a.index)
    router = deps.router
    if (
        forwards
        and router
        and deps.live_peers
        and deps.forward_send
        and router.should_forward(request.hop_count, request.hop_limit)
    ):
        forwarding = router.forward(
            forwards,
            peers=await deps.live_peers(),
            hop_count=request.hop_count,
            hop_limit=request.hop_limit,
            exclude={via, request.origin_node_id} - {""},
            send=deps.forward_send,
        )
        if deps.spawn is None:
            await forwarding
        else:
            deps.spawn(forwarding)
    return peer_pb2.PublishResponse(acks=acks)


#: Kinds acked after the batch's memories were decided (they are about those memories).
_AFTER_MEMORIES = (
    records_pb2.RECORD_KIND_QUORUM_CERTIFICATE,
    records_pb2.RECORD_KIND_ATTESTATION,
)


async def _attestation_acks(
    records: Sequence[records_pb2.SignedRecord], attestations: AttestationsSide | None
) -> list[records_pb2.RecordAck]:
    """The acks of a batch's attestation records: ACCEPTED when kept here, DUPLICATE when held
    already (or older than its attester's held one), REJECTED with the reason it was refused
    for; DEFERRED for them all when the store fails."""
    found = [
        (index, bytes(r.canonical_json))
        for index, r in enumerate(records)
        if r.kind == records_pb2.RECORD_KIND_ATTESTATION
    ]
    if not found:
        return []
    if attestations is None:
        return [
            records_pb2.RecordAck(
                index=index, status=records_pb2.ACK_STATUS_REJECTED, reason="unsupported_kind"
            )
            for index, _ in found
        ]
    try:
        results = await attestations.receive([raw for _, raw in found])
    except StoreError as e:  # nothing of them was decided: the sender retries
        return [
            records_pb2.RecordAck(
                index=index, status=records_pb2.ACK_STATUS_DEFERRED, reason=e.reason
            )
            for index, _ in found
        ]
    acks: list[records_pb2.RecordAck] = []
    for (index, _), result in zip(found, results, strict=True):
        if result.kept:
            status = records_pb2.ACK_STATUS_ACCEPTED
        elif result.reason:
            status = records_pb2.ACK_STATUS_REJECTED
        else:
            status = records_pb2.ACK_STATUS_DUPLICATE
        acks.append(
            records_pb2.RecordAck(
                index=index, record_hash=result.content_hash, status=status, reason=result.reason
            )
        )
    return acks


def _certificate_target(raw: bytes) -> str:
    """The record hash a certificate's bytes name ("" when they do not parse)."""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return ""
    target = obj.get("record_hash") if isinstance(obj, dict) else None
    return target if isinstance(target, str) else ""


def _certificates_by_record(records: Iterable[records_pb2.SignedRecord]) -> dict[str, bytes]:
    """The certificate records of a batch by the record hash each names (first one wins)."""
    found: dict[str, bytes] = {}
    for record in records:
        if record.kind == records_pb2.RECORD_KIND_QUORUM_CERTIFICATE:
            raw = bytes(record.canonical_json)
            target = _certificate_target(raw)
            if target:
                found.setdefault(target, raw)
    return found


def certificate_ack(
    index: int, raw: bytes, decided: dict[str, ImportResult]
) -> records_pb2.RecordAck:
    """The ack of a certificate record, from what became of the memory it names.

    ACCEPTED when it certified its memory here; REJECTED with the typed reason the verifier
    refused it for (``too_few_votes``, ``unknown_voter``, ...), or ``orphan_certificate`` when
    the batch has no memory of that hash; DUPLICATE when the memory needed none (held already,
    or not high-stakes).
    """
    content_hash = sha256_hex(raw)
    target = _certificate_target(raw)
    result = decided.get(target)
    if result is None:
        reason = "orphan_certificate" if target else "bad_certificate"
        return records_pb2.RecordAck(
            index=index,
            record_hash=content_hash,
            status=records_pb2.ACK_STATUS_REJECTED,
            reason=reason,
        )
    if result.certificate_error is not None:
        return records_pb2.RecordAck(
            index=index,
            record_hash=content_hash,
            status=records_pb2.ACK_STATUS_REJECTED,
            reason=result.certificate_error.reason,
        )
    status = (
        records_pb2.ACK_STATUS_ACCEPTED if result.certified else records_pb2.ACK_STATUS_DUPLICATE
    )
    return records_pb2.RecordAck(index=index, record_hash=content_hash, status=status)


def outcome_facts(row: OutcomeRow) -> OutcomeFacts:
    """A stored outcome as the facts a vote reads: its id, pass, and (operation, result) steps."""
    steps = row.record.get("approach", ()) if isinstance(row.record, dict) else ()
    pairs = tuple(
        (str(s.get("operation_key", "")), str(s.get("outcome", "")))
        for s in steps
        if isinstance(s, dict)
    )
    return OutcomeFacts(row.id, row.passed, pairs)


async def handle_request_vote(
    request: peer_pb2.RequestVoteRequest,
    *,
    store: LessonStore,
    identity: NodeIdentity,
    now: datetime,
    rng: random.Random,
    params: QuorumParams,
    max_future_skew_s: float,
) -> peer_pb2.RequestVoteResponse:
    """This node's signed vote on the memory in ``request``, from its own outcomes only.

    The memory must be a memory record whose signature holds (``InvalidRecord`` /
    ``VerificationError`` otherwise: a node never judges bytes it cannot attribute). The
    evidence is this node's most recent ``evidence_window`` outcomes that ran the lesson's
    operation (``lamarck.consensus.evidence``); holding the same lesson is not evidence, so
    without such outcomes the vote is ``abstain``.
    """
    if request.memory.kind != records_pb2.RECORD_KIND_MEMORY:
        raise InvalidRecord("RequestVote judges memory records only", reason="unsupported_kind")
    signed = SignedMemory.from_json(bytes(request.memory.canonical_json))
    signed.verify(now, max_future_skew_s)
    record = signed.memory
    operation = record.lesson.operation if record.lesson is not None else ""
    avoided = avoided_operation(record.metadata.tags)
    rows = await store.list_outcomes(limit=params.evidence_window)
    evidence = own_evidence((outcome_facts(r) for r in rows), operation=operation, avoided=avoided)
    vote = make_vote(
        identity=identity,
        memory_id=record.id,
        memory_hash=signed.content_hash,
        outcomes=evidence,
        now=now,
        rng=rng,
        params=params,
    )
    return peer_pb2.RequestVoteResponse(
        vote=records_pb2.SignedRecord(
            kind=records_pb2.RECORD_KIND_VOTE, canonical_json=canonical_bytes(vote.to_obj())
        )
    )


async def shareable_records(
    store: LessonStore,
    identity: NodeIdentity,
    params: GossipParams,
    band_of: BandOf,
    requester: str,
    declared: frozenset[str] = frozenset(),
) -> dict[str, bytes]:
    """What this node may send ``requester`` in a Sync, by content hash.

    Its own publishable lessons that the audience policy lets ``requester`` receive
    (``gossip/audience.py``: the same rule as a push; ``declared`` is the requester's
    project declaration, for team sharing), signed afresh (deterministic bytes), and imported
    public lessons as their original signed bytes (a project's copy only to a peer of that
    project: this node cannot know whether its source shared the project with everyone). This
    node itself (``requester`` = its own id: what it holds, for anti-entropy) sees everything.
    """
    myself = requester == identity.node_id
    band = PeerBand.TRUSTED if myself else band_of(requester)
    held: dict[str, bytes] = {}
    # Imported copies: their signed bytes as they came, read without the rest of the row. A
    # copy is offered while active here (its source ends it for everyone).
    if myself or band is not PeerBand.GRAYLISTED:
        async for copies in keyset_pages(store.imported_records, lambda c: c.lesson_id, _PAGE):
            for c in copies:
                live = c.status is LessonStatus.ACTIVE and c.access_level == "public"
                if live and (myself or scope_audience(c.scope, declared, frozenset(), True)):
                    held.setdefault(c.content_hash, c.signed_record)
    # This node's own lessons, signed afresh.
    own = LessonFilter(statuses=PUBLISHED_STATUSES, imported=False)
    async for rows in store.scan(own, _PAGE):
        for row in rows:
            if not may_publish(row, params):
                continue
            if not myself and not (
                may_receive(row.access_level, row.recipients, requester, band)
                and scope_audience(row.scope, declared, params.shared_scopes, params.team_sharing)
            ):
                continue
            signed = sign_lesson(row, identity)
            held.setdefault(signed.content_hash, signed.raw)
    return held


async def handle_sync(
    request: peer_pb2.SyncRequest,
    held: dict[str, bytes],
    params: GossipParams,
    certificate_of: CertificateOf | None = None,
    summaries: Sequence[bytes] = (),
    attestations: Mapping[str, bytes] | None = None,
) -> AsyncIterator[peer_pb2.SyncResponse]:
    """Stream the records the requester lacks, in pages of at most ``batch_size``; a memory
    this node holds a quorum certificate for is followed by it (``certificate_of``). The
    first page carries ``summaries`` (signed trust summaries: this node's own, then the
    newest it relays).

    ``attestations`` (by their own content hash: the attestations of the memories in
    ``held``) are reconciled like memories and sent as attestation records."""
    if attestations:
        held = {**held, **attestations}
    cap = params.batch_size * 16
    limit = min(request.max_records or cap, cap)
    buckets = (
        {b.prefix: Bucket(b.count, b.digest) for b in request.buckets} if request.buckets else None
    )
    cursor = request.cursor
    sent = 0
    while True:
        page = select_for_sync(
            held,
            SyncQuery(
                cursor=cursor,
                buckets=buckets,
                known_hashes=frozenset(request.known_hashes),
                max_records=max(1, min(params.batch_size, limit - sent)),
            ),
            params.sync_prefix_len,
        )
        sent += len(page.records)
        more = page.more and sent < limit
        out: list[records_pb2.SignedRecord] = []
        for content_hash, raw in page.records:
            if attestations and content_hash in attestations:
                out.append(
                    records_pb2.SignedRecord(
                        kind=records_pb2.RECORD_KIND_ATTESTATION, canonical_json=raw
                    )
                )
                continue
            out.append(
                records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=raw)
            )
            cert = certificate_of(content_hash) if certificate_of is not None else None
            if cert is not None:
                out.append(
                    records_pb2.SignedRecord(
                        kind=records_pb2.RECORD_KIND_QUORUM_CERTIFICATE, canonical_json=cert
                    )
                )
        yield peer_pb2.SyncResponse(
            records=out,
            cursor=page.cursor,
            more=page.more,
            trust_summaries=[
                records_pb2.SignedRecord(
                    kind=records_pb2.RECORD_KIND_TRUST_SUMMARY, canonical_json=raw
                )
                for raw in summaries
            ],
        )
        summaries = ()
        if not more:
            return
        cursor = page.cursor
