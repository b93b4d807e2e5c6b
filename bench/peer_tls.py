"""The cost of mutual TLS on the peer path: Publish and Sync with and without it, same run.

A real ``grpc.aio`` server with the node's interceptors (metrics, errors, deadline) serves a
PeerService that authenticates every call as the node does (``PeerAuthenticator``: the peer
token, its pin, and, over TLS, its binding to the connection's certificate) and then answers
at once: Publish acks every record, Sync streams one page of records the size of real signed
lessons. The node's own ``PeerClient`` calls it, once with the node's TLS (``PeerTls``: a
self-signed certificate each side, the server's pinned by the client, the client's among the
server's roots) and once plaintext (``peer_tls = "off-insecure"``). Nothing else runs: the
import pipeline and the store cost the same either way and are left out, so the ratios are
the transport's own (an upper bound on what TLS adds to a whole Publish or Sync).

Both modes run in alternating blocks (A B B A ...) so a change in the machine's load hits
both. Figures per mode: sequential call latency p50/p99 (ms), and throughput at
``--concurrency`` callers (calls/s); for each, ``*_ratio`` = TLS ÷ plaintext (latency: > 1 is
slower; throughput: < 1 is slower). ``connect_*_ms``: the first call on a new channel (the
TCP and, with TLS, the handshake), p50 over ``--connects`` new channels.

The last line is one JSON object of the figures.

Usage: ``python -m bench.peer_tls [--quick] [--calls N] [--batch B] [--page P]
[--concurrency C] [--connects K]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import grpc.aio

from lamarck.gossip.sync import SyncQuery
from lamarck.node.api.interceptors import DeadlineInterceptor, ErrorInterceptor, MetricsInterceptor
from lamarck.node.api.peer_auth import PeerAuthenticator, PeerTokens
from lamarck.node.peer_tls import PeerTls, connection_fingerprint
from lamarck.node.sharing.peer_client import PeerClient
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import SystemClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.peer_auth import PeerAuthParams
from lamarck.proto.tls import make_tls
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc, records_pb2

#: A signed lesson record is about this many bytes of canonical JSON.
RECORD_BYTES = 1500
MAX_MESSAGE_BYTES = 4 * 1024 * 1024


class _Pins:
    """The registry's pins, as values (one caller)."""

    def __init__(self, caller: NodeIdentity) -> None:
        self._caller = caller

    async def pinned_key(self, node_id: str) -> str | None:
        return self._caller.public_key_b64 if node_id == self._caller.node_id else None

    async def is_revoked(self, node_id: str) -> bool:
        return False


class _Peer(peer_pb2_grpc.PeerServiceServicer):
    """Authenticates each call as a node does, then answers at once."""

    def __init__(self, auth: PeerAuthenticator, page: list[bytes]) -> None:
        self._auth = auth
        self._page = [
            records_pb2.SignedRecord(kind=records_pb2.RECORD_KIND_MEMORY, canonical_json=r)
            for r in page
        ]

    async def Publish(self, request: Any, context: Any) -> Any:
        """Ack every record."""
        await self._auth.authenticate(
            context.invocation_metadata(), request.sender_node_id, connection_fingerprint(context)
        )
        return peer_pb2.PublishResponse(
            acks=[
                records_pb2.RecordAck(
                    index=i,
                    record_hash=sha256_hex(r.canonical_json),
                    status=records_pb2.ACK_STATUS_ACCEPTED,
                )
                for i, r in enumerate(request.records)
            ]
        )

    async def Sync(self, request: Any, context: Any) -> AsyncIterator[Any]:
        """One page of records."""
        await self._auth.authenticate(
            context.invocation_metadata(),
            request.requester_node_id,
            connection_fingerprint(context),
        )
        yield peer_pb2.SyncResponse(records=self._page, cursor="end", more=False)


