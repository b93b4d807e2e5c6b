"""The node daemon: one process owning a home's identity key, lesson store and gRPC servers.

Start-up, in order (each step is undone by :meth:`Node.stop`, whatever failed after it):

1. take ``<home>/node.lock`` (a second node on the same home is refused, naming the pid);
2. load the identity key, creating it on first start (``<home>/keys/identity.pem``);
3. the agent token, when the agent API listens beyond loopback (``<home>/agent.token``), and
   the operator token, always (``<home>/operator.token``: OperatorService and the console);
4. the embedder, and the Prometheus endpoint (``metrics_listen``, if set);
5. both gRPC servers, bound and started with health NOT_SERVING, so probes see the node
   come up while the store starts;
6. the store: the embedded PostgreSQL in ``<home>/pgdata`` unless ``database_url`` is set,
   migrated; then the lesson service, sharing (registry, gossip, import: ``lamarck.node.sharing``,
   degraded but never fatal when the registry is unreachable), and health turns SERVING;
7. ``<home>/node.json`` describes the running node (pid, node id, actual addresses, embedder,
   database) for the CLI and tests; it is removed on a clean stop.

Stopping (SIGTERM/SIGINT under :func:`run_node`): health NOT_SERVING, servers refuse new
calls and drain in-flight ones within ``drain_deadline_s``, stop hooks flush, the store
closes, the lock is released, exit code 0.

``python -m lamarck.node.daemon --home DIR --listen ADDR ...`` takes one flag per
``NodeSettings`` field (the same as ``lamarck node start``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import io
import json
import logging
import os
import random
import signal
import sys
import time
import typing
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from threadpoolctl import threadpool_limits

import lamarck
from lamarck.domain.embedder import Embedder
from lamarck.errors import ConfigError, LamarckError
from lamarck.health.render import gauge_values
from lamarck.node import metrics
from lamarck.node.api.agent_service import make_agent_servicer
from lamarck.node.api.network_side import NetworkSide
from lamarck.node.api.node_status import ReputationSource, peer_serving
from lamarck.node.api.operator_service import OperatorServicer, make_operator_servicer
from lamarck.node.api.ready import Ready
from lamarck.node.api.reputation import NodeReputation, Principals, store_tallies
from lamarck.node.api.server import NodeServers, build_servers
from lamarck.node.config import NodeSettings, load_settings
from lamarck.node.console.server import (
    ConsoleApp,
    ConsoleServer,
    console_hosts,
    new_csrf_token,
    new_secret,
    start_console,
)
from lamarck.node.embedding import make_embedder, token_counter
from lamarck.node.gossip.outbox import outbox_for
from lamarck.node.heap import limit_malloc_arenas
from lamarck.node.importing.batch import PrimedEmbedder
from lamarck.node.lessons.attested_support import SharingSupportReader
from lamarck.node.lessons.recall import authority_prototypes
from lamarck.node.lessons.service import LessonService
from lamarck.node.lock import HomeLock
from lamarck.node.logs import configure_logging, logs_are_json
from lamarck.node.maintenance import MaintenanceLoop
from lamarck.node.params import NodeParams, embedder_params, node_params, trust_config
from lamarck.node.peer_tls import PeerTls, peer_tls_for
from lamarck.node.sharing import Sharing
from lamarck.node.startup import (
    NODE_FILE,
    load_or_create_identity,
    peer_servicer,
    write_atomically,
)
from lamarck.node.store.embedded import EmbeddedPostgres
from lamarck.node.store.port import LessonStore
from lamarck.node.store.postgres import PostgresLessonStore
from lamarck.node.store.reputation import reputation_book_for
from lamarck.node.supervision import RegistryPart, StorePart, Supervised, Supervisor
from lamarck.proto.clock import Clock, SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.reputation.port import ReputationSink
from lamarck.token import (
    OPERATOR_TOKEN_FILE,
    TOKEN_FILE,
    ensure_agent_token,
    ensure_operator_token,
)

__all__ = [
    "Node",
    "StopHook",
    "main",
    "parse_args",
    "run_node",
    "serve",
]

# Named explicitly: run as `python -m`, __name__ would be "__main__".
_log = logging.getLogger("lamarck.node.daemon")

#: An async callable run after the servers drained and before the store closes.
StopHook = Callable[[], Awaitable[None]]
#: What the embedder embeds once at start-up, so the first call after SERVING finds the model
#: loaded (lazy sessions, caches) instead of paying seconds for it.
WARMUP_TEXT = "lamarck warm-up: load the embedding model before serving"


class Node:
    """One running node: :meth:`start`, serve until told, :meth:`stop`."""

    def __init__(self, settings: NodeSettings, *, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self._lock = HomeLock(settings.home)
        self._locked = False
        self._pg: EmbeddedPostgres | None = None
        self._store: PostgresLessonStore | None = None
        self._servers: NodeServers | None = None
        #: The OperatorService servicer (status, health and quarantine for the console too).
        self._operator: OperatorServicer | None = None
        # What start-up made before the servers: who the node is and how it is reached.
        self._identity: NodeIdentity | None = None
        self._embedder: Embedder | None = None
        self._peer_tls: PeerTls | None = None
        self._agent_token: str | None = None
        self._database = ""
        # The servers' bound addresses (host:port with the actual port).
        self._peer_address = ""
        self._agent_address = ""
        # The parts the servicers read once they exist (lamarck.node.api.ready): each refuses
        # "starting" until published here, so a servicer never sees a half-started node. The
        # store and the lesson service are published together and withdrawn at stop.
        self._ready_store: Ready[LessonStore] = Ready("the node")
        self._ready_lessons: Ready[LessonService] = Ready("the node")
        self._ready_book: Ready[ReputationSink] = Ready("the reputation book")
        self._ready_table: Ready[ReputationSource] = Ready("the reputation table")
        self._ready_network: Ready[NetworkSide] = Ready("sharing")
        self._metrics: metrics.MetricsServer | None = None
        self._refresher: metrics.StoreStatsRefresher | None = None
        self._sharing: Sharing | None = None
        self._maintenance: MaintenanceLoop | None = None
        self._health_metrics: metrics.HealthRefresher | None = None
        self._console: ConsoleServer | None = None
        self._console_login_url = ""
        self._supervisor: Supervisor | None = None
        self._warmup: asyncio.Task[None] | None = None
        #: Seconds the embedder's warm-up call took (``None`` until it ran).
        self.embedder_warmup_s: float | None = None
        self._stop_hooks: list[StopHook] = []
        self._node_file_written = False
        #: Every rule's parameters, built once at start (``node_params``).
        self.params: NodeParams | None = None
        #: Parts whose stop overran its bound and was left behind (see ``stop``).
        self.abandoned: list[str] = []

    # -- facts -----------------------------------------------------------------------------
    @property
    def home(self) -> Path:
        """The node's home directory."""
        return self.settings.home

    @property
    def metrics_url(self) -> str:
        """The Prometheus endpoint's URL, or ``""`` when metrics are off."""
        return self._metrics.url if self._metrics is not None else ""

    def describe(self) -> dict[str, Any]:
        """What ``node.json`` holds: pid, node id, actual addresses, embedder, database."""
        identity, embedder = self._identity, self._embedder
        if identity is None or embedder is None:
            raise ConfigError("the node is not started", reason="not_started")
        return {
            "pid": os.getpid(),
            "node_id": identity.node_id,
            "version": lamarck.__version__,
            "listen": self._peer_address,
            "advertise_address": self.settings.advertise_address,
            "peer_tls": "on" if self._peer_tls is not None else "off-insecure",
            "agent_listen": self._agent_address,
            "agent_token_file": str(self.home / TOKEN_FILE) if self._agent_token else "",
            "operator_token_file": str(self.home / OPERATOR_TOKEN_FILE),
            "metrics_listen": (
                f"{self._metrics.host}:{self._metrics.port}" if self._metrics else ""
            ),
            "metrics_url": self.metrics_url,
            "console_url": self._console.url if self._console is not None else "",
            # Good once: opens the operator's console session (node.json is mode 0600).
            "console_login_url": self._console_login_url if self._console is not None else "",
            "embedder": embedder.name,
            "embedding_dim": embedder.dim,
            "database": self._database,
            "serving": self._ready_store.is_set,
            "embedder_warmup_s": self.embedder_warmup_s,
        }

    def _require_params(self) -> NodeParams:
        if self.params is None:
            raise ConfigError("the node is not started", reason="not_started")
        return self.params

    def add_stop_hook(self, hook: StopHook) -> None:
        """Run ``hook`` at stop, after in-flight calls drained and before the store closes."""
        self._stop_hooks.append(hook)

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Start every part (see the module docstring); on failure, undo what started."""
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        settings = self.settings
        # (1) One node per home; the refusal names the running node's pid.
        self._lock.acquire()
        self._locked = True
        # (2) Identity: the key is the node id, so it must survive restarts.
        identity = load_or_create_identity(settings.home)
        # (3) Beyond loopback anyone who can reach the port could write lessons: token.
        token = None if settings.agent_is_local else ensure_agent_token(settings.home)
        # The operator's credential, wherever the node listens: OperatorService and the
        # console never answer an agent's token or a caller's locality.
        operator_token = ensure_operator_token(settings.home)
        # (4) The embedder may load a model (seconds): off the event loop.
        # Wrapped so catch-up and bundle imports can embed a chunk ahead of the pipeline
        # (node/importing/batch.py); every other call goes straight to the model.
        embedding = embedder_params(settings)
        made = await asyncio.to_thread(make_embedder, settings.embedder, onnx=embedding.onnx)
        embedder = PrimedEmbedder(made, embedding.batch_import)
        # `embedded` or `external` (never the DSN: it may hold a password).
        self._database = database = "external" if settings.database_url else "embedded"
        self._identity, self._embedder, self._agent_token = identity, embedder, token
        # Every rule's parameters, once: nothing below builds its own.
        self.params = params = node_params(settings, embedder, embedding)
        # The peer port's TLS key and certificate, made at first start next to the identity
        # key (warned at every start when off-insecure).
        self._peer_tls = peer_tls = peer_tls_for(
            settings.peer_tls,
            home=settings.home,
            node_id=identity.node_id,
            clock=self.clock,
            identity_key=identity.public_key_b64,
            cert_file=settings.peer_tls_cert_file,
            key_file=settings.peer_tls_key_file,
            ca_file=settings.peer_tls_ca_file,
        )
        metrics.export_peer_scores(settings.metrics_peer_scores)
        if settings.metrics_listen:
            try:
                self._metrics = metrics.start_metrics_server(settings.metrics_listen)
            except OSError as e:
                raise ConfigError(
                    f"cannot serve metrics on {settings.metrics_listen}: {e}",
                    reason="bind_failed",
                    field="metrics_listen",
                ) from e
        metrics.NODE_INFO.labels(
            node_id=identity.node_id,
            version=lamarck.__version__,
            embedder=embedder.name,
            database=database,
        ).set(1)
        # (5) Servers up first, NOT_SERVING: probes and node.json see the node starting.
        store_ready, network = self._ready_store, self._ready_network
        self._operator = make_operator_servicer(
            identity.node_id,
            self.clock,
            health=params.health,
            learning=params.learning,
            store=store_ready,
            network=network,
            book=self._ready_book,
            table=self._ready_table,
        )
        self._servers = servers = await build_servers(
            settings,
            peer_limits=params.peer_limits,
            peer_tls=peer_tls,
            operator_token=operator_token,
            agent_token=token,
            known_peer=self._known_peer,
            peer_servicer=lambda bound: peer_servicer(
                settings,
                identity,
                self.clock,
                params,
                bound_address=bound,
                store=store_ready,
                network=network,
            ),
            agent_servicer=make_agent_servicer(
                identity,
                self.clock,
                embedder,
                store=store_ready,
                lessons=self._ready_lessons,
                network=network,
                book=self._ready_book,
            ),
            operator_servicer=self._operator,
        )
        self._peer_address, self._agent_address = servers.peer_address, servers.agent_address
        self._write_node_file()
        # The model loads on its first call: make it now, on a thread, while the store starts.
        self._warmup = warmup = asyncio.create_task(self._warm_embedder(), name="embedder-warmup")
        # (6) The store. pgserver's start blocks (initdb on first start): off the loop.
        if settings.database_url:
            dsn = settings.database_url
        else:
            self._pg = EmbeddedPostgres(settings.home)
            dsn = await asyncio.to_thread(self._pg.start)
        self._store = store = await PostgresLessonStore.connect(
            dsn,
            embedder.dim,
            recall_index=params.recall_index,
            password=settings.database_password.get_secret_value()
            if settings.database_url
            else None,
        )
        lessons = LessonService(
            store,
            embedder,
            self.clock,
            params.learning,
            rng=random.Random(),
            token_counter=token_counter(params.learning.lesson.token_count_cache),
            transfer=params.transfer,
            max_future_skew_s=params.importing.max_future_skew_s,
            # Attestations kept and quorum certificates held, counted by principal in the
            # registry's view; no support until the sharing side runs.
            support=SharingSupportReader(
                lambda: self._sharing.support if self._sharing is not None else None
            ),
            # The authority topic in the embedder's space, where its vectors carry meaning
            # (embedded once, off the loop); the lexicon reads it everywhere.
            topics=await asyncio.to_thread(
                authority_prototypes, embedder, embedder.name, params.learning.influence
            ),
            own_id=identity.node_id,
        )
        # The reputation book is loaded before the node serves: a reality event from the
        # first outcome goes into it even while the network side is still starting.
        book = reputation_book_for(
            store, params.reputation, self.clock, trust=trust_config(params, identity.node_id)
        )
        await book.load()
        self._ready_table.set(
            NodeReputation(
                book,
                principals=self._principals,
                peers=self._live_peers,
                tallies=lambda: store_tallies(store),
            )
        )
        self._ready_book.set(book)
        # Published together: no await between them, so no call sees one without the other.
        self._ready_lessons.set(lessons)
        store_ready.set(store)
        # Claim vectors and use marks written behind replies: flushed before the store
        # closes, and any a crash lost are queued again now.
        self.add_stop_hook(lessons.close)
        await lessons.recover_write_behind()
        self._maintenance = MaintenanceLoop(lessons, params.maintenance, self.clock)
        self._maintenance.start()
        self._sharing = Sharing(
            settings,
            identity,
            self.clock,
            embedder,
            store,
            lessons,
            params=params,
            outbox=outbox_for(store),
            reputation=book,
            rng=random.Random(),
            peer_tls=peer_tls,
            peer_address=servers.peer_address,
        )
        await self._sharing.start()
        network.set(self._sharing)
        self._refresher = metrics.StoreStatsRefresher(
            self._store_stats, params.maintenance.store_stats_interval_s
        )
        self._refresher.start()
        # SERVING only once a call can be answered at once: the model is loaded.
        await warmup
        self._supervisor = Supervisor(
            self._supervised(store),
            self._part_changed,
            params.supervision,
            rng=random.Random(),
        )
        self._supervisor.start()
        await servers.set_serving(True)
        # The peer service follows admission (NOT_SERVING while this node cannot join its
        # network), checked now and at every health refresh; the gauges refresh with it.
        await self._status()
        self._health_metrics = metrics.HealthRefresher(
            self._health_gauges,
            settings.health_refresh_s,
            status=self._status,
            max_share=params.health.refresh_max_share,
        )
        self._health_metrics.start()
        if settings.console_listen:
            await self._start_console(operator_token)
        # (7) Tell the world.
        self._write_node_file()
        described = self.describe()
        described.pop("console_login_url")  # a credential: never in the logs
        _log.info("node serving", extra=described)

    async def _warm_embedder(self) -> None:
        """One embed call off the loop, timed (``embedder_warmup_s`` in ``node.json``)."""
        embedder = self._embedder
        if embedder is None:
            raise ConfigError("the node is not started", reason="not_started")
        started = time.monotonic()
        await asyncio.to_thread(embedder.embed, [WARMUP_TEXT])
        self.embedder_warmup_s = time.monotonic() - started
        _log.info("embedder warmed", extra={"seconds": round(self.embedder_warmup_s, 3)})

    def _supervised(self, store: PostgresLessonStore) -> list[Supervised]:
        """The parts the supervisor watches: the store, and the registry if the node owns it."""
        params = self._require_params().supervision
        parts: list[Supervised] = [StorePart(store, params.probe_timeout_s, embedded=self._pg)]
        sharing = self._sharing
        if sharing is not None and sharing.membership.owns_registry:
            parts.append(RegistryPart(sharing.membership))
        return parts

    async def _part_changed(self, name: str, up: bool) -> None:
        """A supervised part went down or answers again: health follows."""
        servers = self._servers
        if servers is None:
            return
        if name == StorePart.name:
            await servers.set_store_available(up)
        else:
            await servers.set_registry_available(up)

    def _known_peer(self, metadata: Any) -> str | None:
        """The node a call's peer token already proved, once the network side runs."""
        side = self._ready_network.peek()
        return side.membership.known_peer(metadata) if side is not None else None

    def _principals(self) -> Principals | None:
        """The registry's principal lookup, once the network side has a directory."""
        sharing = self._sharing
        directory = sharing.membership.directory if sharing is not None else None
        return directory.principals if directory is not None else None

    async def _live_peers(self) -> list[str]:
        sharing = self._sharing
        return sharing.membership.live_peers() if sharing is not None else []

    async def _status(self) -> dict[str, Any] | None:
        """The node status (as ``lamarck node status`` shows it); sets the peer health.

        ``None`` once the servers are stopping (there is no status to read any more). Its
        warnings are those of the report the refresh just computed for the gauges
        (``HealthParams.status_warnings_max_age_s``): one report per refresh.
        """
        servers, operator = self._servers, self._operator
        if servers is None or operator is None:
            return None
        data: dict[str, Any] = await operator.status()
        sharing = self._sharing
        network = await sharing.status.network_snapshot() if sharing is not None else None
        await servers.set_peer_serving(peer_serving(network))
        return data

    async def _health_gauges(self) -> dict[str, float]:
        """The health report's figures, for the ``lamarck_health`` gauges."""
        operator = self._operator
        if self._servers is None or operator is None:
            return {}
        return gauge_values(await operator.health_report())

    async def _start_console(self, operator_token: str) -> None:
        """Serve the operator console on ``console_listen``, behind the operator's login
        (``operator_token``); its one-time login URL goes to ``node.json`` (mode 0600) and the
        start-up summary."""
        settings, operator = self.settings, self._operator
        if self._servers is None or operator is None:
            return
        host = settings.console_listen.rpartition(":")[0].strip("[]")
        params = self._require_params()
        code = new_secret()
        lessons = self._ready_lessons
        app = ConsoleApp(
            operator,
            self._ready_store.get,
            reputation=self._ready_table.peek,
            params=params.console,
            plot=params.plot,
            csrf_token=new_csrf_token(),
            token=operator_token,
            hosts=console_hosts(host, settings.console_hosts),
            login_code=code,
            evidence=lambda rows: lessons.get().evidence(rows),
            reputation_params=params.reputation,
            wall_clock=self.clock,
        )
        self._console = await start_console(app, settings.console_listen, params=params.console)
        self._console_login_url = self._console.login_url(code)

    async def _store_stats(self) -> dict[str, int]:
        """Row counts by kind and status, plus the database's size on disk."""
        store = self._store
        if store is None:
            return {}
        stats = dict(await store.stats())
        stats[metrics.DATABASE_BYTES_KEY] = await store.database_bytes()
        # lamarck_store_records{kind="recall_index_lessons"}: whether recall searches in
        # memory (and over how many lessons) or in Postgres (0).
        stats["recall_index_lessons"] = store.recall_index_state.lessons
        return stats

    def _write_node_file(self) -> None:
        write_atomically(self.home / NODE_FILE, json.dumps(self.describe(), indent=2) + "\n")
        self._node_file_written = True

    async def stop(self) -> None:
        """Drain and release everything that was started; safe to call more than once.

        Each part gets a bounded time (``drain_deadline_s`` for the servers' drain plus
        ``stop_part_timeout_s``, the others ``stop_part_timeout_s``): a part that overruns is
        logged with its stack and left behind, so a stuck background loop or a gRPC server
        that never finishes its shutdown cannot keep the store open, the home locked or the
        process alive past its supervisor's patience. ``abandoned`` names what was left.
        """
        grace = self.settings.drain_deadline_s
        bound = self.settings.stop_part_timeout_s
        if self._servers is not None:
            servers, self._servers = self._servers, None
            # New calls are refused at once; in-flight ones get `grace` seconds to finish.
            await self._stop_part("servers", servers.stop(grace), grace + bound)
        # Withdraw the store: later calls are answered UNAVAILABLE while the node stops.
        self._ready_store.clear()
        self._ready_lessons.clear()
        if self._supervisor is not None:
            supervisor, self._supervisor = self._supervisor, None
            await self._stop_part("supervisor", supervisor.stop(), bound)
        if self._warmup is not None:
            # A start that failed before the warm-up was awaited: reap it.
            warmup, self._warmup = self._warmup, None
            warmup.cancel()
            await self._stop_part(
                "embedder warm-up", asyncio.gather(warmup, return_exceptions=True), bound
            )
        if self._refresher is not None:
            refresher, self._refresher = self._refresher, None
            await self._stop_part("store metrics", refresher.stop(), bound)
        if self._maintenance is not None:
            maintenance, self._maintenance = self._maintenance, None
            await self._stop_part("maintenance", maintenance.stop(), bound)
        if self._health_metrics is not None:
            health, self._health_metrics = self._health_metrics, None
            await self._stop_part("health metrics", health.stop(), bound)
        if self._console is not None:
            console, self._console = self._console, None
            await self._stop_part("console", console.stop(), bound)
        if self._sharing is not None:
            sharing, self._sharing = self._sharing, None
            self._ready_network.clear()
            await self._stop_part("sharing loops", sharing.stop_loops(), bound)
            # After the loops (no more emits from imports), before the store closes.
            await self._stop_part("reputation flush", sharing.flush_reputation(), bound)
            await self._stop_part("sharing", sharing.close(), bound)
        hooks, self._stop_hooks = self._stop_hooks, []
        for hook in hooks:
            # A failing flush must not keep the store open or the lock held.
            await self._stop_part("stop hook", hook(), bound)
        if self._store is not None:
            store, self._store = self._store, None
            await self._stop_part("store", store.close(), bound)
        if self._pg is not None:
            pg, self._pg = self._pg, None
            await self._stop_part("embedded postgres", asyncio.to_thread(pg.stop), bound)
        if self._metrics is not None:
            server, self._metrics = self._metrics, None
            await self._stop_part("metrics endpoint", asyncio.to_thread(server.stop), bound)
        if self._node_file_written:
            self._node_file_written = False
            with contextlib.suppress(FileNotFoundError):
                (self.home / NODE_FILE).unlink()
        if self._locked:
            self._locked = False
            self._lock.release()

    async def _stop_part(self, part: str, work: Awaitable[object], timeout_s: float) -> None:
        """Await one part's stop for at most ``timeout_s``; log a failure or an overrun.

        ``asyncio.wait`` rather than ``wait_for``: ``wait_for`` waits for the cancelled part
        to finish, which is exactly what a part that ignores cancellation never does.
        """
        task = asyncio.ensure_future(work)
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
        if not done:
            task.cancel()
            self.abandoned.append(part)
            where = io.StringIO()
            task.print_stack(file=where)
            stack = where.getvalue()
            _log.error(
                "stopping %s took longer than %.1f s; left behind",
                part,
                timeout_s,
                extra={"part": part, "timeout_s": timeout_s, "stack": stack},
            )
            return
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            # A failing part must not keep the store open or the home locked.
            _log.error("stopping %s failed", part, exc_info=error, extra={"part": part})


