"""The publisher: this node's own lessons, signed by the one encoder and handed to the outbox.

A periodic scan of this node's lessons that ``may_publish``; each new (lesson id, version) is
signed and enqueued in the durable outbox for every peer the audience policy allows (up to
``direct_push_max`` of them, with hop limit 1 so nobody forwards), or for this node's children
in the record's dissemination tree (``GossipRouter``). The scan remembers the (lesson id,
version) pairs it enqueued, so a lesson is signed once per version; the outbox is idempotent
by (content hash, target), so a restart that scans again re-enqueues nothing already there.
The ``OutboxWorker`` then sends Publish RPCs with retry.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from lamarck.domain.rows import LessonFilter
from lamarck.errors import DeliveryFailed, NotFound
from lamarck.gossip.audience import BandOf, DeclaredProjects, peers_for
from lamarck.gossip.publisher import (
    PUBLISHED_STATUSES,
    GossipParams,
    lesson_version,
    may_publish,
    sign_lesson,
)
from lamarck.gossip.router import Forwardable, GossipRouter
from lamarck.node.gossip.outbox import Outbox, OutboxWorker
from lamarck.node.sharing.peer_client import PeerClient
from lamarck.node.store.port import LessonStore
from lamarck.policy.chain import build_policy
from lamarck.policy.decision import ImportParams, ImportPolicy
from lamarck.policy.self_check import own_record_refusal
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.identity import NodeIdentity
from lamarck.registry.directory import PeerInfo

__all__ = ["Publisher"]

_log = logging.getLogger("lamarck.node.sharing")

# Lessons read per page by the publish scan.
_PAGE = 500


class Publisher:
    """Scans, signs and enqueues this node's lessons; the outbox worker delivers them."""

    def __init__(
        self,
        store: LessonStore,
        identity: NodeIdentity,
        params: GossipParams,
        *,
        outbox: Outbox,
        router: GossipRouter,
        client: PeerClient,
        band_of: BandOf,
        declared: DeclaredProjects,
        peers: Callable[[], dict[str, PeerInfo]],
        incognito: bool,
        importing: ImportParams,
        import_policy: ImportPolicy | None = None,
    ) -> None:
        self._importing = importing
        # The checks a peer's pipeline runs, built once (the node passes its own).
        self._import_policy = import_policy or build_policy(importing)
        self._store = store
        self._identity = identity
        self.params = params
        self.outbox = outbox
        self._router = router
        self._client = client
        self._band_of = band_of
        self._declared = declared
        self._peers = peers
        self._incognito = incognito
        self._worker = OutboxWorker(outbox, self._send, self._load, params)
        # (lesson id, version) of own lessons already handed to the outbox in this run.
        self._enqueued: set[tuple[str, int]] = set()

    async def publish_once(self, now: datetime) -> int:
        """Enqueue new publishable lesson versions, then drain the outbox; returns the
        deliveries made in this round."""
        await self._scan(now)
        return await self._worker.run_once(now)

    def _direct(self) -> bool:
        """Whether the network is small enough for the origin to reach every peer itself."""
        return len(self._peers()) <= self.params.direct_push_max

    async def _scan(self, now: datetime) -> None:
        if self._incognito:
            return
        peers = sorted(self._peers())
        if not peers:
            return  # nobody to send to yet: the next round (or the peers' Sync) catches up
        # Retired and superseded lessons too: their newer version ends every copy.
        own = LessonFilter(statuses=PUBLISHED_STATUSES, imported=False)
        async for rows in self._store.scan(own, _PAGE):
            for row in rows:
                key = (row.id, lesson_version(row))
                if key in self._enqueued or not may_publish(row, self.params):
                    continue
                allowed = peers_for(
                    row.access_level,
                    peers,
                    self._band_of,
                    row.recipients,
                    scope=row.scope,
                    declared=self._declared,
                    shared_scopes=self.params.shared_scopes,
                    team_sharing=self.params.team_sharing,
                )
                if not allowed:
                    continue
                signed = sign_lesson(row, self._identity)
                # Never send what a peer's own import pipeline would refuse (and blame us for).
                refusal = own_record_refusal(
                    signed.raw, params=self._importing, now=now, policy=self._import_policy
                )
                if refusal is not None:
                    _log.warning(
                        "not publishing own lesson %s: peers would refuse it (%s)", row.id, refusal
                    )
                    self._enqueued.add(key)
                    continue
                if self._direct() or row.access_level != "public":
                    # Only public records are forwarded: the origin reaches the others itself.
                    targets = allowed
                else:
                    targets = self._router.children(
                        signed.content_hash, self._identity.node_id, allowed
                    )
                self._router.first_sight(signed.content_hash)
                await self.outbox.enqueue(row.id, signed.content_hash, targets, now)
                self._enqueued.add(key)

    async def _load(self, lesson_id: str, content_hash: str) -> bytes | None:
        """The signed bytes of a queued lesson version, or None once it changed or left."""
        try:
            row = await self._store.get_lesson(lesson_id)
        except NotFound:
            return None
        if not may_publish(row, self.params):
            return None
        signed = sign_lesson(row, self._identity)
        return signed.raw if signed.content_hash == content_hash else None

    async def _send(self, target: str, raws: Sequence[bytes]) -> None:
        direct = self._direct()
        try:
            # Direct push: a hop limit of 1 tells the receivers not to forward.
            await self._client.publish(target, raws, 0, hop_limit=1 if direct else None)
        except DeliveryFailed:
            if not direct:
                await self._cover(target, raws)
            raise  # the outbox retries the target itself with backoff

    async def _cover(self, failed: str, raws: Sequence[bytes]) -> None:
        """Reach the tree children of a first-hop peer that is down, so they need not wait."""
        me = self._identity.node_id
        public = [
            Forwardable(sha256_hex(raw), raw, me)
            for raw in raws
            if json.loads(raw).get("access_level", "public") == "public"
        ]
        if public:
            reached = await self._router.cover(
                public, failed, peers=self._peers(), hop_count=1, send=self.forward
            )
            _log.info("covered for unreachable %s: sent to %s", failed, reached)

    async def forward(self, target: str, raws: Sequence[bytes], hop_count: int) -> None:
        """Forward received public records one hop on (best effort: Sync repairs a loss)."""
        try:
            await self._client.publish(target, raws, hop_count)
        except DeliveryFailed as e:
            _log.info("forward to %s failed (Sync repairs it): %s", target, e)
            raise
