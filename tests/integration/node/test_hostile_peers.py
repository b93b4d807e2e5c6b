"""A hostile caller at the node's gRPC edge: real grpc.aio servers, real channels.

* limits key on who the caller proved to be, else its connection: a claimed
  ``lamarck-node-id`` that changes on every call buys no fresh budget;
* a Publish carries at most ``publish_max_records`` records, and one sender may not make the
  node import more than its records-per-second budget;
* bytes that do not decode are INVALID_ARGUMENT ``undecodable_request`` on every method of
  every service the node serves, in a request stream too.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import DecodeError
from grpc_health.v1 import health_pb2

from lamarck.node.api.interceptors import ErrorInterceptor, PeerLimitInterceptor
from lamarck.node.api.limits import PeerLimits
from lamarck.node.api.server import NodeServers
from lamarck.node.api.status import reason_from_rpc_error
from lamarck.node.config import load_settings
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.v1 import agent_pb2, operator_pb2, peer_pb2, peer_pb2_grpc, records_pb2
from tests.factories import peer_service, serve_node

pytestmark = pytest.mark.integration


class _FrozenClock:
    """A monotonic clock that does not move: no bucket refills during a test."""

    def __call__(self) -> float:
        return 1000.0


async def _serve(servicer: Any, interceptors: list[Any]) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server(interceptors=interceptors)
    peer_pb2_grpc.add_PeerServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


class _Identity(peer_pb2_grpc.PeerServiceServicer):
    """GetIdentity answers at once: the cheapest call there is."""

    async def GetIdentity(self, request: Any, context: Any) -> Any:
        """An empty identity."""
        return peer_pb2.GetIdentityResponse(node_id="lmk1test")


async def _refused_of(ids: Callable[[int], str], calls: int = 400) -> int:
    """How many of ``calls`` GetIdentity calls, the i-th claiming ``ids(i)``, were limited."""
    limiter = PeerLimitInterceptor(
        max_concurrent=8, rate_per_s=50.0, burst=100, clock=_FrozenClock()
    )
    server, address = await _serve(_Identity(), [ErrorInterceptor(), limiter])
    refused = 0
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = peer_pb2_grpc.PeerServiceStub(channel)
            for i in range(calls):
                try:
                    await stub.GetIdentity(
                        peer_pb2.GetIdentityRequest(),
                        metadata=(("lamarck-node-id", ids(i)),),
                        timeout=5,
                    )
                except grpc.aio.AioRpcError as e:
                    assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                    refused += 1
    finally:
        await server.stop(0)
    return refused


async def test_random_claimed_node_ids_are_refused_as_a_fixed_id_is() -> None:
    rng = random.Random(11)
    fixed = "lmk1" + "a" * 32

    def fresh(_: int) -> str:
        return "lmk1" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz234567") for _ in range(32))

    with_fixed = await _refused_of(lambda _: fixed)
    with_random = await _refused_of(fresh)
    assert with_fixed == 300  # burst of 100, frozen clock
    assert with_random == with_fixed


# -- Publish: batch cap and records per second ---------------------------------------------


@dataclass
class _CountingPipeline:
    """Stands in for the import pipeline: counts the records it was asked to import."""

    seen: int = 0

    async def import_record(self, raw: bytes, **_: Any) -> Any:
        self.seen += 1
        from lamarck.policy.decision import ImportOutcome

        return _Result(outcome=ImportOutcome.DUPLICATE)


@dataclass
class _Result:
    outcome: Any
    content_hash: str = "0" * 64
    reason: str = "duplicate"
    forward: bool = False
    source_node_id: str = ""


@dataclass
class _Sharing:
    """Just what PeerService.Publish reads of the sharing side."""

    pipeline: _CountingPipeline = field(default_factory=_CountingPipeline)
    authenticated: int = 0

    @property
    def publish_deps(self) -> Any:
        from lamarck.node.api.peer_handlers import PublishDeps

        return PublishDeps(pipeline=self.pipeline)  # type: ignore[arg-type]

    async def authenticate(self, metadata: Any, claimed: str, channel: str | None) -> str:
        self.authenticated += 1
        return claimed


def _batch(n: int) -> peer_pb2.PublishRequest:
    record = records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=b"{}")
    return peer_pb2.PublishRequest(records=[record] * n, sender_node_id="lmk1" + "b" * 32)


async def _publish(address: str, request: peer_pb2.PublishRequest) -> grpc.aio.AioRpcError | None:
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            await peer_pb2_grpc.PeerServiceStub(channel).Publish(request, timeout=10)
        except grpc.aio.AioRpcError as e:
            return e
    return None


async def test_a_publish_above_the_batch_cap_is_resource_exhausted_before_any_work(
    tmp_path: Path,
) -> None:
    sharing = _Sharing()
    limits = PeerLimits(publish_max_records=256)
    servicer = peer_service(tmp_path, sharing, limits=limits)
    server, address = await _serve(servicer, [ErrorInterceptor()])
    try:
        refused = await _publish(address, _batch(1000))
        accepted = await _publish(address, _batch(256))
    finally:
        await server.stop(0)
    assert refused is not None and refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert reason_from_rpc_error(refused) == "batch_too_large"
    assert accepted is None
    # The refused batch was neither authenticated nor imported.
    assert (sharing.authenticated, sharing.pipeline.seen) == (1, 256)


async def test_one_sender_cannot_make_the_node_import_beyond_its_records_per_second(
    tmp_path: Path,
) -> None:
    sharing = _Sharing()
    limits = PeerLimits(publish_max_records=256, records_per_s=10.0, records_burst=1024)
    servicer = peer_service(tmp_path, sharing, limits=limits)
    servicer._records._clock = _FrozenClock()  # no refill within the test
    server, address = await _serve(servicer, [ErrorInterceptor()])
    try:
        results = [await _publish(address, _batch(256)) for _ in range(6)]
    finally:
        await server.stop(0)
    assert [r is None for r in results] == [True, True, True, True, False, False]
    for refused in results[4:]:
        assert refused is not None and refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert reason_from_rpc_error(refused) == "records_rate_limited"
    assert sharing.pipeline.seen == 1024


# -- bad bytes on every method -------------------------------------------------------------


@pytest.fixture
async def node_servers(tmp_path: Path) -> AsyncIterator[NodeServers]:
    """The node's two real servers (every interceptor), before the store is ready."""
    settings = load_settings(home=tmp_path, listen="127.0.0.1:0", agent_listen="127.0.0.1:0")
    servers = (
        await serve_node(
            settings,
            identity=NodeIdentity.generate(),
            clock=SystemClock(),
            operator_token="operator-secret",
        )
    ).servers
    try:
        yield servers
    finally:
        await servers.stop(0)


