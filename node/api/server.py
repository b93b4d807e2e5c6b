"""The node's two gRPC servers and what every service reads: :class:`NodeContext`.

* The **peer server** (``listen``) serves ``PeerService`` with per-peer limits.
* The **agent server** (``agent_listen``) serves ``AgentService``; when it listens beyond
  loopback every call needs the agent token (``lamarck.token``). It also serves
  ``OperatorService``, whose every call needs the operator token, loopback included: an
  agent's credential (or its mere locality) never reaches an operator action.

Both also serve the standard ``grpc.health.v1.Health`` service and server reflection, so
``grpcurl`` and Kubernetes probes work without lamarck's stubs. They are separate servers
(not one server with two ports) so the agent API can carry its own auth interceptor.

Servicers are built by factories taking the :class:`NodeContext`, which exists before the
store is ready: the servers bind and answer health (NOT_SERVING) while the embedded
Postgres starts; a call that needs the store meanwhile is answered UNAVAILABLE
(``StoreUnavailable(reason="starting")``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from lamarck.consensus.params import QuorumParams
from lamarck.domain.embedder import Embedder
from lamarck.errors import ConfigError, StoreUnavailable
from lamarck.health.params import HealthParams
from lamarck.learning.params import LearningParams
from lamarck.node.api.interceptors import (
    AuthInterceptor,
    DeadlineInterceptor,
    ErrorInterceptor,
    MetricsInterceptor,
    PeerLimitInterceptor,
)
from lamarck.node.api.limits import PeerLimits
from lamarck.node.api.network_side import NetworkSide
from lamarck.node.api.node_status import ReputationSource
from lamarck.node.config import NodeSettings
from lamarck.node.lessons.service import LessonService
from lamarck.node.peer_tls import PeerTls
from lamarck.node.store.port import LessonStore
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.v1 import (
    agent_pb2,
    agent_pb2_grpc,
    operator_pb2,
    operator_pb2_grpc,
    peer_pb2,
    peer_pb2_grpc,
)
from lamarck.reputation.params import ReputationParams
from lamarck.reputation.port import ReputationSink, ReputationView

if TYPE_CHECKING:
    from lamarck.node.importing.pipeline import ImportPipeline

__all__ = [
    "AGENT_SERVICE",
    "HEALTH_SERVICE",
    "OPERATOR_SERVICE",
    "PEER_SERVICE",
    "AgentServicerFactory",
    "NodeContext",
    "NodeServers",
    "PeerServicerFactory",
    "Provider",
    "UnimplementedAgentService",
    "build_servers",
    "provider_of",
    "server_options",
]

_T = TypeVar("_T")
#: A zero-argument callable a servicer reads on each call (the daemon's store, service...).
Provider = Callable[[], _T]


def provider_of(value: _T | Provider[_T], kind: type[Any]) -> Provider[_T]:
    """``value`` as a provider: an instance of ``kind`` is wrapped, a callable kept as is."""
    if isinstance(value, kind):
        return lambda: value
    if callable(value):
        return value
    raise TypeError(f"expected a {kind.__name__} or a callable returning one")


PEER_SERVICE: str = peer_pb2.DESCRIPTOR.services_by_name["PeerService"].full_name
AGENT_SERVICE: str = agent_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name
HEALTH_SERVICE: str = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
OPERATOR_SERVICE: str = operator_pb2.DESCRIPTOR.services_by_name["OperatorService"].full_name


@dataclass
class NodeContext:
    """What servicers read: settings, identity, clock, addresses, and (once ready) the store.

    ``store`` and ``lessons`` raise ``StoreUnavailable(reason="starting")`` until the daemon
    has migrated the store, so a servicer never sees a half-started node.
    """

    settings: NodeSettings
    identity: NodeIdentity
    clock: Clock
    embedder: Embedder
    # The pieces of the node's one ``NodeParams`` the servicers read (``node_context`` in the
    # daemon takes them from the tree; this package never imports it).
    #: Per-peer limits (the peer server's interceptor and PeerService).
    peer_limits: PeerLimits
    #: How this node votes when a peer asks (RequestVote).
    quorum: QuorumParams
    #: The one clock-skew tolerance (records, registry records and votes alike).
    max_future_skew_s: float
    #: The health report's windows and thresholds (OperatorService.GetHealth).
    health: HealthParams
    #: The learning rules (the learned variables in the health report).
    learning: LearningParams
    #: The reputation thresholds (the score of a node before the book is loaded).
    reputation_params: ReputationParams
    #: Actual peer-facing addresses (``host:port`` with the bound port), preferred first.
    peer_addresses: list[str] = field(default_factory=list)
    #: Actual agent-facing address.
    agent_address: str = ""
    #: The peer port's mutual TLS; ``None`` when the node runs ``off-insecure``.
    peer_tls: PeerTls | None = None
    #: ``embedded`` or ``external`` (never the DSN: it may hold a password).
    database: str = ""
    #: The agent API's bearer token when it listens beyond loopback, else ``None``.
    agent_token: str | None = None
    #: The operator's bearer token (``<home>/operator.token``): every OperatorService call
    #: and console session needs it. ``None`` only in a context that serves no agent server.
    operator_token: str | None = None
    #: The network side (registry, gossip, import), once the daemon started it; else ``None``.
    sharing: NetworkSide | None = None
    #: The operator's reputation table over the node's book, once it is loaded.
    reputation_table: ReputationSource | None = None
    _store: LessonStore | None = None
    _lessons: LessonService | None = None
    _reputation: ReputationSink | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def home(self) -> Path:
        """The node's home directory."""
        return self.settings.home

    @property
    def ready(self) -> bool:
        """True once the store is migrated and the lesson service built."""
        return self._ready.is_set()

    async def wait_ready(self) -> None:
        """Wait until the store is ready."""
        await self._ready.wait()

    def set_ready(
        self, store: LessonStore, lessons: LessonService, reputation: ReputationSink | None = None
    ) -> None:
        """Publish the store, the lesson service and the (loaded) reputation book, called once
        by the daemon before any agent call is served: a reality event from the first outcome
        lands in the book even while the network side is still starting."""
        self._store, self._lessons, self._reputation = store, lessons, reputation
        self._ready.set()

    def set_stopping(self) -> None:
        """Withdraw the store: later calls are answered UNAVAILABLE while the node stops."""
        self._ready.clear()

    @property
    def store(self) -> LessonStore:
        """The lesson store; ``StoreUnavailable(reason="starting")`` before it is ready."""
        if self._store is None or not self._ready.is_set():
            raise StoreUnavailable("the node is starting or stopping", reason="starting")
        return self._store

    @property
    def lessons(self) -> LessonService:
        """The lesson service; ``StoreUnavailable(reason="starting")`` before it is ready."""
        if self._lessons is None or not self._ready.is_set():
            raise StoreUnavailable("the node is starting or stopping", reason="starting")
        return self._lessons

    def reputation_score(self, node_id: str) -> float:
        """``node_id``'s score in the node's reputation book; before the book is loaded, the
        score of a newly admitted node."""
        book = self._reputation
        if isinstance(book, ReputationView):
            return book.score(node_id)
        return self.reputation_params.initial_score

    def import_pipeline(self) -> ImportPipeline:
        """The node's one import pipeline (every record from another node enters by it);
        ``StoreUnavailable(reason="starting")`` until the sharing side has built it."""
        pipeline = self.sharing.pipeline if self.sharing is not None else None
        if pipeline is None or not self._ready.is_set():
            raise StoreUnavailable("the node is starting or stopping", reason="starting")
        return pipeline

    def reputation_sink(self) -> ReputationSink | None:
        """Where reputation events go: the node's book (loaded before the node serves)."""
        return self._reputation