def _records(n: int, salt: str) -> list[bytes]:
    body = os.urandom(RECORD_BYTES // 2).hex()[: RECORD_BYTES - 64]
    return [json.dumps({"id": f"{salt}-{i}", "content": body}).encode() for i in range(n)]


class Mode:
    """One side of the comparison: a server and the client that calls it."""

    def __init__(self, name: str, server: grpc.aio.Server, client_of: Callable[[], PeerClient]):
        self.name = name
        self.server = server
        self.client_of = client_of
        self.client = client_of()
        self.latency: dict[str, list[float]] = {"publish": [], "sync": []}
        self.rate: dict[str, list[float]] = {"publish": [], "sync": []}
        self.connect: list[float] = []


async def _mode(
    name: str, tls: bool, callee: NodeIdentity, caller: NodeIdentity, args: argparse.Namespace
) -> Mode:
    clock = SystemClock()
    params = PeerAuthParams()
    server_tls = PeerTls(callee.node_id, make_tls(callee.node_id, clock.now()))
    client_tls = PeerTls(caller.node_id, make_tls(caller.node_id, clock.now()))
    server_tls.trust_peers([client_tls.certificate])
    auth = PeerAuthenticator(callee.node_id, _Pins(caller), clock, params)  # type: ignore[arg-type]
    server = grpc.aio.server(
        interceptors=[MetricsInterceptor("peer"), ErrorInterceptor(), DeadlineInterceptor(30.0)]
    )
    peer_pb2_grpc.add_PeerServiceServicer_to_server(_Peer(auth, _records(args.page, name)), server)
    if tls:
        port = server.add_secure_port("127.0.0.1:0", server_tls.server_credentials())
    else:
        port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    address = f"127.0.0.1:{port}"

    def client_of() -> PeerClient:
        return PeerClient(
            caller.node_id,
            PeerTokens(caller, clock, params, channel=client_tls.fingerprint if tls else ""),
            lambda _: address,
            hop_limit=4,
            max_message_bytes=MAX_MESSAGE_BYTES,
            tls=client_tls if tls else None,
            certificate_of_peer=lambda _: server_tls.certificate,
        )

    return Mode(name, server, client_of)


def _calls(mode: Mode, callee: str, batch: list[bytes]) -> dict[str, Callable[[], Awaitable[Any]]]:
    client = mode.client
    return {
        "publish": lambda: client.publish(callee, batch, 0),
        "sync": lambda: client.sync_page(callee, SyncQuery(max_records=10_000)),
    }


async def _block(mode: Mode, callee: str, batch: list[bytes], args: argparse.Namespace) -> None:
    """One block of sequential calls and one of concurrent calls, per call kind."""
    for kind, call in _calls(mode, callee, batch).items():
        for _ in range(args.calls):
            started = time.perf_counter()
            await call()
            mode.latency[kind].append(time.perf_counter() - started)
        per_caller = max(1, args.calls // args.concurrency)

        async def caller(call: Callable[[], Awaitable[Any]] = call, n: int = per_caller) -> None:
            for _ in range(n):
                await call()

        started = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(args.concurrency)))
        mode.rate[kind].append(per_caller * args.concurrency / (time.perf_counter() - started))


async def _connects(mode: Mode, callee: str, batch: list[bytes], n: int) -> None:
    for _ in range(n):
        client = mode.client_of()
        started = time.perf_counter()
        await client.publish(callee, batch[:1], 0)
        mode.connect.append(time.perf_counter() - started)
        await client.close()


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