def database_where(dsn: str) -> str:
    """Which PostgreSQL database a DSN names, for people: database, host or socket folder and
    port; never the user's password."""
    parts = urllib.parse.urlsplit(dsn)
    query = urllib.parse.parse_qs(parts.query)
    name = parts.path.lstrip("/") or (query.get("dbname") or ["(default)"])[0]
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or (query.get("host") or ["localhost"])[0]
    at = f"{host}:{port}" if port else host
    return f"PostgreSQL database {name} at {at}"


def _summary(node: Node) -> str:
    info = node.describe()
    token = f" (bearer token in {info['agent_token_file']})" if info["agent_token_file"] else ""
    database = (
        f"embedded PostgreSQL in {node.home / 'pgdata'}"
        if info["database"] == "embedded"
        else f"{database_where(node.settings.database_url)} (database URL)"
    )
    lines = [
        f"lamarck node {info['node_id']} (pid {info['pid']}, home {node.home})",
        f"  peer API    {info['listen']}",
        f"  agent API   {info['agent_listen']}{token}",
        f"  operator    bearer token in {info['operator_token_file']}",
        f"  console     {info['console_login_url'] or 'off'}"
        + (" (one-time login URL)" if info["console_login_url"] else ""),
        f"  metrics     {info['metrics_url'] or 'off'}",
        f"  embedder    {info['embedder']} (dim {info['embedding_dim']})",
        f"  database    {database}",
    ]
    return "\n".join(lines)


