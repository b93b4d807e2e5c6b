"""``Sharing``: the node's network side — registry, publishing, gossip intake and anti-entropy.

Built by the daemon once the store is ready (:meth:`Sharing.start`), stopped before the store
closes (:meth:`Sharing.stop`). It owns:

* the **registry**: ``LAMARCK_REDIS_URL`` (namespace ``redis_namespace``), or an
  :class:`~lamarck.registry.embedded.EmbeddedRedis` in the home; wrapped in a
  :class:`~lamarck.registry.cache.CachedDirectory` (peer list and pins survive an outage) and
  kept live by a :class:`~lamarck.registry.client.RegistryClient` heartbeat task. When the
  registry cannot be reached the node still serves: sharing is degraded and says so in the log;
* the **import side**: :class:`~lamarck.node.importing.view.StoreImportView` and
  :class:`~lamarck.node.importing.pipeline.ImportPipeline`, used by ``PeerService.Publish``
  (:attr:`publish_deps`) and by Sync pulls;
* the **publish side**: a periodic scan (every ``gossip_interval_s``) of this node's lessons
  that :func:`~lamarck.node.gossip.publisher.may_publish`; each new (lesson id, version) is
  signed and enqueued in the durable Postgres outbox for every allowed live peer (up to
  ``direct_push_max`` of them), or for this node's children in the record's dissemination tree
  (:class:`~lamarck.node.gossip.router.GossipRouter`). The scan remembers the (lesson id,
  version) pairs it enqueued, so a lesson is signed once per version; the outbox is idempotent
  by (content hash, target), so a restart that scans again re-enqueues nothing already there
  (a restart may pick other fanout targets: they get a duplicate at worst). The
  :class:`~lamarck.node.gossip.outbox.OutboxWorker` then sends ``Publish`` RPCs with retry;
* **anti-entropy**: every ``anti_entropy_interval_s`` (and once at start) a ``Sync`` pull from
  each live peer, so a node that was down or partitioned catches up;
* **reputation**: a :class:`~lamarck.node.store.reputation.PostgresReputation` book, loaded
  before the import view, flushed every ``FLUSH_INTERVAL_S`` and at stop, so a restart keeps
  every penalty and every reality signal;
* **peer authentication**: our peer tokens on every Publish and Sync we send
  (:class:`~lamarck.node.api.peer_auth.PeerTokens`), and the check of the callers' ones
  (:meth:`authenticate`). With ``incognito`` set the node imports but shares nothing.

Every loop catches and logs its failures: a peer or registry outage never stops the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio

import lamarck
from lamarck.errors import (
    ConfigError,
    InvalidRecord,
    LamarckError,
    NotFound,
    RegistryError,
    StoreError,
    StoreUnavailable,
)
from lamarck.node.api.peer_auth import PeerAuthenticator, PeerTokens
from lamarck.node.api.peer_handlers import PublishDeps, shareable_records
from lamarck.node.gossip.outbox import OutboxWorker, PostgresOutbox
from lamarck.node.gossip.publisher import (
    PUBLISHED_STATUSES,
    GossipParams,
    lesson_version,
    may_publish,
    peers_for,
    sign_lesson,
)
from lamarck.node.gossip.router import Forwardable, GossipRouter
from lamarck.node.gossip.sync import SyncPage, SyncQuery, sync_step
from lamarck.node.importing.decision import ImportOutcome
from lamarck.node.importing.pipeline import ImportPipeline, ImportSource
from lamarck.node.importing.view import REGISTRY_DEPENDENT_REASONS, StoreImportView
from lamarck.node.store.port import LessonFilter
from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.node.store.reputation import FLUSH_INTERVAL_S, PostgresReputation
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.peer_auth import PeerAuthParams
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc, records_pb2
from lamarck.registry.cache import CachedDirectory
from lamarck.registry.client import RegistryClient
from lamarck.registry.directory import PeerInfo
from lamarck.registry.embedded import EmbeddedRedis
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import EnrollmentToken
from lamarck.registry.redis_directory import RedisPeerDirectory
from lamarck.reputation.params import ReputationParams

if TYPE_CHECKING:
    from lamarck.node.api.server import NodeContext

__all__ = [
    "ENROLLMENT_FILE",
    "PEER_CACHE_FILE",
    "ChannelPool",
    "DeliveryFailed",
    "Sharing",
    "read_enrollment",
]

_log = logging.getLogger("lamarck.node.sharing")

#: ``<home>/peers.json``: the cached peer list, pins and revocations.
PEER_CACHE_FILE = "peers.json"
#: ``<home>/enrollment.json``: this node's operator enrollment token, if it was given one.
ENROLLMENT_FILE = "enrollment.json"
# Lessons read per page by the publish scan.
_PAGE = 500
# Bound on one Publish or Sync RPC to a peer.
_RPC_TIMEOUT_S = 10.0


def read_enrollment(home: Path) -> EnrollmentToken | None:
    """This node's enrollment token from ``<home>/enrollment.json``, or None if there is none.

    A file that is there but unreadable or not a token is a ``ConfigError``: a node told to
    join with a token must not start as if it had none.
    """
    path = home / ENROLLMENT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e}", reason="bad_enrollment_file") from e
    try:
        return EnrollmentToken.from_wire(json.loads(text))
    except (ValueError, InvalidRecord) as e:
        raise ConfigError(
            f"{path} is not an enrollment token: {e}", reason="bad_enrollment_file"
        ) from e


class DeliveryFailed(LamarckError):
    """A peer did not take a batch (transport error, or acks saying "try again later")."""

    default_reason = "delivery_failed"


class ChannelPool:
    """One ``grpc.aio`` channel per peer address, reused across calls, closed together."""

    def __init__(self, options: Sequence[tuple[str, Any]] = ()) -> None:
        self._options = list(options)
        self._channels: dict[str, grpc.aio.Channel] = {}

    def stub(self, address: str) -> Any:
        """A PeerService stub over the (possibly new) channel to ``address``.

        Typed ``Any``: the generated stubs are typed for sync channels, not ``grpc.aio``.
        """
        channel = self._channels.get(address)
        if channel is None:
            channel = grpc.aio.insecure_channel(address, options=self._options)
            self._channels[address] = channel
        return peer_pb2_grpc.PeerServiceStub(channel)

    async def close(self) -> None:
        """Close every channel."""
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close(None)


class Sharing:
    """The node's registry membership, gossip publishing, intake and anti-entropy."""

    def __init__(
        self,
        ctx: NodeContext,
        store: PostgresLessonStore,
        *,
        gossip: GossipParams | None = None,
        registry: RegistryParams | None = None,
        rng: random.Random | None = None,
        auth: PeerAuthParams | None = None,
    ) -> None:
        settings = ctx.settings
        self._ctx = ctx
        self._store = store
        self._clock = ctx.clock
        self._identity = ctx.identity
        self.params = gossip or GossipParams(
            anti_entropy_interval_s=settings.anti_entropy_interval_s,
            publish_threshold=settings.publish_threshold,
            shared_scopes=frozenset(settings.shared_scopes),
            direct_push_max=settings.direct_push_max,
        )
        self._registry_params = registry or RegistryParams(
            admission=AdmissionMode(settings.admission)
        )
        self._rng = rng or random.Random()
        self._auth_params = auth or PeerAuthParams()
        #: Our peer tokens (caller side); the callee side needs the registry's pins.
        self.tokens = PeerTokens(self._identity, self._clock, self._auth_params)
        self.auth: PeerAuthenticator | None = None
        # Persisted in reputation_events: a restart keeps every penalty (issue 5).
        self.reputation = PostgresReputation(
            lambda: self._store.pool, ReputationParams(), self._clock
        )
        self._embedded: EmbeddedRedis | None = None
        self.directory: CachedDirectory | None = None
        self._client: RegistryClient | None = None
        self.view = StoreImportView(store, self.reputation, self._identity.node_id)
        self.router = GossipRouter(self.params, self._identity.node_id)
        self.pipeline: ImportPipeline | None = None
        self.outbox = PostgresOutbox(lambda: self._store.pool)
        self._worker = OutboxWorker(self.outbox, self._send, self._load, self.params)
        self._pool = ChannelPool(
            [
                ("grpc.max_send_message_length", settings.max_message_bytes),
                ("grpc.max_receive_message_length", settings.max_message_bytes),
            ]
        )
        self._peers: dict[str, PeerInfo] = {}
        # (lesson id, version) of own lessons already handed to the outbox in this run.
        self._enqueued: set[tuple[str, int]] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._forwards: set[asyncio.Task[None]] = set()
        # None until the first registry round; then whether the registry answered.
        self._registry_state: bool | None = None

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect the registry (degraded, not fatal, when unreachable), load the import
        indexes, register, and start the background loops."""
        settings = self._ctx.settings
        url = settings.redis_url
        if not url:
            self._embedded = EmbeddedRedis(settings.home)
            try:
                url = await self._embedded.start()
            except (RegistryError, OSError, ImportError) as e:
                _log.warning("embedded redis unavailable; sharing degraded: %s", e)
                self._embedded = None
        if url:
            inner = RedisPeerDirectory.from_url(
                url,
                namespace=settings.redis_namespace,
                params=self._registry_params,
                clock=self._clock,
                operator_public_key=settings.operator_public_key or None,
            )
            self.directory = CachedDirectory(
                inner, clock=self._clock, path=settings.home / PEER_CACHE_FILE
            )
            self.auth = PeerAuthenticator(
                self._identity.node_id, self.directory, self._clock, self._auth_params
            )
            mode = self._registry_params.admission
            if mode is AdmissionMode.OPEN:
                _log.warning("registry admission is 'open': unsafe outside tests and demos")
            elif not settings.operator_public_key:
                # Not fatal: the node still learns locally and serves its agent API.
                _log.warning(
                    "registry admission is '%s' but no operator_public_key is set: this node "
                    "can admit no one and join no network (see docs/operating.md)",
                    mode.value,
                )
            self._client = RegistryClient(
                self.directory,
                self._identity,
                address=self._ctx.peer_addresses[0] if self._ctx.peer_addresses else "",
                domains=tuple(settings.domains),
                version=lamarck.__version__,
                mode=self._registry_params.admission,
                clock=self._clock,
                enrollment_token=read_enrollment(settings.home),
            )
        # Built with or without a registry: bundles and approvals enter by it too (without
        # pins a peer's record is refused, a bundle's held as unknown_signer).
        self.pipeline = ImportPipeline(
            store=self._store,
            view=self.view,
            pins=self.directory,
            reputation=self.reputation,
            embedder=self._ctx.embedder,
            clock=self._clock,
            rng=self._rng,
        )
        await self.reputation.load()
        await self.view.load()
        # One round now, so the peer list is there before the first publish scan; the loop
        # then waits an interval before its next round.
        await self.registry_tick()
        self._spawn(
            "registry",
            self.registry_tick,
            self._registry_params.heartbeat_interval_s,
            wait_first=True,
        )
        self._spawn("publish", self.publish_once, settings.gossip_interval_s)
        self._spawn("anti-entropy", self.anti_entropy_once, self.params.anti_entropy_interval_s)
        self._spawn("reputation-flush", self.reputation.flush, FLUSH_INTERVAL_S)

    def _spawn(
        self,
        name: str,
        step: Callable[[], Awaitable[object]],
        every_s: float,
        *,
        wait_first: bool = False,
    ) -> None:
        loop = self._loop(name, step, every_s, wait_first=wait_first)
        self._tasks.append(asyncio.create_task(loop, name=name))

    async def _loop(
        self,
        name: str,
        step: Callable[[], Awaitable[object]],
        every_s: float,
        *,
        wait_first: bool,
    ) -> None:
        if wait_first:
            await asyncio.sleep(every_s)
        while True:
            try:
                await step()
            except asyncio.CancelledError:
                raise
            except Exception:  # a loop never dies: the next round retries
                _log.exception("sharing %s round failed", name)
            await asyncio.sleep(every_s)

    async def stop(self) -> None:
        """Cancel the loops, leave the live peer list, close channels and the registry."""
        tasks, self._tasks = [*self._tasks, *self._forwards], []
        self._forwards.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        # After the loops (no more emits from imports), before the store closes.
        try:
            await asyncio.wait_for(self.reputation.flush(), 5.0)
        except (StoreError, TimeoutError) as e:
            _log.error("%d reputation events not persisted at stop: %s", self.reputation.pending, e)
        if self._client is not None and self._client.registered:
            with contextlib.suppress(RegistryError, OSError):
                await asyncio.wait_for(self._client.deregister(), 2.0)
        await self._pool.close()
        if self.directory is not None:
            directory, self.directory = self.directory, None
            with contextlib.suppress(RegistryError, OSError):
                await directory.aclose()
        if self._embedded is not None:
            embedded, self._embedded = self._embedded, None
            try:
                await embedded.stop()
            except RegistryError:
                _log.exception("stopping the embedded redis failed")

    # -- registry -------------------------------------------------------------------------
    async def registry_tick(self) -> None:
        """Heartbeat or (re-)register, then refresh the peer list (outages are logged)."""
        if self._client is None or self.directory is None:
            return
        try:
            result = await self._client.tick()
            ok = await self.directory.refresh()
        except RegistryError as e:
            _log.error("registry refused this node: %s (%s)", e, e.reason)
            self._registry_state = False
            return
        if ok != self._registry_state:
            _log.log(
                logging.INFO if ok else logging.WARNING,
                "registry %s (%s)",
                "reachable" if ok else "unreachable; sharing from the peer cache",
                result.value,
            )
        self._registry_state = ok
        peers = await self.directory.live_peers()
        self._peers = {p.node_id: p for p in peers if p.node_id != self._identity.node_id}

    @property
    def registry_ok(self) -> bool:
        """Whether the registry answered the last round (else sharing runs from the cache)."""
        return bool(self._registry_state)

    async def live_peers(self) -> list[str]:
        """Ids of the live peers (other than this node) as last seen in the registry."""
        return sorted(self._peers)

    # -- intake ---------------------------------------------------------------------------
    async def authenticate(self, metadata: Any, claimed: str) -> str:
        """The proven id of a PeerService caller naming itself ``claimed`` (see ``peer_auth``)."""
        if self.auth is None:
            raise StoreUnavailable(
                "no registry: peers cannot be authenticated", reason="registry_unavailable"
            )
        return await self.auth.authenticate(metadata, claimed)

    @property
    def incognito(self) -> bool:
        """Whether this node shares nothing: no publishing, no forwarding, empty Syncs."""
        return self._ctx.settings.incognito

    @property
    def publish_deps(self) -> PublishDeps | None:
        """What ``PeerService.Publish`` needs; ``None`` while there is no registry at all."""
        if self.pipeline is None or self.directory is None:
            return None
        return PublishDeps(
            pipeline=self.pipeline,
            router=None if self.incognito else self.router,
            live_peers=self.live_peers,
            forward_send=None if self.incognito else self._forward,
            spawn=self._background,
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

    async def shareable(self, requester: str) -> dict[str, bytes]:
        """What this node may send ``requester`` in a Sync, by content hash."""
        if self.incognito:
            return {}
        return await shareable_records(
            self._store, self._identity, self.params, self.reputation, requester
        )

    # -- publishing -----------------------------------------------------------------------
    async def publish_once(self) -> int:
        """Enqueue new publishable lesson versions for a fanout, then drain the outbox.

        Returns the deliveries made in this round.
        """
        now = self._clock.now()
        await self._scan(now)
        return await self._worker.run_once(now)

    async def _scan(self, now: datetime) -> None:
        if self.incognito:
            return
        peers = await self.live_peers()
        if not peers:
            return  # nobody to send to yet: the next round (or the peers' Sync) catches up
        offset = 0
        while True:
            rows = await self._store.list_lessons(
                LessonFilter(
                    # Retired and superseded lessons too: their newer version ends every copy.
                    statuses=PUBLISHED_STATUSES,
                    imported=False,
                    limit=_PAGE,
                    offset=offset,
                )
            )
            for row in rows:
                key = (row.id, lesson_version(row))
                if key in self._enqueued or not may_publish(row, self.params):
                    continue
                allowed = peers_for(
                    row.access_level, peers, self.reputation, self.params, row.recipients
                )
                if not allowed:
                    continue
                signed = sign_lesson(row, self._identity)
                if self._direct() or row.access_level != "public":
                    # Only public records are forwarded: the origin reaches the others itself.
                    targets = allowed
                else:
                    targets = self.router.children(
                        signed.content_hash, self._identity.node_id, allowed
                    )
                self.router.first_sight(signed.content_hash)
                await self.outbox.enqueue(row.id, signed.content_hash, targets, now)
                self._enqueued.add(key)
            if len(rows) < _PAGE:
                return
            offset += _PAGE

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

    def _address(self, node_id: str) -> str:
        peer = self._peers.get(node_id)
        if peer is None or not peer.address:
            raise DeliveryFailed(f"peer {node_id} is not live", reason="peer_not_live")
        return peer.address

    async def _publish(
        self, target: str, raws: Sequence[bytes], hop_count: int, *, hop_limit: int | None = None
    ) -> None:
        """One Publish RPC; raises ``DeliveryFailed`` unless every record was decided."""
        request = peer_pb2.PublishRequest(
            records=[
                records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=raw)
                for raw in raws
            ],
            sender_node_id=self._identity.node_id,
            origin_node_id=self._identity.node_id if hop_count == 0 else "",
            hop_count=hop_count,
            hop_limit=self.params.hop_limit if hop_limit is None else hop_limit,
        )
        try:
            reply = await self._pool.stub(self._address(target)).Publish(
                request, timeout=_RPC_TIMEOUT_S, metadata=self.tokens.metadata(target)
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

    def _direct(self) -> bool:
        """Whether the network is small enough for the origin to reach every peer itself."""
        return len(self._peers) <= self.params.direct_push_max

    async def _send(self, target: str, raws: Sequence[bytes]) -> None:
        direct = self._direct()
        try:
            # Direct push: a hop limit of 1 tells the receivers not to forward.
            await self._publish(target, raws, 0, hop_limit=1 if direct else None)
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
            reached = await self.router.cover(
                public, failed, peers=self._peers, hop_count=1, send=self._forward
            )
            _log.info("covered for unreachable %s: sent to %s", failed, reached)

    async def _forward(self, target: str, raws: Sequence[bytes], hop_count: int) -> None:
        try:
            await self._publish(target, raws, hop_count)
        except DeliveryFailed as e:
            _log.info("forward to %s failed (Sync repairs it): %s", target, e)
            raise

    # -- anti-entropy ---------------------------------------------------------------------
    async def anti_entropy_once(self) -> int:
        """Pull what this node lacks from every live peer; returns records received."""
        if self.pipeline is None:
            return 0
        peers = await self.live_peers()
        if not peers:
            return 0
        # Read (and sign) what this node holds once per round, not once per peer; each pull
        # adds what it brought in.
        held = await self._held_hashes()
        received = 0
        for peer in peers:
            try:
                received += await self.sync_with(peer, held)
            except DeliveryFailed as e:
                _log.info("sync with %s failed: %s", peer, e)
        return received

    async def _held_hashes(self) -> set[str]:
        """What this node holds, by the same selection a Sync serves (also when incognito)."""
        held = await shareable_records(
            self._store, self._identity, self.params, self.reputation, self._identity.node_id
        )
        return set(held)

    async def sync_with(self, peer: str, held: set[str] | None = None) -> int:
        """One anti-entropy pull from ``peer``; ``held`` (what this node holds, by content
        hash) is read from the store when not given, and grows by what the pull stores."""
        pipeline = self.pipeline
        if pipeline is None:
            return 0
        stub = self._pool.stub(self._address(peer))
        mine = held if held is not None else await self._held_hashes()

        async def fetch(query: SyncQuery) -> SyncPage:
            request = peer_pb2.SyncRequest(
                requester_node_id=self._identity.node_id,
                cursor=query.cursor,
                buckets=[
                    peer_pb2.HashBucket(prefix=p, count=b.count, digest=b.digest)
                    for p, b in (query.buckets or {}).items()
                ],
                max_records=query.max_records,
            )
            records: list[tuple[str, bytes]] = []
            cursor, more = query.cursor, False
            try:
                calls = stub.Sync(
                    request, timeout=_RPC_TIMEOUT_S, metadata=self.tokens.metadata(peer)
                )
                async for page in calls:
                    records += [
                        (sha256_hex(r.canonical_json), r.canonical_json) for r in page.records
                    ]
                    cursor, more = page.cursor, page.more
            except grpc.aio.AioRpcError as e:
                raise DeliveryFailed(
                    f"Sync from {peer}: {e.code().name}", reason="rpc_failed"
                ) from e
            return SyncPage(records=tuple(records), cursor=cursor, more=more)

        async def importer(raw: bytes) -> object:
            # Only StoreUnavailable escapes the pipeline (the store is down: the round stops);
            # a bad record is its own REJECT and the round goes on.
            result = await pipeline.import_record(raw, source=ImportSource.SYNC, via_node_id=peer)
            if result.outcome in (ImportOutcome.ACCEPT, ImportOutcome.DUPLICATE):
                mine.add(result.content_hash)
            return result

        return await sync_step(
            mine,
            fetch,
            importer,
            prefix_len=self.params.sync_prefix_len,
            page_size=self.params.batch_size,
        )
