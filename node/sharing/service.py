"""``Sharing``: the node's network side, composed of its parts over ports.

Built by the daemon once the store is ready (``start``), stopped before the store closes
(``stop``). It composes, each in its own module:

* ``Membership`` (``membership.py``): the registry, this node's registration, the live peers
  and the authentication of PeerService callers;
* ``PeerClient`` (``peer_client.py``): outgoing Publish and Sync calls with our peer tokens;
* ``Publisher`` (``publishing.py``): the scan of own lessons into the durable outbox and its
  delivery;
* ``AntiEntropy`` (``anti_entropy.py``): Sync pulls into the import pipeline;
* ``QuorumCollector`` (``quorum.py``): votes on the records held ``awaiting_quorum``, and the
  certificates that travel with the records a quorum accepted;
* ``TaintSweeper`` (``taint.py``): lessons of revoked or graylisted sources out of every
  prompt, re-quarantined ``tainted_source``;
* ``SummaryIntake`` (``summaries.py``): peers' signed local-trust summaries taken in from
  Sync, this node's own signed at each global-trust recomputation and served in Sync;
* ``Attestations`` (``attestations.py``): this node's signed outcome attestations on the
  lessons it imported, and the ones its peers sent, verified, kept, pushed and expired;

over the ports the daemon hands it: the ``LessonStore``, the ``Outbox`` and the reputation
book (already loaded, so a reality event from an outcome recorded before sharing started is
in it, not dropped). The import pipeline — the one way in for Publish, Sync, bundles and
approvals — is built here once the registry's pins are known.

Every loop catches and logs its failures: a peer or registry outage never stops the node.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from lamarck.consensus.voters import Candidate, NetworkView
from lamarck.domain.embedder import Embedder
from lamarck.errors import (
    DeliveryFailed,
    InvalidRecord,
    RegistryError,
    StoreError,
    VerificationError,
)
from lamarck.gossip.audience import band_reader
from lamarck.gossip.router import GossipRouter
from lamarck.node.api.node_status import CatchUpProgress, NetworkSnapshot
from lamarck.node.api.peer_auth import PeerTokens
from lamarck.node.api.peer_handlers import PublishDeps, handle_request_vote, shareable_records
from lamarck.node.api.reputation import GlobalTrustBook, HasBook, recompute_global_trust
from lamarck.node.config import NodeSettings
from lamarck.node.gossip.outbox import Outbox
from lamarck.node.importing.batch import PrimedEmbedder
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.importing.view import StoreImportView
from lamarck.node.lessons.attested_support import AttestedSupportReader
from lamarck.node.lessons.service import LessonService
from lamarck.node.params import NodeParams
from lamarck.node.peer_tls import PeerTls
from lamarck.node.periodic import Periodic, cancel_and_wait
from lamarck.node.sharing.anti_entropy import AntiEntropy
from lamarck.node.sharing.attestations import Attestations
from lamarck.node.sharing.membership import Membership
from lamarck.node.sharing.peer_client import PeerClient
from lamarck.node.sharing.projects import ProjectPeers
from lamarck.node.sharing.publishing import Publisher
from lamarck.node.sharing.quorum import (
    QUORUM_DIR,
    CertificateChecker,
    QuorumCollector,
    QuorumLedger,
    network_view,
    peer_candidates,
    vote_from_wire,
)
from lamarck.node.sharing.summaries import SummaryIntake
from lamarck.node.sharing.taint import TaintSweeper
from lamarck.node.store.attestations import attestations_for
from lamarck.node.store.port import LessonStore
from lamarck.policy.chain import build_policy
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.tls import TlsMaterial
from lamarck.proto.v1 import peer_pb2, records_pb2
from lamarck.proto.vote import Vote
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import ReputationSink, ReputationView
from lamarck.reputation.summaries import TrustSummaries

__all__ = ["ReputationBook", "Sharing"]

_log = logging.getLogger("lamarck.node.sharing")


class ReputationBook(ReputationView, ReputationSink, GlobalTrustBook, Protocol):
    """The reputation port Sharing needs: scores and events, persisted by ``flush``, and
    global trust recomputed on its schedule."""

    @property
    def params(self) -> ReputationParams:
        """The threshold set the book scores with."""
        ...

    @property
    def pending(self) -> int:
        """Events emitted but not yet persisted."""
        ...

    async def flush(self) -> int:
        """Persist the pending events; returns how many were written."""
        ...

    def expertise(self, node_id: str, domain: str) -> float:
        """The node's expertise in ``domain`` now (voter choice prefers experts)."""
        ...