async def run(args: argparse.Namespace) -> dict[str, float]:
    """Measure both modes in alternating blocks; the figures."""
    callee, caller = NodeIdentity.generate(), NodeIdentity.generate()
    modes = [
        await _mode("tls", True, callee, caller, args),
        await _mode("plain", False, callee, caller, args),
    ]
    batch = _records(args.batch, "publish")
    try:
        for mode in modes:  # warm-up: channels made, tokens issued and verified
            await _block(
                mode, callee.node_id, batch, argparse.Namespace(**{**vars(args), "calls": 5})
            )
            mode.latency = {"publish": [], "sync": []}
            mode.rate = {"publish": [], "sync": []}
        order = [0, 1, 1, 0] * args.rounds
        for i in order:
            await _block(modes[i], callee.node_id, batch, args)
        for i in order[:4]:
            await _connects(modes[i], callee.node_id, batch, max(1, args.connects // 2))
    finally:
        for mode in modes:
            await mode.client.close()
            await mode.server.stop(None)
    figures: dict[str, float] = {}
    for kind in ("publish", "sync"):
        for mode in modes:
            figures[f"{kind}_{mode.name}_p50_ms"] = round(_p(mode.latency[kind], 0.5) * 1000, 3)
            figures[f"{kind}_{mode.name}_p99_ms"] = round(_p(mode.latency[kind], 0.99) * 1000, 3)
            figures[f"{kind}_{mode.name}_calls_per_s"] = round(
                statistics.median(mode.rate[kind]), 1
            )
        for stat in ("p50_ms", "p99_ms", "calls_per_s"):
            a, b = figures[f"{kind}_tls_{stat}"], figures[f"{kind}_plain_{stat}"]
            figures[f"{kind}_{stat.removesuffix('_ms')}_ratio"] = round(a / b, 3) if b else 0.0
    for mode in modes:
        figures[f"connect_{mode.name}_ms"] = round(_p(mode.connect, 0.5) * 1000, 3)
    figures["connect_ratio"] = (
        round(figures["connect_tls_ms"] / figures["connect_plain_ms"], 3)
        if figures["connect_plain_ms"]
        else 0.0
    )
    return figures


def _print(figures: dict[str, float], args: argparse.Namespace) -> None:
    print(
        f"peer path, {args.calls} calls x {args.rounds * 2} blocks per mode; Publish of "
        f"{args.batch} records, Sync page of {args.page} records (~{RECORD_BYTES} B each); "
        f"{args.concurrency} concurrent callers for throughput",
        file=sys.stderr,
    )
    for kind in ("publish", "sync"):
        print(
            f"{kind:8s} TLS p50 {figures[f'{kind}_tls_p50_ms']:.2f} ms p99 "
            f"{figures[f'{kind}_tls_p99_ms']:.2f} ms {figures[f'{kind}_tls_calls_per_s']:.0f}/s | "
            f"plain p50 {figures[f'{kind}_plain_p50_ms']:.2f} ms p99 "
            f"{figures[f'{kind}_plain_p99_ms']:.2f} ms {figures[f'{kind}_plain_calls_per_s']:.0f}/s"
            f" | ratios p50 {figures[f'{kind}_p50_ratio']:.2f} "
            f"p99 {figures[f'{kind}_p99_ratio']:.2f}"
            f" throughput {figures[f'{kind}_calls_per_s_ratio']:.2f}",
            file=sys.stderr,
        )
    print(
        f"new channel, first call: TLS {figures['connect_tls_ms']:.2f} ms, plain "
        f"{figures['connect_plain_ms']:.2f} ms",
        file=sys.stderr,
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point: progress and figures on stderr, then one JSON line on stdout."""
    parser = argparse.ArgumentParser(description="The cost of mutual TLS on the peer path.")
    parser.add_argument("--quick", action="store_true", help="fewer calls (about 20 s)")
    parser.add_argument("--calls", type=int, default=None, help="calls per block")
    parser.add_argument("--rounds", type=int, default=None, help="A B B A rounds")
    parser.add_argument("--batch", type=int, default=10, help="records per Publish")
    parser.add_argument("--page", type=int, default=64, help="records per Sync page")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--connects", type=int, default=None, help="new channels per mode")
    args = parser.parse_args(argv)
    args.calls = args.calls or (100 if args.quick else 400)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.connects = args.connects or (10 if args.quick else 40)
    figures = asyncio.run(run(args))
    _print(figures, args)
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
