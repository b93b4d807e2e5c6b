"""``Voting``: this node's side of the quorum rounds, over the registry and its peers.

A record held ``awaiting_quorum`` is put to voters chosen among this node and its live peers
(``QuorumCollector`` in ``quorum.py`` runs the rounds and keeps them in the ledger). What the
rounds read of the network is here: this node's view of it (the registry's principals, the
graylisted ones not available as voters), the candidates with their expertise, a vote asked
of a peer or made by this node from its own outcomes, and the push of a record a quorum
accepted to the live peers.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Sequence

from lamarck.consensus.params import QuorumParams
from lamarck.consensus.voters import Candidate, NetworkView
from lamarck.errors import DeliveryFailed, InvalidRecord, StoreError, VerificationError
from lamarck.gossip.audience import BandOf
from lamarck.node.api.peer_handlers import handle_request_vote
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.sharing.peer_client import PeerClient
from lamarck.node.sharing.ports import VoterRegistry
from lamarck.node.sharing.quorum import (
    QuorumCollector,
    QuorumLedger,
    network_view,
    peer_candidates,
    vote_from_wire,
)
from lamarck.node.store.port import LessonStore
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.v1 import peer_pb2, records_pb2
from lamarck.proto.vote import Vote
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import ReputationSink

__all__ = ["Voting"]

_log = logging.getLogger("lamarck.node.sharing")


class Voting:
    """The quorum rounds of this node: who may vote, asking them, announcing the accepted."""

    def __init__(
        self,
        store: LessonStore,
        identity: NodeIdentity,
        clock: Clock,
        ledger: QuorumLedger,
        *,
        pipeline: Callable[[], ImportPipeline | None],
        membership: VoterRegistry,
        client: PeerClient,
        rng: random.Random,
        params: QuorumParams,
        max_future_skew_s: float,
        reputation: ReputationParams,
        sink: ReputationSink,
        band_of: BandOf,
        expertise: Callable[[str, str], float],
        incognito: bool,
    ) -> None:
        """``pipeline`` is the node's import pipeline once the network side built it (no round
        runs before); ``expertise`` a peer's in a domain now (voter choice prefers experts);
        ``incognito`` keeps an accepted record from being pushed."""
        self._store = store
        self._identity = identity
        self._clock = clock
        self._pipeline = pipeline
        self._membership = membership
        self._client = client
        self._rng = rng
        self._params = params
        self._max_future_skew_s = max_future_skew_s
        self._band_of = band_of
        self._expertise = expertise
        self._incognito = incognito
        self.collector = QuorumCollector(
            store,
            pipeline,
            ledger,
            clock=clock,
            rng=rng,
            params=params,
            reputation=reputation,
            ask=self.ask,
            candidates=self.candidates,
            sink=sink,
            announce=self.announce,
            node_id=identity.node_id,
        )

    async def once(self) -> int:
        """One pass of the quorum rounds over the records awaiting one; rounds run (none
        before the pipeline is built)."""
        if self._pipeline() is None:
            return 0
        return await self.collector.once()

    async def network_view(self, also: Sequence[str] = ()) -> NetworkView:
        """This node's view of the whole network (the registry's principals of itself and its
        live peers, the graylisted ones not available as voters), with the ids in ``also``
        looked up too: certificates are verified and voters counted over it, never over the
        principals of a certificate's members alone."""
        return await network_view(
            self._membership.network_ids(), also, self._membership.principals, self._band_of
        )

    async def candidates(self, source: str, domain: str) -> tuple[list[Candidate], NetworkView]:
        """Who may vote on a record of ``source`` in ``domain``, and the view they were read
        from."""
        expertise_in = self._expertise

        def expertise(peer: str) -> float | None:
            # No domain on the record: nobody is an expert in it, the choice is by chance.
            return expertise_in(peer, domain) if domain else None

        # This node is a candidate too: it votes from its own outcomes like any peer.
        return await peer_candidates(
            self._membership.network_ids(),
            source,
            self._membership.principals,
            self._band_of,
            expertise,
        )

    async def own_vote(self, raw: bytes) -> Vote | None:
        """This node's vote on ``raw``, by the RequestVote handler over its own outcomes."""
        try:
            reply = await handle_request_vote(
                peer_pb2.RequestVoteRequest(
                    memory=records_pb2.SignedRecord(
                        kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=raw
                    ),
                    requester_node_id=self._identity.node_id,
                ),
                store=self._store,
                identity=self._identity,
                now=self._clock.now(),
                rng=self._rng,
                params=self._params,
                max_future_skew_s=self._max_future_skew_s,
            )
        except (InvalidRecord, VerificationError, StoreError) as e:
            _log.info("no vote of our own: %s", e)
            return None
        return vote_from_wire(bytes(reply.vote.canonical_json))

    async def ask(self, voter: str, raw: bytes, round_id: str) -> Vote | None:
        """``voter``'s vote on ``raw`` (this node's own when it is the voter); None when it
        did not answer."""
        if voter == self._identity.node_id:
            return await self.own_vote(raw)
        try:
            answer = await self._client.request_vote(
                voter, raw, round_id, timeout_s=self._params.vote_timeout_s
            )
        except DeliveryFailed as e:
            _log.info("no vote from %s: %s", voter, e)
            return None
        return vote_from_wire(answer)

    async def announce(self, raw: bytes) -> None:
        """Push a record a quorum accepted here, with its certificate, to the live peers."""

        async def push(peer: str) -> None:
            try:
                await self._client.publish(peer, [raw], 0, hop_limit=1)
            except DeliveryFailed as e:
                _log.info("certified record not pushed to %s (Sync carries it): %s", peer, e)

        if not self._incognito:
            await asyncio.gather(*(push(p) for p in self._membership.live_peers()))
