"""The daemon's gRPC edge in process: real grpc.aio servers from ``build_servers``, real channels.

The servicer is PeerService with GetIdentity replaced by a scripted one (the nonce says what
to do), so every call goes through the node's real interceptor chain: metrics, error mapping,
per-peer limits, default deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lamarck.errors import NotFound
from lamarck.node.api.peer_service import PeerService
from lamarck.node.api.server import NodeServers
from lamarck.node.config import NodeSettings, load_settings
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc
from tests.factories import serve_node

pytestmark = pytest.mark.integration


class ScriptedPeerService(PeerService):
    """GetIdentity acts out its nonce: ``boom``, ``missing``, ``sleep:<s>``, else answers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.finished = 0
        # Set when a call is inside the handler: tests await it instead of guessing a delay.
        self.entered = asyncio.Event()

    async def GetIdentity(self, request: Any, context: Any) -> Any:
        """Scripted behaviour (see the class docstring)."""
        nonce = request.nonce.decode()
        self.entered.set()
        if nonce == "boom":
            raise RuntimeError("password=hunter2 in an internal error")
        if nonce == "missing":
            raise NotFound("no such lesson", reason="not_found", ids=["l1"])
        if nonce.startswith("sleep:"):
            await asyncio.sleep(float(nonce.split(":", 1)[1]))
        self.finished += 1
        return peer_pb2.GetIdentityResponse(node_id=self._identity.node_id)


Started = tuple[NodeServers, ScriptedPeerService, NodeSettings]


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """``await start(**settings)`` → (servers, servicer, settings); all stopped at teardown."""
    running: list[NodeServers] = []

    async def _start(**flags: Any) -> Started:
        given = {"listen": "127.0.0.1:0", "agent_listen": "127.0.0.1:0", **flags}
        settings = load_settings(home=tmp_path, **given)
        served = await serve_node(
            settings,
            identity=NodeIdentity.generate(),
            clock=SystemClock(),
            operator_token="operator-secret",
            peer_kind=ScriptedPeerService,
        )
        running.append(served.servers)
        assert isinstance(served.peer, ScriptedPeerService)
        return served.servers, served.peer, settings

    yield _start
    for servers in running:
        await servers.stop(0)


async def _identity(address: str, nonce: bytes = b"", deadline_s: float | None = 5) -> Any:
    async with grpc.aio.insecure_channel(address) as channel:
        return await peer_pb2_grpc.PeerServiceStub(channel).GetIdentity(
            peer_pb2.GetIdentityRequest(nonce=nonce), timeout=deadline_s
        )


def _error_info(err: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo:
    trailers = dict(err.trailing_metadata() or ())
    status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert status.code == err.code().value[0]
    return info


async def test_health_is_not_serving_until_the_store_is_ready(start: Any) -> None:
    servers, _, _ = await start()
    async with grpc.aio.insecure_channel(servers.peer_address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        before = await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)
        await servers.set_serving(True)
        after = await stub.Check(
            health_pb2.HealthCheckRequest(service="lamarck.v1.PeerService"), timeout=5
        )
    assert before.status == health_pb2.HealthCheckResponse.NOT_SERVING
    assert after.status == health_pb2.HealthCheckResponse.SERVING


async def test_a_typed_error_maps_to_its_status_with_error_info_and_reason(start: Any) -> None:
    servers, _, _ = await start()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _identity(servers.peer_address, b"missing")
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    info = _error_info(caught.value)
    assert (info.reason, info.domain) == ("not_found", "lamarck.dev")
    assert info.metadata["type"] == "NotFound"
    assert dict(caught.value.trailing_metadata() or ())["lamarck-reason"] == "not_found"


async def test_an_unexpected_exception_is_internal_and_leaks_nothing(start: Any) -> None:
    servers, _, _ = await start()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _identity(servers.peer_address, b"boom")
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert "hunter2" not in (caught.value.details() or "")
    assert "incident" in (caught.value.details() or "")
    assert dict(caught.value.trailing_metadata() or ())["lamarck-reason"] == "internal"


async def test_a_peer_over_its_token_bucket_is_rate_limited(start: Any) -> None:
    servers, _, _ = await start(peer_burst=3, peer_rate_per_s=0.001)
    for _ in range(3):
        await _identity(servers.peer_address)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _identity(servers.peer_address)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert _error_info(caught.value).reason == "rate_limited"
    # Health is not a PeerService method: probes are never rate limited.
    async with grpc.aio.insecure_channel(servers.peer_address) as channel:
        await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())


async def test_a_peer_over_its_concurrency_limit_is_refused(start: Any) -> None:
    servers, servicer, _ = await start(peer_max_concurrent=1)
    slow = asyncio.create_task(_identity(servers.peer_address, b"sleep:0.3"))
    await asyncio.wait_for(servicer.entered.wait(), 5)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _identity(servers.peer_address)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert _error_info(caught.value).reason == "too_many_concurrent"
    await slow


async def test_a_call_without_client_deadline_gets_the_server_default(start: Any) -> None:
    servers, _, _ = await start(rpc_deadline_s=0.2)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _identity(servers.peer_address, b"sleep:5", deadline_s=None)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert dict(caught.value.trailing_metadata() or ())["lamarck-reason"] == "deadline_exceeded"


async def test_stop_drains_in_flight_calls_and_refuses_new_ones(start: Any) -> None:
    servers, servicer, _ = await start()
    in_flight = asyncio.create_task(_identity(servers.peer_address, b"sleep:0.5"))
    await asyncio.wait_for(servicer.entered.wait(), 5)
    await servers.stop(5)
    reply = await in_flight
    assert reply.node_id and servicer.finished == 1
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _identity(servers.peer_address, deadline_s=2)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_messages_over_the_size_cap_are_refused(start: Any) -> None:
    servers, _, _ = await start(max_message_bytes=64 * 1024)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _identity(servers.peer_address, b"x" * (65 * 1024))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_the_agent_api_can_listen_on_a_unix_socket(start: Any, tmp_path: Path) -> None:
    socket = tmp_path / "agent.sock"
    servers, _, settings = await start(agent_listen=f"unix:{socket}")
    assert servers.agent_address == f"unix:{socket}"
    # A local agent API needs no agent token (the node makes none).
    assert settings.agent_is_local
    async with grpc.aio.insecure_channel(servers.agent_address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
    assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