def _methods() -> list[tuple[str, MethodDescriptor]]:
    """(server, method) for every method of every service the node serves."""
    found = []
    for server, module in (
        ("peer", peer_pb2),
        ("agent", agent_pb2),
        ("agent", operator_pb2),
        ("peer", health_pb2),
        ("agent", health_pb2),
    ):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                found.append((server, method))
    return found


def _garbage(method: MethodDescriptor, rng: random.Random, count: int) -> list[bytes]:
    """``count`` byte strings that do not decode as ``method``'s input message."""
    cls = message_factory.GetMessageClass(method.input_type)
    fixed = [b"\xff", b"\x0a\xff\xff\xff\xff", b"\x12\x05ab", b"\x0a\x02\xc3\x28"]
    out: list[bytes] = []
    candidates = iter(fixed)
    while len(out) < count:
        raw = next(candidates, None)
        if raw is None:
            raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 48)))
        try:
            cls.FromString(raw)
        except DecodeError:
            out.append(raw)
    return out


async def test_undecodable_bytes_are_invalid_argument_on_every_method_of_every_service(
    node_servers: NodeServers,
) -> None:
    rng = random.Random(7)
    answers: dict[tuple[str, str], tuple[grpc.StatusCode, str | None]] = {}
    addresses = {"peer": node_servers.peer_address, "agent": node_servers.agent_address}
    methods = _methods()
    assert len(methods) >= 20  # the three lamarck services and health, on both servers
    for server, method in methods:
        path = f"/{method.containing_service.full_name}/{method.name}"
        async with grpc.aio.insecure_channel(addresses[server]) as channel:
            for raw in _garbage(method, rng, 8):
                try:
                    if method.client_streaming:
                        call: Any = (
                            channel.stream_stream(path)
                            if method.server_streaming
                            else channel.stream_unary(path)
                        )
                        result = call(iter([raw, b""]), timeout=5)
                    else:
                        call = (
                            channel.unary_stream(path)
                            if method.server_streaming
                            else channel.unary_unary(path)
                        )
                        result = call(raw, timeout=5)
                    if method.server_streaming:
                        async for _ in result:
                            pass
                    else:
                        await result
                    answers[(path, raw.hex())] = (grpc.StatusCode.OK, None)
                except grpc.aio.AioRpcError as e:
                    answers[(path, raw.hex())] = (e.code(), reason_from_rpc_error(e))
    wrong = {
        key: value
        for key, value in answers.items()
        if value != (grpc.StatusCode.INVALID_ARGUMENT, "undecodable_request")
    }
    assert not wrong, f"{len(wrong)} of {len(answers)} calls: {sorted(wrong.items())[:10]}"
