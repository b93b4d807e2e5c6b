"""The peer client: this node's outgoing PeerService calls (Publish, Sync pages, RequestVote).

One ``grpc.aio`` channel per peer address and pinned certificate (``ChannelPool``): mutual
TLS trusting only the certificate the peer's registration carries (``lamarck.node.peer_tls``)
unless the node runs off-insecure; our peer token on every call (``PeerTokens``), a bound on
each RPC, and one typed failure, ``DeliveryFailed``, for anything that did not land
(transport error, a peer without a registered certificate, or acks saying "try again
later").

A record this node holds a quorum certificate for (``certificate_of``) is sent with it: the
certificate record follows the memory in a Publish batch, so the receiver need not ask
voters again. Certificates in a Sync page are handed back beside the page's memories.
The outcome attestations this node keeps for a record (``attestations_of``) follow it the same
way, and ``push_attestations`` sends attestations alone (for records the peer holds already);
attestations in a Sync page are handed back beside its memories too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from typing import Any

import grpc
import grpc.aio

from lamarck.errors import DeliveryFailed, StoreError
from lamarck.gossip.sync import SyncPage, SyncQuery
from lamarck.node.api.limits import PeerLimits
from lamarck.node.api.peer_auth import PeerTokens
from lamarck.node.importing.view import REGISTRY_DEPENDENT_REASONS
from lamarck.node.peer_tls import PeerTls
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc, records_pb2

__all__ = ["RPC_TIMEOUT_S", "AttestationsOf", "ChannelPool", "PeerClient", "sort_sync_records"]

AttestationsOf = Callable[[Sequence[str]], Awaitable[Mapping[str, Sequence[bytes]]]]
"""The attestations kept for each of some records, by the record's content hash."""

_log = logging.getLogger("lamarck.node.sharing")

# Bound on one Publish or Sync RPC to a peer.
RPC_TIMEOUT_S = 10.0


class ChannelPool:
    """One ``grpc.aio`` channel per peer address (and pinned certificate), reused across calls,
    closed together."""

    def __init__(self, options: Sequence[tuple[str, Any]] = ()) -> None:
        self._options = list(options)
        self._channels: dict[tuple[str, str], grpc.aio.Channel] = {}
        self._retired: list[grpc.aio.Channel] = []

    def stub(
        self, address: str, tls: PeerTls | None = None, node_id: str = "", pin: str = ""
    ) -> Any:
        """A PeerService stub over the (possibly new) channel to ``address``: mutual TLS with
        ``tls`` trusting the certificate ``pin`` registered for ``node_id``, else plaintext.

        Typed ``Any``: the generated stubs are typed for sync channels, not ``grpc.aio``.
        """
        key = (address, pin)
        channel = self._channels.get(key)
        if channel is None:
            if tls is None:
                channel = grpc.aio.insecure_channel(address, options=self._options)
            else:
                credentials, options = tls.channel(node_id, pin)
                channel = grpc.aio.secure_channel(
                    address, credentials, options=[*self._options, *options]
                )
            self._channels[key] = channel
        return peer_pb2_grpc.PeerServiceStub(channel)

    def reset(self) -> None:
        """New calls open new channels (this node's certificate changed); the old ones are
        closed with the pool."""
        self._retired.extend(self._channels.values())
        self._channels = {}

    async def close(self) -> None:
        """Close every channel."""
        channels, self._channels = [*self._retired, *self._channels.values()], {}
        self._retired = []
        for channel in channels:
            await channel.close(None)


