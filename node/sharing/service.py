"""``Sharing``: the node's network side, composed of its parts over ports.

Built by the daemon once the store is ready (``start``), stopped before the store closes
(``stop_loops``, ``flush_reputation``, ``close``). It builds each part (listed in the package's
doc, each in its own module) with what that part reads, over the ports the daemon hands it:
the ``LessonStore``, the ``Outbox`` and the reputation book (already loaded, so a reality
event from an outcome recorded before sharing started is in it, not dropped). The import
pipeline — the one way in for Publish, Sync, bundles and approvals — is built here once the
registry's pins are known; the parts that need it read it late.

Every loop catches and logs its failures: a peer or registry outage never stops the node.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

from lamarck.domain.embedder import Embedder
from lamarck.errors import StoreError
from lamarck.gossip.audience import band_reader
from lamarck.gossip.router import GossipRouter
from lamarck.node.api.peer_auth import PeerTokens
from lamarck.node.config import NodeSettings
from lamarck.node.gossip.outbox import Outbox
from lamarck.node.importing.batch import PrimedEmbedder
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.importing.view import StoreImportView
from lamarck.node.lessons.attested_support import AttestedSupportReader
from lamarck.node.lessons.service import LessonService
from lamarck.node.params import NodeParams
from lamarck.node.peer_tls import PeerTls
from lamarck.node.periodic import Periodic
from lamarck.node.sharing.anti_entropy import AntiEntropy
from lamarck.node.sharing.attestations import AttestationPush, Attestations
from lamarck.node.sharing.intake import PeerIntake
from lamarck.node.sharing.membership import Membership
from lamarck.node.sharing.peer_client import PeerClient
from lamarck.node.sharing.ports import ReputationBook
from lamarck.node.sharing.projects import ProjectPeers
from lamarck.node.sharing.publishing import Publisher
from lamarck.node.sharing.quorum import QUORUM_DIR, CertificateChecker, QuorumLedger
from lamarck.node.sharing.status import NetworkStatus
from lamarck.node.sharing.summaries import SummaryIntake
from lamarck.node.sharing.taint import TaintSweeper
from lamarck.node.sharing.trust import Trust
from lamarck.node.sharing.voting import Voting
from lamarck.node.store.attestations import attestations_for
from lamarck.node.store.port import LessonStore
from lamarck.policy.chain import build_policy
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.tls import TlsMaterial
from lamarck.reputation.summaries import TrustSummaries

__all__ = ["Sharing"]

_log = logging.getLogger("lamarck.node.sharing")


class Sharing:
    """The node's network side: its parts built over the daemon's ports, and their loops."""

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
        self._store = store
        self._lessons = lessons
        self._embedder = embedder
        self._peer_tls = peer_tls
        self._clock = clock
        self._identity = identity
        self._node_params = params
        self._gossip_interval_s = settings.gossip_interval_s
        self._rng = rng
        #: The gossip rules (the agent servicer reads them to say whether a lesson is shared).
        self.params = params.gossip
        #: Whether this node shares nothing: no publishing, no forwarding, empty Syncs.
        self.incognito = settings.incognito
        self.reputation = reputation
        self.band_of = band_reader(reputation, reputation.params)
        #: Our peer tokens (caller side); the callee side needs the registry's pins.
        # Bound to this node's TLS certificate: a token is good only on its connections.
        self.tokens = PeerTokens(
            identity,
            clock,
            params.peer_auth,
            channel=peer_tls.fingerprint if peer_tls is not None else "",
        )
        self.membership = Membership(
            settings,
            identity,
            clock,
            params=params.registry,
            auth=params.peer_auth,
            principals=params.principals,
            proofs=params.proofs,
            # Peers on other machines dial the advertised address, not the bound one.
            address=settings.advertise_address or peer_address,
            tls=peer_tls,
        )
        membership = self.membership
        #: Quorum rounds and the certificates held, kept in the home (``quorum.py``).
        self.quorum = QuorumLedger(settings.home / QUORUM_DIR)
        #: Outcome attestations: this node's and its peers' (``attestations.py``).
        self.attestations = Attestations(
            attestations_for(store, params.attestation),
            store,
            identity,
            principals=membership.principals,
            sink=reputation,
            clock=clock,
            rng=rng,
        )
        #: Each lesson's independent support as this node counts it: the attestations above
        #: and the quorum certificates it holds (the ``SupportReader`` recall reads).
        self.support = AttestedSupportReader(
            self.attestations.store,
            principals=membership.principals,
            certified=lambda content_hash: self.quorum.certificate(content_hash) is not None,
            clock=clock,
            own_id=identity.node_id,
        )
        self.client = PeerClient(
            identity.node_id,
            self.tokens,
            membership.address_of,
            tls=peer_tls,
            certificate_of_peer=membership.certificate_of,
            hop_limit=self.params.hop_limit,
            max_message_bytes=settings.max_message_bytes,
            certificate_of=self.quorum.certificate_bytes,
            attestations_of=self.attestations.of_records,
            max_records=params.peer_limits.publish_max_records,
        )
        self.view = StoreImportView(store, reputation, identity.node_id)
        #: The import decision's checks, built once from the node's params with its embedder
        #: (the autonomy filter's meaning check): the pipeline's and the publisher's.
        self.import_policy = build_policy(params.importing, embedder)
        self.router = GossipRouter(self.params, identity.node_id)
        self.outbox = outbox
        #: The projects each peer declared it works on (team sharing).
        projects = ProjectPeers(self.params.max_declared_projects)
        self.publisher = Publisher(
            store,
            identity,
            self.params,
            outbox=outbox,
            router=self.router,
            client=self.client,
            band_of=self.band_of,
            declared=projects.of,
            peers=lambda: membership.peers,
            incognito=self.incognito,
            importing=params.importing,
            import_policy=self.import_policy,
        )
        self.pipeline: ImportPipeline | None = None
        self.anti_entropy: AntiEntropy | None = None
        #: Takes lessons of tainted sources out (``taint.py``); its revocations are the
        #: registry's (none without one).
        self.taint = TaintSweeper(
            store,
            identity,
            clock=clock,
            rng=rng,
            params=params.taint,
            revoked=membership.revoked,
            band_of=self.band_of,
            directory=lambda: membership.directory,
        )
        #: Global trust recomputed over peers' signed summaries, and this node's own signed
        #: and served (``trust.py``, ``summaries.py``).
        self.trust = Trust(
            SummaryIntake(
                TrustSummaries(params.summaries, identity.node_id),
                identity=identity,
                pins=lambda: membership.directory,
                band_of=self.band_of,
                reputation=reputation,
                clock=clock,
            ),
            reputation,
            revoked=membership.revoked,
            clock=clock,
            incognito=self.incognito,
        )
        #: The quorum rounds over the records held ``awaiting_quorum`` (``voting.py``).
        self.voting = Voting(
            store,
            identity,
            clock,
            self.quorum,
            pipeline=lambda: self.pipeline,
            membership=membership,
            client=self.client,
            rng=rng,
            params=params.quorum,
            max_future_skew_s=params.importing.max_future_skew_s,
            reputation=reputation.params,
            sink=reputation,
            band_of=self.band_of,
            expertise=reputation.expertise,
            incognito=self.incognito,
        )
        #: What the PeerService answers with (``intake.py``).
        self.peers = PeerIntake(
            store,
            identity,
            self.params,
            membership=membership,
            pipeline=lambda: self.pipeline,
            router=self.router,
            forward=self.publisher.forward,
            projects=projects,
            attestations=self.attestations,
            quorum=self.quorum,
            summaries=self.trust.served,
            band_of=self.band_of,
            rng=rng,
            incognito=self.incognito,
        )
        self.pushes = AttestationPush(
            self.attestations, self.client, membership.live_peers, incognito=self.incognito
        )
        #: The status's network facts (``status.py``).
        self.status = NetworkStatus(
            membership, outbox, lambda: self.anti_entropy, incognito=self.incognito
        )
        self._loops: list[Periodic] = []

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect the registry (degraded, not fatal, when unreachable), load the import
        indexes, register, and start the background loops."""
        params = self._node_params
        await self.membership.connect()
        # Built with or without a registry: bundles and approvals enter by it too (without
        # pins a peer's record is refused, a bundle's held as unknown_signer).
        self.pipeline = pipeline = ImportPipeline(
            store=self._store,
            view=self.view,
            pins=self.membership.directory,
            reputation=self.reputation,
            embedder=self._embedder,
            clock=self._clock,
            rng=self._rng,
            params=params.importing,
            policy=self.import_policy,
            on_stored=self._lessons.contest_new,
            on_expected=self._lessons.expect_imports,
            certificates=CertificateChecker(self.voting.network_view, params.quorum, self.quorum),
        )
        self.quorum.load()
        # Catch-up embeds a chunk ahead of the pipeline when the node's embedder allows it.
        embedder = self._embedder
        primed = embedder if isinstance(embedder, PrimedEmbedder) else None
        self.anti_entropy = anti_entropy = AntiEntropy(
            self._store,
            self._identity,
            self.params,
            pipeline=pipeline,
            client=self.client,
            band_of=self.band_of,
            live_peers=self.membership.live_peers,
            clock=self._clock,
            rng=self._rng,
            primed=primed,
            batch=params.embedding.batch_import,
            summaries=self.trust.summaries.receive,
            attestations=self.attestations,
        )
        await self.view.load()
        # One round now, so the peer list is there before the first publish scan; the loop
        # then waits an interval before its next round.
        await self.membership.tick()
        self._spawn(
            "registry",
            self.membership.tick,
            params.registry.heartbeat_interval_s,
            wait_first=True,
        )
        self._spawn("publish", self.publish_once, self._gossip_interval_s)
        self._spawn("anti-entropy", anti_entropy.once, self.params.anti_entropy_interval_s)
        self._spawn(
            "reputation-flush",
            self.reputation.flush,
            params.maintenance.reputation_flush_interval_s,
        )
        self._spawn("quorum", self.voting.once, params.quorum.collect_interval_s)
        self._spawn("taint", self.taint.once, params.taint.sweep_interval_s)
        self._spawn("attestations", self.pushes.once, self._gossip_interval_s)
        self._spawn(
            "global-trust", self.trust.recompute, params.maintenance.global_trust_interval_s
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

    async def publish_once(self) -> int:
        """Enqueue new publishable lesson versions, then drain the outbox (deliveries made)."""
        return await self.publisher.publish_once(self._clock.now())

    # The daemon stops sharing in three steps, each under its own bound (stop_part_timeout_s):
    # a flush that hangs must not keep the node on the live peer list, as it did when one
    # step held all three under a bound no longer than the flush's own.
    async def stop_loops(self) -> None:
        """Cancel the loops and the forwards, and wait for them: no import emits after it."""
        loops, self._loops = self._loops, []
        # Each loop ends on its stop flag even if a round under way loses its cancel; the
        # forwards are cancelled at once and waited for the same way.
        await asyncio.gather(
            asyncio.gather(*(loop.stop() for loop in loops)), self.peers.stop_forwards()
        )

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
