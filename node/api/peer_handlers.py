"""PeerService.Publish and PeerService.Sync over the import pipeline and the store.

The servicer in ``peer_service.py`` delegates to these functions; they take the request
message and plain collaborators and return response messages, so they are tested without a
gRPC server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from lamarck.errors import StoreUnavailable
from lamarck.node.gossip.audience import BandOf, may_receive
from lamarck.node.gossip.publisher import (
    PUBLISHED_STATUSES,
    GossipParams,
    may_publish,
    sign_lesson,
)
from lamarck.node.gossip.router import Forwardable, ForwardSend, GossipRouter
from lamarck.node.gossip.sync import Bucket, SyncQuery, select_for_sync
from lamarck.node.importing.decision import ImportOutcome
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.metrics import IMPORTS
from lamarck.node.store.port import LessonFilter, LessonStatus, LessonStore
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.v1 import peer_pb2, records_pb2
from lamarck.reputation.scores import PeerBand

__all__ = ["ACK_FOR", "PublishDeps", "handle_publish", "handle_sync", "shareable_records"]

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
    for index, record in enumerate(request.records):
        raw = bytes(record.canonical_json)
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
        try:
            result = await deps.pipeline.import_record(
                raw, source=ImportSource.PEER, via_node_id=via
            )
        except StoreUnavailable as e:
            IMPORTS.labels(result="deferred", reason=e.reason).inc()
            acks.append(
                records_pb2.RecordAck(
                    index=index, status=records_pb2.ACK_STATUS_DEFERRED, reason=e.reason
                )
            )
            continue
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


async def shareable_records(
    store: LessonStore,
    identity: NodeIdentity,
    params: GossipParams,
    band_of: BandOf,
    requester: str,
) -> dict[str, bytes]:
    """What this node may send ``requester`` in a Sync, by content hash.

    Its own publishable lessons that the audience policy lets ``requester`` receive
    (``node/gossip/audience.py``: the same rule as a push), signed afresh (deterministic
    bytes), and imported public lessons as their original signed bytes. This node itself
    (``requester`` = its own id: what it holds, for anti-entropy) sees everything it may send.
    """
    band = PeerBand.TRUSTED if requester == identity.node_id else band_of(requester)
    held: dict[str, bytes] = {}
    offset = 0
    while True:
        rows = await store.list_lessons(
            LessonFilter(statuses=PUBLISHED_STATUSES, limit=_PAGE, offset=offset)
        )
        for row in rows:
            if row.imported_from is not None:
                # A copy is offered while active here (its source ends it for everyone).
                live = row.status is LessonStatus.ACTIVE
                if live and row.access_level == "public" and row.signed_record and row.content_hash:
                    held.setdefault(row.content_hash, row.signed_record)
                continue
            if not may_publish(row, params):
                continue
            if requester != identity.node_id and not may_receive(
                row.access_level, row.recipients, requester, band
            ):
                continue
            signed = sign_lesson(row, identity)
            held.setdefault(signed.content_hash, signed.raw)
        if len(rows) < _PAGE:
            return held
        offset += _PAGE


async def handle_sync(
    request: peer_pb2.SyncRequest, held: dict[str, bytes], params: GossipParams
) -> AsyncIterator[peer_pb2.SyncResponse]:
    """Stream the records the requester lacks, in pages of at most ``batch_size``."""
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
        yield peer_pb2.SyncResponse(
            records=[
                records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=raw)
                for _, raw in page.records
            ],
            cursor=page.cursor,
            more=page.more,
        )
        if not more:
            return
        cursor = page.cursor
