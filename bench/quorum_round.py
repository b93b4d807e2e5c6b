"""One real quorum round over gRPC on loopback: the runner ``bench/trust.py`` times.

``n`` voters each serve ``PeerService.RequestVote`` on 127.0.0.1 with the node's own handler
(``peer_handlers.handle_request_vote`` over an in-memory store holding outcomes on the
lesson's operation) and check the caller's peer token (signature, audience, validity: what
``PeerAuthenticator`` checks before the registry lookup, which a node caches). The origin is
an import pipeline over an in-memory store with a ``QuorumCollector`` asking through the
node's ``PeerClient``. A round is timed from the collector's start (voter choice) to the
record stored with its certificate (``ImportPipeline.certify``): request, n signed votes,
tally, certificate verified again, row approved.

Not included: the registry round trip of a first authentication (cached per token on a node)
and Postgres (the origin's store is in memory).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import grpc.aio

from lamarck.consensus.params import QuorumParams
from lamarck.domain.rows import OutcomeRow
from lamarck.node.api.peer_auth import PeerTokens
from lamarck.node.api.peer_handlers import handle_request_vote
from lamarck.node.embedding import HashingEmbedder
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.importing.view import StoreImportView
from lamarck.node.sharing.peer_client import PeerClient
from lamarck.node.sharing.quorum import (
    CertificateChecker,
    QuorumCollector,
    QuorumLedger,
    network_view,
    peer_candidates,
    vote_from_wire,
)
from lamarck.node.store.memory import InMemoryLessonStore
from lamarck.policy.decision import ImportParams
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.memory import MemoryV2
from lamarck.proto.peer_auth import PEER_TOKEN_METADATA_KEY, PeerAuthParams, read_token
from lamarck.proto.signed import SignedMemory
from lamarck.proto.timefmt import format_ts
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc
from lamarck.proto.vote import Vote
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.scores import PeerBand

__all__ = ["GrpcQuorumRunner"]

OPERATION = "shell:vault rotate"
_DIM = 16
_MAX_VOTERS = 10


class _Voter(peer_pb2_grpc.PeerServiceServicer):
    """A voter's RequestVote: token checked, then the node's handler over its outcomes."""

    def __init__(self, identity: NodeIdentity, store: InMemoryLessonStore) -> None:
        self.identity = identity
        self.store = store
        self.rng = random.Random(identity.node_id)
        self.auth = PeerAuthParams()

    async def RequestVote(
        self, request: peer_pb2.RequestVoteRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> peer_pb2.RequestVoteResponse:
        now = datetime.now(UTC)
        token = dict(context.invocation_metadata() or ()).get(PEER_TOKEN_METADATA_KEY, "")
        read_token(str(token), audience=self.identity.node_id, now=now, params=self.auth)
        return await handle_request_vote(
            request,
            store=self.store,
            identity=self.identity,
            now=now,
            rng=self.rng,
            params=QuorumParams(voters=_MAX_VOTERS),
            max_future_skew_s=300.0,
        )


def _record(source: NodeIdentity, k: int) -> bytes:
    created = format_ts(datetime.now(UTC) - timedelta(minutes=5))
    obj = {
        "schema_version": "2.0",
        "id": str(uuid.UUID(int=k + 1, version=4)),
        "type": "AC",
        "content": f"Rotate the vault token before deploy number {k}.",
        "confidence": 0.7,
        "access_level": "public",
        "context": {"domain": "security", "environment": "prod"},
        "provenance": {
            "source_agent_id": source.node_id,
            "source_type": "empirical",
            "created_at": created,
            "updated_at": created,
        },
        "lesson": {"operation": OPERATION, "scope": "global", "status": "active"},
        "confidence_interval": {"mean": 0.7, "std_dev": 0.1},
        "evidence": [
            {
                "type": "empirical",
                "description": "rotated, deploy healthy",
                "timestamp": created,
                "validator": "reality",
                "outcome_id": str(uuid.UUID(int=10_000 + k, version=4)),
            }
        ],
    }
    return SignedMemory.sign(MemoryV2.from_obj(obj), source).raw


class _Pins:
    def __init__(self, keys: dict[str, str]) -> None:
        self.keys = keys

    async def pinned_key(self, node_id: str) -> str | None:
        return self.keys.get(node_id)

    async def is_revoked(self, node_id: str) -> bool:
        return False

    async def revoked_through(self, node_ids: Sequence[str]) -> dict[str, str]:
        return {}


class _Sink:
    def emit(self, event: object) -> None:
        """Events are not what this bench measures."""


class GrpcQuorumRunner:
    """Starts up to ten voters on loopback once; ``__call__(n)`` times one round of n."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._servers: list[grpc.aio.Server] = []
        self._addresses: dict[str, str] = {}
        self._voters = [NodeIdentity.from_seed(bytes([0x40 + k]) * 32) for k in range(10)]
        self._source = NodeIdentity.from_seed(b"\x30" * 32)
        self._origin = NodeIdentity.from_seed(b"\x31" * 32)
        self._count = 0
        self._loop.run_until_complete(self._start())

    async def _start(self) -> None:
        for k, identity in enumerate(self._voters):
            store = InMemoryLessonStore(dim=_DIM)
            for j in range(3):
                await store.insert_outcome(
                    OutcomeRow(
                        id=str(uuid.UUID(int=(k + 1) * 100 + j, version=4)),
                        session_id="s",
                        turn_index=j,
                        project="p",
                        passed=True,
                        claim_ok=True,
                        created_at=datetime.now(UTC),
                        record={"approach": [{"operation_key": OPERATION, "outcome": "ok"}]},
                    )
                )
            server = grpc.aio.server()
            peer_pb2_grpc.add_PeerServiceServicer_to_server(_Voter(identity, store), server)
            port = server.add_insecure_port("127.0.0.1:0")
            await server.start()
            self._servers.append(server)
            self._addresses[identity.node_id] = f"127.0.0.1:{port}"

    async def _round(self, n: int) -> float:
        clock = SystemClock()
        params = QuorumParams(voters=n, min_voters=4, vote_timeout_s=5.0, retry_after_s=60.0)
        store = InMemoryLessonStore(dim=_DIM)
        ids = [self._source, self._origin, *self._voters]
        keys = {i.node_id: i.public_key_b64 for i in ids}
        known = set(keys)

        async def principals(node_ids: Any) -> dict[str, str]:
            return {i: i for i in node_ids if i in known}

        ledger = QuorumLedger()
        peers = [v.node_id for v in self._voters[:n]]
        view = StoreImportView(store, _Scores(), self._origin.node_id)
        pipeline = ImportPipeline(
            store=store,
            view=view,
            pins=_Pins(keys),
            reputation=_Sink(),
            embedder=HashingEmbedder(dim=_DIM),
            clock=clock,
            rng=random.Random(1),
            params=ImportParams(),
            certificates=CertificateChecker(
                lambda also: network_view(peers, also, principals), params, ledger
            ),
        )
        client = PeerClient(
            self._origin.node_id,
            PeerTokens(self._origin, clock, PeerAuthParams()),
            self._addresses.__getitem__,
            hop_limit=3,
            max_message_bytes=4 * 1024 * 1024,
        )

        async def ask(voter: str, raw: bytes, round_id: str) -> Vote | None:
            answer = await client.request_vote(voter, raw, round_id, timeout_s=5.0)
            return vote_from_wire(answer)

        collector = QuorumCollector(
            store,
            lambda: pipeline,
            ledger,
            clock=clock,
            rng=random.Random(2),
            params=params,
            reputation=ReputationParams(),
            ask=ask,
            candidates=lambda source, _domain: peer_candidates(
                peers, source, principals, lambda _: PeerBand.NEUTRAL, lambda _: None
            ),
            sink=_Sink(),
        )
        self._count += 1
        await pipeline.import_record(
            _record(self._source, self._count),
            source=ImportSource.PEER,
            via_node_id=self._source.node_id,
        )
        [row] = await store.list_quarantine("pending")
        # Warm the channels and tokens once per n (a node keeps both across rounds).
        await asyncio.gather(*(ask(p, row.signed_record, "warm") for p in peers))
        started = time.perf_counter()
        result = await collector.run_round(row)
        elapsed = time.perf_counter() - started
        await client.close()
        if result is None or result.reason != "accepted":
            raise RuntimeError(f"the bench round did not accept: {result}")
        return elapsed

    def __call__(self, n: int) -> float:
        """Seconds of one round of ``n`` voters (n <= 10)."""
        if not 4 <= n <= _MAX_VOTERS:
            raise ValueError(f"n must be in [4, {_MAX_VOTERS}]")
        return self._loop.run_until_complete(self._round(n))

    def close(self) -> None:
        """Stop the voters and the loop."""
        for server in self._servers:
            self._loop.run_until_complete(server.stop(None))
        self._loop.close()


class _Scores:
    def score(self, node_id: str) -> float:
        return 0.5