class PeerClient:
    """Publish and Sync calls to peers, addressed by node id through ``address_of``."""

    def __init__(
        self,
        node_id: str,
        tokens: PeerTokens,
        address_of: Callable[[str], str],
        *,
        hop_limit: int,
        max_message_bytes: int,
        certificate_of: Callable[[str], bytes | None] | None = None,
        attestations_of: AttestationsOf | None = None,
        max_records: int = PeerLimits().publish_max_records,
        tls: PeerTls | None = None,
        certificate_of_peer: Callable[[str], str] | None = None,
    ) -> None:
        self._node_id = node_id
        #: Records one Publish may carry (the receivers' cap): attestations fill what the
        #: memories and their certificates leave, the rest travel by Sync.
        self._max_records = max_records
        #: The outcome attestations kept for records, by content hash (sent along with them).
        self.attestations_of = attestations_of
        # Mutual TLS (None: plaintext) and the TLS certificate each peer registered.
        self._tls = tls
        self._pin_of: Callable[[str], str] = certificate_of_peer or (lambda _: "")
        #: The quorum certificate held for a record, by content hash (sent along with it).
        self.certificate_of: Callable[[str], bytes | None] = certificate_of or (lambda _: None)
        self._tokens = tokens
        self._address_of = address_of
        self._hop_limit = hop_limit
        self._pool = ChannelPool(
            [
                ("grpc.max_send_message_length", max_message_bytes),
                ("grpc.max_receive_message_length", max_message_bytes),
            ]
        )

    async def close(self) -> None:
        """Close every channel."""
        await self._pool.close()

    def reset_channels(self) -> None:
        """Dial anew from now on (this node's TLS certificate changed)."""
        self._pool.reset()

    def _stub(self, target: str) -> Any:
        address = self._address_of(target)
        if self._tls is None:
            return self._pool.stub(address)
        return self._pool.stub(address, self._tls, target, self._pin_of(target))

    async def publish(
        self, target: str, raws: Sequence[bytes], hop_count: int, *, hop_limit: int | None = None
    ) -> None:
        """One Publish RPC; raises ``DeliveryFailed`` unless every record was decided."""
        records: list[records_pb2.SignedRecord] = []
        hashes = [sha256_hex(raw) for raw in raws]
        attested: Mapping[str, Sequence[bytes]] = {}
        if self.attestations_of is not None:
            try:
                attested = await self.attestations_of(hashes)
            except StoreError as e:  # the memories still go; Sync carries the attestations
                _log.info("attestations not read for a publish to %s: %s", target, e)
        certs = [self.certificate_of(h) for h in hashes]
        room = self._max_records - len(raws) - sum(c is not None for c in certs)
        for raw, content_hash, cert in zip(raws, hashes, certs, strict=True):
            records.append(
                records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=raw)
            )
            if cert is not None:
                records.append(
                    records_pb2.SignedRecord(
                        kind=records_pb2.RECORD_KIND_QUORUM_CERTIFICATE, canonical_json=cert
                    )
                )
            along = list(attested.get(content_hash, ()))[: max(room, 0)]
            room -= len(along)
            records.extend(
                records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_ATTESTATION, canonical_json=a)
                for a in along
            )
        await self._send(target, records, hop_count, hop_limit)

    async def push_attestations(self, target: str, raws: Sequence[bytes]) -> None:
        """Publish attestations alone (about records ``target`` may hold), one hop, in as
        many calls as the record cap needs."""
        for start in range(0, len(raws), self._max_records):
            records = [
                records_pb2.SignedRecord(
                    kind=records_pb2.RECORD_KIND_ATTESTATION, canonical_json=raw
                )
                for raw in raws[start : start + self._max_records]
            ]
            await self._send(target, records, 0, 1)

    async def _send(
        self,
        target: str,
        records: Sequence[records_pb2.SignedRecord],
        hop_count: int,
        hop_limit: int | None,
    ) -> None:
        request = peer_pb2.PublishRequest(
            records=records,
            sender_node_id=self._node_id,
            origin_node_id=self._node_id if hop_count == 0 else "",
            hop_count=hop_count,
            hop_limit=self._hop_limit if hop_limit is None else hop_limit,
        )
        try:
            reply = await self._stub(target).Publish(
                request, timeout=RPC_TIMEOUT_S, metadata=self._tokens.metadata(target)
            )
        except grpc.aio.AioRpcError as e:
            raise DeliveryFailed(
                f"Publish to {target}: {e.code().name}", reason="rpc_failed"
            ) from e
        retry = [
            a.reason
            for a in reply.acks
            if a.status == records_pb2.ACK_STATUS_DEFERRED or a.reason in REGISTRY_DEPENDENT_REASONS
        ]
        if retry:
            raise DeliveryFailed(f"Publish to {target} deferred: {retry[0]}", reason="deferred")

    async def request_vote(
        self, voter: str, raw: bytes, round_id: str, *, timeout_s: float
    ) -> bytes:
        """Ask ``voter`` to vote on the memory ``raw``; its signed vote's bytes.

        ``DeliveryFailed`` when it does not answer within ``timeout_s`` or refuses.
        """
        request = peer_pb2.RequestVoteRequest(
            memory=records_pb2.SignedRecord(
                kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=raw
            ),
            requester_node_id=self._node_id,
            round_id=round_id,
        )
        try:
            reply = await self._stub(voter).RequestVote(
                request, timeout=timeout_s, metadata=self._tokens.metadata(voter)
            )
        except grpc.aio.AioRpcError as e:
            raise DeliveryFailed(
                f"RequestVote to {voter}: {e.code().name}", reason="rpc_failed"
            ) from e
        if reply.vote.kind != records_pb2.RECORD_KIND_VOTE:
            raise DeliveryFailed(f"RequestVote to {voter}: no vote record", reason="no_vote")
        return bytes(reply.vote.canonical_json)

    async def sync_page(
        self,
        peer: str,
        query: SyncQuery,
        certificates: MutableMapping[str, bytes] | None = None,
        projects: Sequence[str] = (),
        attestations: MutableMapping[str, bytes] | None = None,
    ) -> SyncPage:
        """One Sync call to ``peer``: the records it holds that the query says we lack; the
        quorum certificates that came with them go into ``certificates`` (by record hash), the
        attestations into ``attestations`` (by their own content hash), the trust summaries
        into the page's ``summaries``."""
        request = peer_pb2.SyncRequest(
            requester_node_id=self._node_id,
            cursor=query.cursor,
            buckets=[
                peer_pb2.HashBucket(prefix=p, count=b.count, digest=b.digest)
                for p, b in (query.buckets or {}).items()
            ],
            max_records=query.max_records,
            # The projects this node works on: a peer sharing with its team sends their lessons.
            projects=list(projects),
        )
        records: list[tuple[str, bytes]] = []
        summaries: list[bytes] = []
        cursor, more = query.cursor, False
        try:
            calls = self._stub(peer).Sync(
                request, timeout=RPC_TIMEOUT_S, metadata=self._tokens.metadata(peer)
            )
            async for page in calls:
                records.extend(sort_sync_records(page.records, certificates, attestations))
                summaries.extend(
                    bytes(s.canonical_json)
                    for s in page.trust_summaries
                    if s.kind == records_pb2.RECORD_KIND_TRUST_SUMMARY
                )
                cursor, more = page.cursor, page.more
        except grpc.aio.AioRpcError as e:
            raise DeliveryFailed(f"Sync from {peer}: {e.code().name}", reason="rpc_failed") from e
        return SyncPage(
            records=tuple(records), cursor=cursor, more=more, summaries=tuple(summaries)
        )


