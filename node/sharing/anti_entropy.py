"""Anti-entropy: pull what this node lacks from every live peer, through the one way in.

Every ``anti_entropy_interval_s`` (and once at start) a Sync pull from each live peer, so a
node that was down or partitioned catches up. Pulled records enter by the import pipeline as
source ``sync``; one bad record is its own REJECT and the round goes on. A quorum
certificate the peer sent with a memory goes into the pipeline with it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from lamarck.errors import DeliveryFailed
from lamarck.node.api.peer_handlers import shareable_records
from lamarck.node.gossip.audience import BandOf
from lamarck.node.gossip.publisher import GossipParams
from lamarck.node.gossip.sync import SyncPage, SyncQuery, sync_step
from lamarck.node.importing.decision import ImportOutcome
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.sharing.peer_client import PeerClient
from lamarck.node.store.port import LessonStore
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity

__all__ = ["AntiEntropy"]

_log = logging.getLogger("lamarck.node.sharing")


class AntiEntropy:
    """Sync pulls from live peers into the import pipeline."""

    def __init__(
        self,
        store: LessonStore,
        identity: NodeIdentity,
        params: GossipParams,
        *,
        pipeline: ImportPipeline,
        client: PeerClient,
        band_of: BandOf,
        live_peers: Callable[[], list[str]],
        clock: Clock,
    ) -> None:
        self._clock = clock
        self._store = store
        self._identity = identity
        self._params = params
        self._pipeline = pipeline
        self._client = client
        self._band_of = band_of
        self._live_peers = live_peers
        #: When each peer last answered a whole pull (the node's status shows it).
        self.last_sync: dict[str, datetime] = {}

    async def once(self) -> int:
        """Pull what this node lacks from every live peer; returns records received."""
        peers = self._live_peers()
        if not peers:
            return 0
        # Read (and sign) what this node holds once per round, not once per peer; each pull
        # adds what it brought in.
        held = await self.held_hashes()
        projects = await self.own_projects()
        received = 0
        for peer in peers:
            try:
                received += await self.sync_with(peer, held, projects)
            except DeliveryFailed as e:
                _log.info("sync with %s failed: %s", peer, e)
        return received

    async def held_hashes(self) -> set[str]:
        """What this node holds, by the same selection a Sync serves (also when incognito)."""
        held = await shareable_records(
            self._store, self._identity, self._params, self._band_of, self._identity.node_id
        )
        return set(held)

    async def own_projects(self) -> list[str]:
        """The project scopes this node works on, declared in every Sync it sends."""
        return await self._store.project_scopes(self._params.max_declared_projects)

    async def sync_with(
        self, peer: str, held: set[str] | None = None, projects: Sequence[str] | None = None
    ) -> int:
        """One pull from ``peer``; ``held`` (what this node holds, by content hash) is read
        from the store when not given, and grows by what the pull stores; ``projects`` (this
        node's project declaration) likewise."""
        mine = held if held is not None else await self.held_hashes()
        declared = projects if projects is not None else await self.own_projects()
        pipeline = self._pipeline
        certificates: dict[str, bytes] = {}

        async def fetch(query: SyncQuery) -> SyncPage:
            return await self._client.sync_page(peer, query, certificates, declared)

        async def importer(raw: bytes) -> object:
            # Only StoreUnavailable escapes the pipeline (the store is down: the round stops);
            # a bad record is its own REJECT and the round goes on.
            result = await pipeline.import_record(
                raw,
                source=ImportSource.SYNC,
                via_node_id=peer,
                certificate=certificates.get(sha256_hex(raw)),
            )
            if result.outcome in (ImportOutcome.ACCEPT, ImportOutcome.DUPLICATE):
                mine.add(result.content_hash)
            return result

        received = await sync_step(
            mine,
            fetch,
            importer,
            prefix_len=self._params.sync_prefix_len,
            page_size=self._params.batch_size,
        )
        self.last_sync[peer] = self._clock.now()
        return received
