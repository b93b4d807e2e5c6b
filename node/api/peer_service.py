"""PeerService: what a node serves to its peers.

``GetIdentity`` is real: id, key, addresses, version, schema versions, domains, the key
rotation chain, and, when the caller sends a nonce, a signed proof that this node holds the
private key. ``Publish`` and ``Sync`` delegate to ``peer_handlers`` over the node's
``Sharing`` (UNAVAILABLE until it is started), once the caller has proven, with a peer token
(:mod:`lamarck.proto.peer_auth`), that it is the node the request names (else
UNAUTHENTICATED). ``GetReputation`` tells a peer nothing: what this node thinks of its peers
(and of the asker itself: how close it stands to the graylist) is for this node's operators
(``OperatorService``), and no peer needs it to take part (trust between nodes travels as what
they do, judged by reality); an authenticated peer is refused ``reputation_private``.
``RequestVote``, also to an
authenticated peer, answers this node's signed vote on the memory judged from its own
outcomes only (``peer_handlers.handle_request_vote``): without outcomes on the lesson's
operation it signs ``abstain``.

The nonce proof record (kind ``nonce``, signed over ``lamarck/v1/nonce\\n`` + canonical JSON)::

    {"kind": "nonce", "node_id": <this node>, "nonce": <the caller's nonce, base64url>,
     "created_at": RFC 3339 UTC, "signature": {... signed_by: this node's key}}

A caller verifies it with ``verify_raw(kind, proof.canonical_json, signer_id_path=("node_id",))``
and checks that ``nonce`` is the one it sent.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio

import lamarck
from lamarck.consensus.params import QuorumParams
from lamarck.errors import InvalidRecord, PolicyRejected, RegistryError
from lamarck.node.api.limits import PeerLimits, RecordBudget, check_batch
from lamarck.node.api.peer_handlers import handle_publish, handle_request_vote, handle_sync
from lamarck.node.api.ready import Provider
from lamarck.node.peer_tls import connection_fingerprint
from lamarck.node.store.port import LessonStore
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity, b64u_encode
from lamarck.proto.keys import KEYS_DIR
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.timefmt import format_ts
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc, records_pb2

if TYPE_CHECKING:
    from lamarck.node.api.network_side import PeerSide

__all__ = [
    "NONCE_KIND",
    "NONCE_MAX_BYTES",
    "NONCE_MIN_BYTES",
    "SCHEMA_VERSIONS",
    "PeerService",
    "make_nonce_proof",
    "rotation_records",
]

NONCE_MIN_BYTES = 16
NONCE_MAX_BYTES = 64
#: Memory schema versions this node reads.
SCHEMA_VERSIONS: tuple[str, ...] = ("1.0", "2.0")
# The wire kind RECORD_KIND_NONCE maps by name to the signing kind "nonce". Until
# lamarck.proto.signing names it so, its single-purpose nonce kind (registry_nonce, unused by
# the registry, whose registrations are signed as `registration`) stands in.
NONCE_KIND: RecordKind = getattr(RecordKind, "nonce", RecordKind.registry_nonce)
_ROTATION_FILE = re.compile(r"^rotation\.([1-9][0-9]*)\.json$")


def make_nonce_proof(
    identity: NodeIdentity, clock: Clock, nonce: bytes
) -> records_pb2.SignedRecord:
    """A signed nonce record proving this node holds its key (``InvalidRecord`` on a bad nonce)."""
    if not NONCE_MIN_BYTES <= len(nonce) <= NONCE_MAX_BYTES:
        raise InvalidRecord(
            f"nonce must be {NONCE_MIN_BYTES} to {NONCE_MAX_BYTES} bytes, got {len(nonce)}",
            reason="bad_nonce",
        )
    record = {
        "kind": "nonce",
        "node_id": identity.node_id,
        "nonce": b64u_encode(nonce),
        "created_at": format_ts(clock.now()),
    }
    signed = sign_object(NONCE_KIND, record, identity)
    return records_pb2.SignedRecord(
        kind=records_pb2.RECORD_KIND_NONCE, canonical_json=canonical_bytes(signed)
    )


def rotation_records(home: Path) -> list[records_pb2.SignedRecord]:
    """The key rotation records kept in ``<home>/keys``, oldest first, as stored."""
    directory = home / KEYS_DIR
    if not directory.is_dir():
        return []
    numbered = []
    for path in directory.iterdir():
        match = _ROTATION_FILE.match(path.name)
        if match:
            numbered.append((int(match[1]), path))
    return [
        records_pb2.SignedRecord(
            kind=records_pb2.RECORD_KIND_KEY_ROTATION, canonical_json=path.read_bytes()
        )
        for _, path in sorted(numbered)
    ]


class PeerService(peer_pb2_grpc.PeerServiceServicer):
    """The PeerService servicer; one instance per node.

    ``sharing`` (the network side's part peers are answered from) and ``store`` are read on
    each call: the daemon's raise
    ``StoreUnavailable(reason="starting")`` until the node serves (``lamarck.node.api.ready``).
    ``addresses`` are the ones peers reach this node at, preferred first (the advertised one,
    then the bound ones); ``home`` holds the key rotation records.
    """

    def __init__(
        self,
        identity: NodeIdentity,
        clock: Clock,
        *,
        limits: PeerLimits,
        home: Path,
        addresses: Sequence[str],
        domains: Sequence[str],
        sharing: Provider[PeerSide],
        store: Provider[LessonStore],
        quorum: QuorumParams,
        max_future_skew_s: float,
    ) -> None:
        self._identity = identity
        self._clock = clock
        # The node's one set of peer limits (NodeParams, from the settings).
        self._limits = limits
        self._records = RecordBudget(limits)
        self._addresses = list(addresses)
        self._domains = list(domains)
        self._sharing = sharing
        self._store = store
        # How this node votes when a peer asks (RequestVote), with the one clock-skew tolerance.
        self._quorum = quorum
        self._max_future_skew_s = max_future_skew_s
        # Rotations change only through `lamarck keys rotate`, which needs the node stopped.
        self._rotations = rotation_records(home)

    async def GetIdentity(
        self, request: peer_pb2.GetIdentityRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> peer_pb2.GetIdentityResponse:
        """Who this node is, with a proof of key possession when a nonce is given."""
        response = peer_pb2.GetIdentityResponse(
            node_id=self._identity.node_id,
            public_key=self._identity.public_key_bytes,
            addresses=self._addresses,
            version=lamarck.__version__,
            schema_versions=list(SCHEMA_VERSIONS),
            domains=self._domains,
            key_rotations=self._rotations,
        )
        if request.nonce:
            response.proof.CopyFrom(make_nonce_proof(self._identity, self._clock, request.nonce))
        return response

    async def Publish(
        self, request: peer_pb2.PublishRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> peer_pb2.PublishResponse:
        """Gossip intake from an authenticated peer: each record through the import pipeline.

        A batch above ``publish_max_records`` is refused before anything else is done, and an
        authenticated sender is held to its records-per-second budget (both
        RESOURCE_EXHAUSTED; the sender's outbox retries later).
        """
        check_batch(len(request.records), self._limits)
        sharing = self._sharing()
        deps = sharing.publish_deps
        if deps is None:
            raise RegistryError("no registry: imports are paused", reason="registry_unavailable")
        sender = await sharing.authenticate(
            context.invocation_metadata(), request.sender_node_id, connection_fingerprint(context)
        )
        self._records.spend(sender, len(request.records))
        return await handle_publish(request, deps)

    async def Sync(
        self, request: peer_pb2.SyncRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[peer_pb2.SyncResponse]:
        """Anti-entropy pull: the shareable records the requester lacks, in pages, the first
        with the signed trust summaries this node serves."""
        sharing = self._sharing()
        # Access levels are decided for the requester: it must prove who it is.
        await sharing.authenticate(
            context.invocation_metadata(),
            request.requester_node_id,
            connection_fingerprint(context),
        )
        held = await sharing.shareable(request.requester_node_id, request.projects)
        attested = await sharing.attestations.shareable(held, request.requester_node_id)
        async for page in handle_sync(
            request,
            held,
            sharing.params,
            certificate_of=sharing.quorum.certificate_bytes,
            summaries=sharing.trust_summaries(),
            attestations=attested,
        ):
            yield page

    async def RequestVote(
        self, request: peer_pb2.RequestVoteRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> peer_pb2.RequestVoteResponse:
        """This node's signed vote on a memory, from its own outcomes, for an authenticated
        peer (as in Sync)."""
        sharing = self._sharing()
        await sharing.authenticate(
            context.invocation_metadata(),
            request.requester_node_id,
            connection_fingerprint(context),
        )
        return await handle_request_vote(
            request,
            store=self._store(),
            identity=self._identity,
            now=self._clock.now(),
            rng=sharing.rng,
            params=self._quorum,
            max_future_skew_s=self._max_future_skew_s,
        )

    async def GetReputation(
        self, request: peer_pb2.GetReputationRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> peer_pb2.GetReputationResponse:
        """Refused to every peer (``reputation_private``): scores are for this node's
        operators. The caller is authenticated first, as for Sync, so an anonymous one is
        told UNAUTHENTICATED as before."""
        sharing = self._sharing()
        await sharing.authenticate(
            context.invocation_metadata(),
            request.requester_node_id,
            connection_fingerprint(context),
        )
        raise PolicyRejected(
            "this node's opinions of its peers are for its operators (OperatorService)",
            reason="reputation_private",
        )
