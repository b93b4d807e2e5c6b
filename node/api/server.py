"""The node's two gRPC servers.

* The **peer server** (``listen``) serves ``PeerService`` with per-peer limits.
* The **agent server** (``agent_listen``) serves ``AgentService``; when it listens beyond
  loopback every call needs the agent token (``lamarck.token``). It also serves
  ``OperatorService``, whose every call needs the operator token, loopback included: an
  agent's credential (or its mere locality) never reaches an operator action.

Both also serve the standard ``grpc.health.v1.Health`` service and server reflection, so
``grpcurl`` and Kubernetes probes work without lamarck's stubs. They are separate servers
(not one server with two ports) so the agent API can carry its own auth interceptor.

The daemon builds the servicers before the store is ready: the servers bind and answer health
(NOT_SERVING) while the embedded Postgres starts; a call that needs the store meanwhile is
answered UNAVAILABLE (``StoreUnavailable(reason="starting")``, from the servicer's
``lamarck.node.api.ready`` accessors).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from lamarck.errors import ConfigError
from lamarck.node.api.interceptors import (
    AuthInterceptor,
    DeadlineInterceptor,
    ErrorInterceptor,
    MetricsInterceptor,
    PeerLimitInterceptor,
)
from lamarck.node.api.limits import PeerLimits
from lamarck.node.config import NodeSettings
from lamarck.node.peer_tls import PeerTls
from lamarck.proto.v1 import (
    agent_pb2,
    agent_pb2_grpc,
    operator_pb2,
    operator_pb2_grpc,
    peer_pb2,
    peer_pb2_grpc,
)

__all__ = [
    "AGENT_SERVICE",
    "HEALTH_SERVICE",
    "OPERATOR_SERVICE",
    "PEER_SERVICE",
    "NodeServers",
    "PeerServicerFactory",
    "UnimplementedAgentService",
    "build_servers",
    "server_options",
]

PEER_SERVICE: str = peer_pb2.DESCRIPTOR.services_by_name["PeerService"].full_name
AGENT_SERVICE: str = agent_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name
HEALTH_SERVICE: str = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
OPERATOR_SERVICE: str = operator_pb2.DESCRIPTOR.services_by_name["OperatorService"].full_name


#: Builds the PeerService servicer once the peer port is bound, from the bound address.
PeerServicerFactory = Callable[[str], peer_pb2_grpc.PeerServiceServicer]


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
    settings: NodeSettings,
    *,
    peer_limits: PeerLimits,
    peer_tls: PeerTls | None,
    operator_token: str,
    agent_token: str | None,
    known_peer: Callable[[Any], str | None],
    peer_servicer: PeerServicerFactory,
    agent_servicer: agent_pb2_grpc.AgentServiceServicer,
    operator_servicer: operator_pb2_grpc.OperatorServiceServicer,
) -> NodeServers:
    """Bind, populate and start both servers; health reports NOT_SERVING until told.

    ``peer_tls`` is the peer port's mutual TLS (``None`` when the node runs
    ``off-insecure``); ``known_peer`` names the node a call's peer token already proved (the
    network side's cache), else ``None``. The operator's desk shares the agent server's port,
    on its own credential (the AuthInterceptor asks OperatorService calls for the operator
    token).
    """
    deadline = DeadlineInterceptor(settings.rpc_deadline_s)
    peer = _new_server(
        settings,
        [
            MetricsInterceptor("peer"),
            ErrorInterceptor(),
            PeerLimitInterceptor.from_params(
                peer_limits,
                # An authenticated caller is budgeted by its node id, anyone else by its
                # connection: never by the id a request merely claims.
                identify=known_peer,
            ),
            deadline,
        ],
    )
    auth = AuthInterceptor(operator_token=operator_token, agent_token=agent_token)
    agent_chain: list[Any] = [MetricsInterceptor("agent"), ErrorInterceptor(), auth, deadline]
    agent = _new_server(settings, agent_chain)

    # Mutual TLS unless the node runs off-insecure (lamarck.node.peer_tls).
    tls = peer_tls.server_credentials() if peer_tls is not None else None
    peer_address = _bind(peer, settings.listen, "listen", tls)
    agent_address = _bind(agent, settings.agent_listen, "agent_listen")

    health = HealthServicer()
    for server, services in ((peer, (PEER_SERVICE,)), (agent, (AGENT_SERVICE, OPERATOR_SERVICE))):
        health_pb2_grpc.add_HealthServicer_to_server(health, server)
        reflection.enable_server_reflection(
            (*services, HEALTH_SERVICE, reflection.SERVICE_NAME), server
        )
    peer_pb2_grpc.add_PeerServiceServicer_to_server(peer_servicer(peer_address), peer)
    agent_pb2_grpc.add_AgentServiceServicer_to_server(agent_servicer, agent)
    operator_pb2_grpc.add_OperatorServiceServicer_to_server(operator_servicer, agent)

    servers = NodeServers(peer, agent, health, peer_address, agent_address)
    await servers.set_serving(False)
    await peer.start()
    await agent.start()
    return servers