def sort_sync_records(
    received: Iterable[records_pb2.SignedRecord],
    certificates: MutableMapping[str, bytes] | None = None,
    attestations: MutableMapping[str, bytes] | None = None,
) -> list[tuple[str, bytes]]:
    """A Sync page's memories as (content hash, bytes); its quorum certificates filed into
    ``certificates`` by the record hash each names, its attestations into ``attestations``
    by their own content hash (each dropped when no mapping is given)."""
    memories: list[tuple[str, bytes]] = []
    for r in received:
        raw = bytes(r.canonical_json)
        if r.kind == records_pb2.RECORD_KIND_QUORUM_CERTIFICATE:
            if certificates is not None:
                _file_certificate(raw, certificates)
        elif r.kind == records_pb2.RECORD_KIND_ATTESTATION:
            if attestations is not None:
                attestations.setdefault(sha256_hex(raw), raw)
        else:
            memories.append((sha256_hex(raw), raw))
    return memories


def _file_certificate(raw: bytes, into: MutableMapping[str, bytes]) -> None:
    """Put a certificate's bytes under the record hash it names (skipped if unreadable: the
    pipeline would refuse it anyway, and the memory is still imported on its own)."""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return
    target = obj.get("record_hash") if isinstance(obj, dict) else None
    if isinstance(target, str) and target:
        into.setdefault(target, raw)