#: Builds the PeerService servicer from the node context.
PeerServicerFactory = Callable[[NodeContext], peer_pb2_grpc.PeerServiceServicer]
#: Builds the AgentService servicer from the node context.
AgentServicerFactory = Callable[[NodeContext], agent_pb2_grpc.AgentServiceServicer]


class UnimplementedAgentService(agent_pb2_grpc.AgentServiceServicer):
    """Placeholder AgentService answering UNIMPLEMENTED, until the real one is installed."""

    async def _unimplemented(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "AgentService is not installed")

    async def RecordOutcome(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)

    async def Recall(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)

    async def CheckOperation(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)

    async def Remember(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)

    async def ReportUse(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)

    async def Edit(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)

    async def Retire(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)

    async def History(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)

    async def List(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)

    async def Export(self, request: Any, context: Any) -> AsyncIterator[Any]:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)
        yield None  # unreachable: makes this the async generator a response stream is

    async def Import(self, request_iterator: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)

    async def RecordSituation(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)

    async def GetLesson(self, request: Any, context: Any) -> Any:
        """UNIMPLEMENTED."""
        await self._unimplemented(context)


def server_options(settings: NodeSettings) -> list[tuple[str, Any]]:
    """Channel options of both servers: message size caps and keepalive hygiene."""
    return [
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        # A peer that pings more often than every 10 s without calls is abusive; drop it.
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.so_reuseport", 0),
    ]


def _bind(
    server: grpc.aio.Server,
    address: str,
    what: str,
    credentials: grpc.ServerCredentials | None = None,
) -> str:
    """Bind ``address`` (with TLS when ``credentials`` are given) and return it with the
    actual port (for ``:0``)."""
    try:
        if credentials is not None:
            port = server.add_secure_port(address, credentials)
        else:
            port = server.add_insecure_port(address)
    except RuntimeError as e:
        raise ConfigError(f"cannot listen on {address} ({what}): {e}", reason="bind_failed") from e
    if address.startswith("unix:"):
        return address
    if port == 0:
        raise ConfigError(f"cannot listen on {address} ({what})", reason="bind_failed")
    host = address.rpartition(":")[0]
    return f"{host}:{port}"


