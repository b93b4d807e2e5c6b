"""Anti-entropy: pull what this node lacks from every live peer, through the one way in.

Every ``anti_entropy_interval_s`` (and once at start) a Sync pull from each live peer, so a
node that was down or partitioned catches up. Pulled records enter by the import pipeline as
source ``sync``; one bad record is its own REJECT and the round goes on. A quorum
certificate the peer sent with a memory goes into the pipeline with it; the outcome
attestations a page carried are verified and kept once the pull's memories are in (an
attestation counts only for a lesson held here).

Catch-up: with the node's ``PrimedEmbedder`` each page's records are embedded a
chunk at a time, ahead of the pipeline (``node/importing/batch.py``'s ``Prefetch``), and a long
pull logs its progress every ``progress_every`` records; ``catching_up`` holds each running
pull's progress for the node's status.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from lamarck.errors import DeliveryFailed
from lamarck.gossip.audience import BandOf
from lamarck.gossip.publisher import GossipParams
from lamarck.gossip.sync import SyncPage, SyncQuery, sync_step
from lamarck.node.api.node_status import CatchUpProgress
from lamarck.node.api.peer_handlers import shareable_records
from lamarck.node.importing.batch import BatchImportParams, Prefetch, PrimedEmbedder
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.sharing.attestations import Attestations
from lamarck.node.sharing.peer_client import PeerClient
from lamarck.node.store.port import LessonStore
from lamarck.policy.decision import ImportOutcome
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity

__all__ = ["AntiEntropy", "CatchUp", "SummarySink", "sync_sample"]

#: Takes the trust summaries one peer's Sync answer carried (``SummaryIntake.receive``).
SummarySink = Callable[[str, Sequence[bytes]], Awaitable[object]]

_log = logging.getLogger("lamarck.node.sharing")


def sync_sample(peers: Sequence[str], params: GossipParams, rng: random.Random) -> list[str]:
    """The peers one anti-entropy round pulls from: all of them as given, or, when there are
    more than ``sync_peers_per_round``, a seeded sample of that many in id order (bounded
    work per round; over rounds every peer is asked). Pure: the simulator runs it too."""
    if len(peers) <= params.sync_peers_per_round:
        return list(peers)
    return sorted(rng.sample(list(peers), params.sync_peers_per_round))


@dataclass(slots=True)
class CatchUp:
    """A running pull from one peer: records imported so far, and since when."""

    peer: str
    started: datetime
    imported: int = 0
    #: Records the pages received so far offered (what is left is ``offered - imported``).
    offered: int = 0

    def progress(self) -> CatchUpProgress:
        """How far it got now, as the node's status shows it."""
        return CatchUpProgress(self.peer, self.started, self.imported, self.offered)


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
        rng: random.Random,
        primed: PrimedEmbedder | None = None,
        batch: BatchImportParams | None = None,
        summaries: SummarySink | None = None,
        attestations: Attestations | None = None,
    ) -> None:
        """``primed`` (the pipeline's own embedder) turns on catch-up prefetching and
        progress lines, cut by ``batch`` (default: the primed embedder's); without it a pull
        imports one record at a time. ``summaries`` takes the signed trust summaries a
        peer's answer carried (``summaries.py``), with that peer's id."""
        self._summaries = summaries
        self._clock = clock
        self._rng = rng
        self._primed = primed
        self._batch = batch if batch is not None or primed is None else primed.params
        self._store = store
        self._identity = identity
        self._params = params
        self._pipeline = pipeline
        self._client = client
        self._band_of = band_of
        self._live_peers = live_peers
        self._attestations = attestations
        #: When each peer last answered a whole pull (the node's status shows it).
        self.last_sync: dict[str, datetime] = {}
        #: The pulls running now, by peer (a long catch-up's progress, for the status).
        self.catching_up: dict[str, CatchUp] = {}

    async def once(self) -> int:
        """Pull what this node lacks from every live peer; returns records received."""
        peers = self._live_peers()
        if not peers:
            return 0
        peers = sync_sample(peers, self._params, self._rng)
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
        """What this node holds, by the same selection a Sync serves (also when incognito),
        and the attestations it keeps for those records, and the versions it judged and kept as
        history only (a copy that moved on to its source's edit holds the edit's bytes, not the
        superseded record's: pulled again each round, it would be judged again each round),
        and every version it holds but does not serve (a retired copy, a held record): a
        peer re-offering one would count as a duplicate import at every idle round."""
        held = await shareable_records(
            self._store, self._identity, self._params, self._band_of, self._identity.node_id
        )
        attestations = self._attestations
        me = self._identity.node_id
        attested = await attestations.shareable(held, me) if attestations is not None else {}
        index = self._pipeline.view.held
        return {*held, *attested, *index.history_hashes(), *index.held_hashes()}

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
        attested: dict[str, bytes] = {}
        batch = self._batch
        # Each page's new records are embedded a chunk ahead of the pipeline.
        ahead = Prefetch.ahead_of(pipeline, self._primed, batch)
        every = batch.progress_every if batch is not None else 0
        progress = self.catching_up[peer] = CatchUp(peer, self._clock.now())
        started = time.monotonic()

        async def fetch(query: SyncQuery) -> SyncPage:
            page = await self._client.sync_page(peer, query, certificates, declared, attested)
            if page.summaries and self._summaries is not None:
                await self._summaries(peer, page.summaries)
            fresh = [raw for h, raw in page.records if h not in mine]
            progress.offered += len(fresh)
            ahead.add(fresh)
            return page

        async def importer(raw: bytes) -> object:
            await ahead.ready(raw)
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
            progress.imported += 1
            if every and progress.imported % every == 0:
                rate = progress.imported / max(time.monotonic() - started, 1e-9)
                _log.info(
                    "catching up from %s: %d of %d offered so far (%.0f records/s)",
                    peer,
                    progress.imported,
                    progress.offered,
                    rate,
                )
            return result

        try:
            received = await sync_step(
                mine,
                fetch,
                importer,
                prefix_len=self._params.sync_prefix_len,
                page_size=self._params.batch_size,
            )
        finally:
            await ahead.close()
            self.catching_up.pop(peer, None)
        if self._attestations is not None and attested:
            fresh = [raw for h, raw in attested.items() if h not in mine]
            for result in await self._attestations.receive(fresh):
                if result.kept or not result.reason:
                    mine.add(result.content_hash)
        if every and received >= every:
            _log.info(
                "caught up from %s: %d records in %.1f s",
                peer,
                received,
                time.monotonic() - started,
            )
        self.last_sync[peer] = self._clock.now()
        return received
