"""``PeerIntake``: what this node's PeerService answers its peers with.

Every call is authenticated first (``membership.py``: the caller's peer token, pinned in the
registry). Publish takes records into the import pipeline and forwards the accepted public
ones after the answer (``PublishDeps``; the forwards are cancelled at stop); Sync offers what
the requester may receive (``shareable``), with the attestations, quorum certificates and
trust summaries that travel with it; RequestVote draws its vote ids from the node's random
source. An incognito node imports but shares nothing: no forwarding, empty Syncs.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from lamarck.gossip.audience import BandOf
from lamarck.gossip.publisher import GossipParams
from lamarck.gossip.router import ForwardSend, GossipRouter
from lamarck.node.api.peer_handlers import PublishDeps, shareable_records
from lamarck.node.importing.pipeline import ImportPipeline
from lamarck.node.periodic import cancel_and_wait
from lamarck.node.sharing.attestations import Attestations
from lamarck.node.sharing.membership import Membership
from lamarck.node.sharing.projects import ProjectPeers
from lamarck.node.sharing.quorum import QuorumLedger
from lamarck.node.store.port import LessonStore
from lamarck.proto.identity import NodeIdentity

__all__ = ["PeerIntake"]

_log = logging.getLogger("lamarck.node.sharing")


class PeerIntake:
    """The network side a PeerService call reads: who the caller is, where its records go,
    and what a Sync offers it."""

    def __init__(
        self,
        store: LessonStore,
        identity: NodeIdentity,
        params: GossipParams,
        *,
        membership: Membership,
        pipeline: Callable[[], ImportPipeline | None],
        router: GossipRouter,
        forward: ForwardSend,
        projects: ProjectPeers,
        attestations: Attestations,
        quorum: QuorumLedger,
        summaries: Callable[[], list[bytes]],
        band_of: BandOf,
        rng: random.Random,
        incognito: bool,
    ) -> None:
        """``pipeline`` is the node's import pipeline once the network side built it;
        ``forward`` sends accepted public records one hop on; ``summaries`` the signed trust
        summaries a Sync answer carries now."""
        self._store = store
        self._identity = identity
        #: The gossip rules Sync pages by.
        self.params = params
        self._membership = membership
        self._pipeline = pipeline
        self._router = router
        self._forward = forward
        self._projects = projects
        #: Outcome attestations received in Publish, offered in Sync.
        self.attestations = attestations
        #: The quorum certificates that travel with their records.
        self.quorum = quorum
        self._summaries = summaries
        self._band_of = band_of
        self._rng = rng
        self._incognito = incognito
        self._forwards: set[asyncio.Task[None]] = set()

    @property
    def rng(self) -> random.Random:
        """The node's seeded random source (vote ids)."""
        return self._rng

    async def authenticate(self, metadata: Any, claimed: str, channel: str | None) -> str:
        """The proven id of a PeerService caller naming itself ``claimed`` whose connection was
        made with the certificate ``channel`` (``None`` without TLS; see ``peer_auth``)."""
        return await self._membership.authenticate(metadata, claimed, channel)

    async def live_peers(self) -> list[str]:
        """Ids of the live peers (other than this node) as last seen in the registry."""
        return self._membership.live_peers()

    @property
    def publish_deps(self) -> PublishDeps | None:
        """What ``PeerService.Publish`` needs; ``None`` while there is no registry at all."""
        pipeline = self._pipeline()
        if pipeline is None or self._membership.directory is None:
            return None
        return PublishDeps(
            pipeline=pipeline,
            router=None if self._incognito else self._router,
            live_peers=self.live_peers,
            forward_send=None if self._incognito else self._forward,
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

    async def stop_forwards(self) -> None:
        """Cancel the forwards under way and wait for them."""
        forwards = [*self._forwards]
        self._forwards.clear()
        for error in await cancel_and_wait(forwards):
            _log.debug("a forward ended by %r at stop", error)

    async def shareable(self, requester: str, projects: Sequence[str] = ()) -> dict[str, bytes]:
        """What this node may send ``requester`` in a Sync, by content hash; ``projects`` is
        the (authenticated) requester's declaration of the projects it works on."""
        declared = self._projects.declare(requester, projects)
        if self._incognito:
            return {}
        return await shareable_records(
            self._store, self._identity, self.params, self._band_of, requester, declared
        )

    def trust_summaries(self) -> list[bytes]:
        """The signed trust summaries a Sync answer carries (none when incognito)."""
        return self._summaries()