@dataclass
class NodeServers:
    """The two started servers, their bound addresses, and the shared health servicer."""

    peer: grpc.aio.Server
    agent: grpc.aio.Server
    health: HealthServicer
    peer_address: str
    agent_address: str
    #: The OperatorService servicer (status, health and quarantine for the console too).
    operator: Any = None

    #: Whether the node started serving (``set_serving``), the store answers, the registry
    #: this node owns answers, and the node is in its network (admission).
    _serving: bool = False
    _store_ok: bool = True
    _registry_ok: bool = True
    _admitted: bool = True

    async def set_peer_serving(self, serving: bool) -> None:
        """Report the peer service's admission: NOT_SERVING while the node cannot join its
        network (refused, or never admitted), whatever the rest of the node can answer."""
        self._admitted = serving
        await self._publish()

    async def set_store_available(self, available: bool) -> None:
        """The store answers (or not): while it does not, the node and both services are
        NOT_SERVING (``lamarck.node.supervision``)."""
        self._store_ok = available
        await self._publish()

    async def set_registry_available(self, available: bool) -> None:
        """The registry this node owns answers (or not): while it does not, the peer service
        is NOT_SERVING."""
        self._registry_ok = available
        await self._publish()

    async def set_serving(self, serving: bool) -> None:
        """Report SERVING (or NOT_SERVING) for the whole node and both services; SERVING only
        as far as the store, the registry and admission allow."""
        self._serving = serving
        await self._publish()

    @property
    def serving(self) -> bool:
        """Whether the node as a whole reports SERVING."""
        return self._serving and self._store_ok

    async def _publish(self) -> None:
        node = self.serving
        peer = node and self._registry_ok and self._admitted
        for name, up in (("", node), (AGENT_SERVICE, node), (PEER_SERVICE, peer)):
            await self.health.set(
                name,
                health_pb2.HealthCheckResponse.SERVING
                if up
                else health_pb2.HealthCheckResponse.NOT_SERVING,
            )

    async def stop(self, grace_s: float) -> None:
        """Refuse new calls, let in-flight calls finish within ``grace_s``, then cancel."""
        await self.health.enter_graceful_shutdown()
        await asyncio.gather(self.peer.stop(grace_s), self.agent.stop(grace_s))


def _new_server(settings: NodeSettings, interceptors: Sequence[Any]) -> grpc.aio.Server:
    return grpc.aio.server(interceptors=list(interceptors), options=server_options(settings))


async def build_servers(
    ctx: NodeContext,
    *,
    peer_factory: PeerServicerFactory,
    agent_factory: AgentServicerFactory,
) -> NodeServers:
    """Bind, populate and start both servers; health reports NOT_SERVING until told."""
    settings = ctx.settings
    deadline = DeadlineInterceptor(settings.rpc_deadline_s)
    peer = _new_server(
        settings,
        [
            MetricsInterceptor("peer"),
            ErrorInterceptor(),
            PeerLimitInterceptor.from_params(
                ctx.peer_limits,
                # An authenticated caller is budgeted by its node id, anyone else by its
                # connection: never by the id a request merely claims.
                identify=lambda md: ctx.sharing.known_peer(md) if ctx.sharing is not None else None,
            ),
            deadline,
        ],
    )
    if ctx.operator_token is None:
        raise ConfigError("the agent server needs the operator token", reason="no_operator_token")
    auth = AuthInterceptor(operator_token=ctx.operator_token, agent_token=ctx.agent_token)
    agent_chain: list[Any] = [MetricsInterceptor("agent"), ErrorInterceptor(), auth, deadline]
    agent = _new_server(settings, agent_chain)

    # Mutual TLS unless the node runs off-insecure (lamarck.node.peer_tls).
    tls = ctx.peer_tls.server_credentials() if ctx.peer_tls is not None else None
    peer_address = _bind(peer, settings.listen, "listen", tls)
    agent_address = _bind(agent, settings.agent_listen, "agent_listen")
    ctx.peer_addresses = [peer_address]
    ctx.agent_address = agent_address

    health = HealthServicer()
    for server, services in ((peer, (PEER_SERVICE,)), (agent, (AGENT_SERVICE, OPERATOR_SERVICE))):
        health_pb2_grpc.add_HealthServicer_to_server(health, server)
        reflection.enable_server_reflection(
            (*services, HEALTH_SERVICE, reflection.SERVICE_NAME), server
        )
    peer_pb2_grpc.add_PeerServiceServicer_to_server(peer_factory(ctx), peer)
    agent_pb2_grpc.add_AgentServiceServicer_to_server(agent_factory(ctx), agent)
    # The operator's desk shares the agent server's port, on its own credential (the
    # AuthInterceptor asks OperatorService calls for the operator token). Imported here:
    # the servicer module imports NodeContext from this one.
    from lamarck.node.api.operator_service import make_operator_servicer

    operator = make_operator_servicer(
        ctx,
        network=lambda: ctx.sharing.network_snapshot if ctx.sharing is not None else None,
        reputation=lambda: ctx.reputation_table,
    )
    operator_pb2_grpc.add_OperatorServiceServicer_to_server(operator, agent)

    servers = NodeServers(peer, agent, health, peer_address, agent_address, operator)
    await servers.set_serving(False)
    await peer.start()
    await agent.start()
    return servers