class Sharing:
    """The node's registry membership, gossip publishing, intake and anti-entropy."""

    def __init__(
        self,
        settings: NodeSettings,
        identity: NodeIdentity,
        clock: Clock,
        embedder: Embedder,
        store: LessonStore,
        lessons: LessonService,
        *,
        params: NodeParams,
        outbox: Outbox,
        reputation: ReputationBook,
        rng: random.Random,
        peer_tls: PeerTls | None,
        peer_address: str,
    ) -> None:
        """``peer_tls`` is the peer port's mutual TLS (``None``: ``off-insecure``);
        ``peer_address`` the address the peer server bound (registered unless the settings
        advertise another)."""
        self._settings = settings
        self._store = store
        self._lessons = lessons
        self._embedder = embedder
        self._peer_tls = peer_tls
        self._clock = clock
        self._identity = identity
        self._node_params = params
        self.params = params.gossip
        self._rng = rng
        self.reputation = reputation
        self.band_of = band_reader(reputation, reputation.params)
        #: Our peer tokens (caller side); the callee side needs the registry's pins.
        # Bound to this node's TLS certificate: a token is good only on its connections.
        tls = peer_tls
        self.tokens = PeerTokens(
            self._identity,
            self._clock,
            params.peer_auth,
            channel=tls.fingerprint if tls is not None else "",
        )
        self.membership = Membership(
            settings,
            self._identity,
            self._clock,
            params=params.registry,
            auth=params.peer_auth,
            principals=params.principals,
            proofs=params.proofs,
            # Peers on other machines dial the advertised address, not the bound one.
            address=settings.advertise_address or peer_address,
            tls=tls,
        )
        #: Quorum rounds and the certificates held, kept in the home (``quorum.py``).
        self.quorum = QuorumLedger(settings.home / QUORUM_DIR)
        #: Outcome attestations: this node's and its peers' (``attestations.py``).
        self.attestations = Attestations(
            attestations_for(store, params.attestation),
            store,
            self._identity,
            principals=self.principals,
            sink=reputation,
            clock=self._clock,
            rng=rng,
        )
        #: Each lesson's independent support as this node counts it: the attestations above
        #: and the quorum certificates it holds (the ``SupportReader`` recall reads).
        self.support = AttestedSupportReader(
            self.attestations.store,
            principals=self.principals,
            certified=lambda content_hash: self.quorum.certificate(content_hash) is not None,
            clock=self._clock,
            own_id=self._identity.node_id,
        )
        self.client = PeerClient(
            self._identity.node_id,
            self.tokens,
            self.membership.address_of,
            tls=tls,
            certificate_of_peer=self.membership.certificate_of,
            hop_limit=self.params.hop_limit,
            max_message_bytes=settings.max_message_bytes,
            certificate_of=self.quorum.certificate_bytes,
            attestations_of=self.attestations.of_records,
            max_records=params.peer_limits.publish_max_records,
        )
        self.view = StoreImportView(store, reputation, self._identity.node_id)
        #: The import decision's checks, built once from the node's params with its embedder
        #: (the autonomy filter's meaning check): the pipeline's and the publisher's.
        self.import_policy = build_policy(params.importing, embedder)
        self.router = GossipRouter(self.params, self._identity.node_id)
        self.outbox = outbox
        #: The projects each peer declared it works on (team sharing).
        self.projects = ProjectPeers(self.params.max_declared_projects)
        self.publisher = Publisher(
            store,
            self._identity,
            self.params,
            outbox=outbox,
            router=self.router,
            client=self.client,
            band_of=self.band_of,
            declared=self.projects.of,
            peers=lambda: self.membership.peers,
            incognito=settings.incognito,
            importing=params.importing,
            import_policy=self.import_policy,
        )
        self.pipeline: ImportPipeline | None = None
        self.anti_entropy: AntiEntropy | None = None
        self.collector: QuorumCollector | None = None
        #: Takes lessons of tainted sources out (``taint.py``); its revocations are the
        #: registry's (none without one).
        self.taint = TaintSweeper(
            store,
            self._identity,
            clock=self._clock,
            rng=self._rng,
            params=params.taint,
            revoked=self._revoked,
            band_of=self.band_of,
            directory=lambda: self.membership.directory,
        )
        #: Peers' signed local-trust summaries and this node's own (``summaries.py``).
        self.summaries = SummaryIntake(
            TrustSummaries(params.summaries, self._identity.node_id),
            identity=self._identity,
            pins=lambda: self.membership.directory,
            band_of=self.band_of,
            reputation=reputation,
            clock=self._clock,
        )
        self._loops: list[Periodic] = []
        self._forwards: set[asyncio.Task[None]] = set()

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect the registry (degraded, not fatal, when unreachable), load the import
        indexes, register, and start the background loops."""
        settings = self._settings
        await self.membership.connect()
        # Built with or without a registry: bundles and approvals enter by it too (without
        # pins a peer's record is refused, a bundle's held as unknown_signer).
        self.pipeline = ImportPipeline(
            store=self._store,
            view=self.view,
            pins=self.membership.directory,
            reputation=self.reputation,
            embedder=self._embedder,
            clock=self._clock,
            rng=self._rng,
            params=self._node_params.importing,
            policy=self.import_policy,
            on_stored=self._lessons.contest_new,
            on_expected=self._lessons.expect_imports,
            certificates=CertificateChecker(
                self.network_view, self._node_params.quorum, self.quorum
            ),
        )
        self.quorum.load()
        self.collector = QuorumCollector(
            self._store,
            lambda: self.pipeline,
            self.quorum,
            clock=self._clock,
            rng=self._rng,
            params=self._node_params.quorum,
            reputation=self.reputation.params,
            ask=self._ask_vote,
            candidates=self._vote_candidates,
            sink=self.reputation,
            announce=self._announce,
            node_id=self._identity.node_id,
        )
        # Catch-up embeds a chunk ahead of the pipeline when the node's embedder allows it.
        embedder = self._embedder
        primed = embedder if isinstance(embedder, PrimedEmbedder) else None
        self.anti_entropy = AntiEntropy(
            self._store,
            self._identity,
            self.params,
            pipeline=self.pipeline,
            client=self.client,
            band_of=self.band_of,
            live_peers=self.membership.live_peers,
            clock=self._clock,
            rng=self._rng,
            primed=primed,
            batch=self._node_params.embedding.batch_import,
            summaries=self.summaries.receive,
            attestations=self.attestations,
        )
        await self.view.load()
        # One round now, so the peer list is there before the first publish scan; the loop
        # then waits an interval before its next round.
        await self.membership.tick()
        self._spawn(
            "registry",
            self.membership.tick,
            self._node_params.registry.heartbeat_interval_s,
            wait_first=True,
        )
        self._spawn("publish", self.publish_once, settings.gossip_interval_s)
        self._spawn("anti-entropy", self.anti_entropy_once, self.params.anti_entropy_interval_s)
        self._spawn(
            "reputation-flush",
            self.reputation.flush,
            self._node_params.maintenance.reputation_flush_interval_s,
        )
        self._spawn("quorum", self.quorum_once, self._node_params.quorum.collect_interval_s)
        self._spawn("taint", self.taint.once, self._node_params.taint.sweep_interval_s)
        self._spawn("attestations", self.attestations_once, settings.gossip_interval_s)
        self._spawn(
            "global-trust",
            self.recompute_global_trust,
            self._node_params.maintenance.global_trust_interval_s,
        )

    def _spawn(
        self,
        name: str,
        step: Callable[[], Awaitable[object]],
        every_s: float,
        *,
        wait_first: bool = False,
    ) -> None:
        # A failing round is said once per kind, not every round: a store outage of a minute
        # must not print sixty tracebacks (the supervisor reports the outage itself).
        loop = Periodic(f"sharing {name}", step, every_s, wait_first=wait_first, logger=_log)
        self._loops.append(loop)
        loop.start()

    # The daemon stops sharing in three steps, each under its own bound (stop_part_timeout_s):
    # a flush that hangs must not keep the node on the live peer list, as it did when one
    # step held all three under a bound no longer than the flush's own.
    async def stop_loops(self) -> None:
        """Cancel the loops and the forwards, and wait for them: no import emits after it."""
        loops, self._loops = self._loops, []
        forwards = [*self._forwards]
        self._forwards.clear()
        # Each loop ends on its stop flag even if a round under way loses its cancel; the
        # forwards are cancelled at once and waited for the same way.
        _, errors = await asyncio.gather(
            asyncio.gather(*(loop.stop() for loop in loops)), cancel_and_wait(forwards)
        )
        for error in errors:
            _log.debug("a forward ended by %r at stop", error)

    async def flush_reputation(self) -> None:
        """Persist the reputation events still pending (after ``stop_loops``, before the store
        closes); a store that refuses is logged with the number of events lost."""
        try:
            await self.reputation.flush()
        except StoreError as e:
            _log.error("%d reputation events not persisted at stop: %s", self.reputation.pending, e)

    async def close(self) -> None:
        """Close the peer channels, leave the live peer list and close the registry."""
        await self.client.close()
        await self.membership.close()

    # -- registry -------------------------------------------------------------------------
    @property
    def directory(self) -> Any:
        """The cached registry directory, or None without a registry."""
        return self.membership.directory

    async def live_peers(self) -> list[str]:
        """Ids of the live peers (other than this node) as last seen in the registry."""
        return self.membership.live_peers()

    # -- intake ---------------------------------------------------------------------------
    async def authenticate(self, metadata: Any, claimed: str, channel: str | None) -> str:
        """The proven id of a PeerService caller naming itself ``claimed`` whose connection was
        made with the certificate ``channel`` (``None`` without TLS; see ``peer_auth``)."""
        return await self.membership.authenticate(metadata, claimed, channel)

    def rotate_tls(self, material: TlsMaterial) -> None:
        """Serve, dial, bind tokens and register with new TLS material (after
        ``lamarck.proto.tls.rotate_tls``, e.g. with a key rotation): the next registry round
        registers the new certificate, and peers pin it at their next refresh."""
        tls = self._peer_tls
        if tls is None:
            return
        tls.rotate(material)
        self.tokens.bind(tls.fingerprint)
        self.membership.use_tls_certificate(tls.certificate)
        self.client.reset_channels()

    def known_peer(self, metadata: Any) -> str | None:
        """The node a call's peer token already proved (cached), else None (rate limits)."""
        auth = self.membership.auth
        return auth.known_peer(metadata) if auth is not None else None

    @property
    def incognito(self) -> bool:
        """Whether this node shares nothing: no publishing, no forwarding, empty Syncs."""
        return self._settings.incognito

    @property
    def publish_deps(self) -> PublishDeps | None:
        """What ``PeerService.Publish`` needs; ``None`` while there is no registry at all."""
        if self.pipeline is None or self.membership.directory is None:
            return None
        return PublishDeps(
            pipeline=self.pipeline,
            router=None if self.incognito else self.router,
            live_peers=self.live_peers,
            forward_send=None if self.incognito else self.publisher.forward,
            spawn=self._background,
            attestations=self.attestations,
        )

    def _background(self, work: Awaitable[object]) -> None:
        """Run ``work`` (a forward) after the Publish answer; cancelled at stop."""

        async def run() -> None:
            try:
                await work
            except Exception:  # best effort: anti-entropy repairs a lost forward
                _log.exception("background forward failed")

        task = asyncio.create_task(run(), name="forward")
        self._forwards.add(task)
        task.add_done_callback(self._forwards.discard)

    async def shareable(self, requester: str, projects: Sequence[str] = ()) -> dict[str, bytes]:
        """What this node may send ``requester`` in a Sync, by content hash; ``projects`` is
        the (authenticated) requester's declaration of the projects it works on."""
        declared = self.projects.declare(requester, projects)
        if self.incognito:
            return {}
        return await shareable_records(
            self._store, self._identity, self.params, self.band_of, requester, declared
        )

    # -- publishing and anti-entropy ------------------------------------------------------
    async def publish_once(self) -> int:
        """Enqueue new publishable lesson versions, then drain the outbox (deliveries made)."""
        return await self.publisher.publish_once(self._clock.now())

    async def attestations_once(self) -> int:
        """Push this node's new attestations to the live peers (Sync carries them to the
        others), then drop the expired ones; returns how many peers took the push."""
        await self.attestations.expire_once()
        pending = self.attestations.take_pending()
        if not pending or self.incognito:
            return 0
        delivered = 0
        for peer in self.membership.live_peers():
            try:
                await self.client.push_attestations(peer, pending)
                delivered += 1
            except DeliveryFailed as e:
                _log.info("attestations not pushed to %s (Sync carries them): %s", peer, e)
        return delivered

    async def anti_entropy_once(self) -> int:
        """Pull what this node lacks from every live peer; returns records received."""
        if self.anti_entropy is None:
            return 0
        return await self.anti_entropy.once()

    # -- quorum ---------------------------------------------------------------------------
    @property
    def rng(self) -> random.Random:
        """The node's seeded random source (vote ids, voter choice)."""
        return self._rng

    async def principals(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The registry's principals of the admitted ids among ``node_ids`` ({} without one)."""
        directory = self.membership.directory
        if directory is None:
            return {}
        found: dict[str, str] = await directory.principals(list(node_ids))
        return found

    def _network_ids(self) -> list[str]:
        """This node and its live peers: the network as this node sees it."""
        return [self._identity.node_id, *self.membership.live_peers()]

    async def network_view(self, also: Sequence[str] = ()) -> NetworkView:
        """This node's view of the whole network (the registry's principals of itself and its
        live peers, the graylisted ones not available as voters), with the ids in ``also``
        looked up too: certificates are verified and voters counted over it, never over the
        principals of a certificate's members alone."""
        return await network_view(self._network_ids(), also, self.principals, self.band_of)

    async def _vote_candidates(
        self, source: str, domain: str
    ) -> tuple[list[Candidate], NetworkView]:
        book = self.reputation

        def expertise(peer: str) -> float | None:
            # No domain on the record: nobody is an expert in it, the choice is by chance.
            return book.expertise(peer, domain) if domain else None

        # This node is a candidate too: it votes from its own outcomes like any peer.
        return await peer_candidates(
            self._network_ids(), source, self.principals, self.band_of, expertise
        )

    async def _own_vote(self, raw: bytes) -> Vote | None:
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
                params=self._node_params.quorum,
                max_future_skew_s=self._node_params.importing.max_future_skew_s,
            )
        except (InvalidRecord, VerificationError, StoreError) as e:
            _log.info("no vote of our own: %s", e)
            return None
        return vote_from_wire(bytes(reply.vote.canonical_json))

    async def _ask_vote(self, voter: str, raw: bytes, round_id: str) -> Vote | None:
        if voter == self._identity.node_id:
            return await self._own_vote(raw)
        try:
            answer = await self.client.request_vote(
                voter, raw, round_id, timeout_s=self._node_params.quorum.vote_timeout_s
            )
        except DeliveryFailed as e:
            _log.info("no vote from %s: %s", voter, e)
            return None
        return vote_from_wire(answer)

    async def _announce(self, raw: bytes) -> None:
        """Push a record a quorum accepted here, with its certificate, to the live peers."""

        async def push(peer: str) -> None:
            try:
                await self.client.publish(peer, [raw], 0, hop_limit=1)
            except DeliveryFailed as e:
                _log.info("certified record not pushed to %s (Sync carries it): %s", peer, e)

        if not self.incognito:
            await asyncio.gather(*(push(p) for p in self.membership.live_peers()))

    async def _revoked(self) -> frozenset[str]:
        """Every id the registry revoked (operator-signed; remembered through an outage)."""
        directory = self.membership.directory
        if directory is None:
            return frozenset()
        revoked: frozenset[str] = await directory.revoked_ids()
        return revoked

    async def quorum_once(self) -> int:
        """One pass of the quorum rounds over the records awaiting one; rounds run."""
        if self.collector is None:
            return 0
        return await self.collector.once()

    async def recompute_global_trust(self) -> None:
        """Recompute global trust over this node's row and the summaries of signers in good
        standing now (pure, ~10 ms for 1,000 peers), refresh the reputation gauges, and sign
        this node's new summary for the Sync answers it serves."""
        now = self._clock.now()
        try:
            rows = self.summaries.rows(now, revoked=await self._revoked())
        except RegistryError as e:
            # Whose summaries still count cannot be told: this round counts none (fail closed).
            _log.warning("global trust from this node's own row only: %s", e)
            rows = {}
        recompute_global_trust(self.reputation, now, rows)
        book = self.reputation
        if isinstance(book, HasBook):
            self.summaries.sign_own(book.book.local_trust(), now)

    def trust_summaries(self) -> list[bytes]:
        """The signed trust summaries a Sync answer carries (none when incognito: whom this
        node trusts says whom it deals with)."""
        if self.incognito:
            return []
        return list(self.summaries.served(self._clock.now()))

    async def network_snapshot(self) -> NetworkSnapshot:
        """The network side at a glance: admission, live peers, last syncs, the outbox."""
        pending = await self.outbox.pending()
        stamps = [e.created_at for e in pending if e.created_at is not None]
        return NetworkSnapshot(
            self.membership.admission(),
            tuple(self.membership.live_peers()),
            dict(self.anti_entropy.last_sync) if self.anti_entropy is not None else {},
            len(pending),
            min(stamps) if stamps else None,
            self.incognito,
            self._catching_up(),
        )

    def _catching_up(self) -> tuple[CatchUpProgress, ...]:
        if self.anti_entropy is None:
            return ()
        return tuple(c.progress() for c in list(self.anti_entropy.catching_up.values()))

    async def sync_with(self, peer: str, held: set[str] | None = None) -> int:
        """One anti-entropy pull from ``peer`` (see ``AntiEntropy.sync_with``)."""
        if self.anti_entropy is None:
            return 0
        return await self.anti_entropy.sync_with(peer, held)