async def serve(
    settings: NodeSettings, *, ready: Callable[[Node], None] | None = None
) -> list[str]:
    """Run a node until SIGTERM or SIGINT, then stop it cleanly; raise if it cannot start.

    Returns the parts whose stop overran and were left behind (``Node.abandoned``).
    """
    node = Node(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await node.start()
        # What exists now lives as long as the node (the model and its tokenizer, modules, the
        # parts): out of the collector's generations, a full collection no longer walks it,
        # ~93,000 objects with MiniLM (bench/peers: its one full collection 60 -> 5.5 ms, a
        # pause any call in flight waits out).
        gc.freeze()
        if logs_are_json():
            # One stream, one format: a log collector reads the banner as a JSON line too.
            _log.info("node started", extra=node.describe())
        else:
            print(_summary(node), flush=True)
        if ready is not None:
            ready(node)
        await stop.wait()
        _log.info("stopping", extra={"drain_deadline_s": settings.drain_deadline_s})
    finally:
        await node.stop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    _log.info("stopped", extra={"abandoned": node.abandoned})
    return node.abandoned


def run_node(settings: NodeSettings) -> None:
    """Configure logging and run the node in the foreground until SIGTERM/SIGINT.

    Returns normally after a clean stop (exit code 0); raises ``LamarckError`` (e.g.
    ``ConfigError(reason="already_running")`` naming the pid) when the node cannot start.
    """
    # Before any thread of the node starts: a thread keeps the arena it already has.
    limit_malloc_arenas(settings.malloc_arenas)
    # BLAS on one thread: the node's products are small (the recall index's search), and
    # split over threads they left them busy-waiting on the cores the model's next run needs.
    threadpool_limits(limits=1, user_api="blas")
    configure_logging(settings.log_format, settings.log_level)
    if settings.log_level != "DEBUG":
        # pgserver logs every command it runs, with full stdout, at INFO.
        logging.getLogger("pgserver").setLevel(logging.WARNING)
    runner = asyncio.Runner()
    try:
        abandoned = runner.run(serve(settings))
    except BaseException:
        runner.close()
        raise
    if abandoned:
        # Closing the loop would wait for the parts that already ignored their bound (it
        # cancels every task and joins every worker thread): the store is closed and the
        # home unlocked, so the process ends here instead of hanging its supervisor.
        logging.shutdown()
        sys.stdout.flush()
        os._exit(0)
    runner.close()


# -- command line -------------------------------------------------------------------------


def _flag_kind(annotation: Any) -> str:
    if annotation is bool:
        return "bool"
    if typing.get_origin(annotation) is tuple:
        return "list"
    return "value"


def parse_args(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Parse ``--field-name VALUE`` flags (one per ``NodeSettings`` field) into flags."""
    parser = argparse.ArgumentParser(
        prog="python -m lamarck.node.daemon",
        description="Run a lamarck node in the foreground (same flags as `lamarck node start`).",
    )
    for name, info in NodeSettings.model_fields.items():
        flag = "--" + name.replace("_", "-")
        kind = _flag_kind(info.annotation)
        if kind == "bool":
            parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction)
        elif kind == "list":
            parser.add_argument(
                flag, dest=name, action="append", metavar="VALUE", help="repeatable"
            )
        else:
            parser.add_argument(flag, dest=name, metavar="VALUE")
    return {k: v for k, v in vars(parser.parse_args(argv)).items() if v is not None}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m lamarck.node.daemon``; returns the exit code."""
    flags = parse_args(argv)
    try:
        run_node(load_settings(**flags))
    except ConfigError as e:
        print(f"lamarck: {e}", file=sys.stderr, flush=True)
        return 2
    except LamarckError as e:
        print(f"lamarck: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
