"""Mutual TLS on the peer port between real nodes: certificates bound to node ids by the
registry, and peer tokens bound to the connection they are presented on.

Three nodes on one network; the test dials their peer ports itself, as one of them (with that
node's key and certificate from its home) or as a stranger, and reads how each call ends.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from conftest import REDIS_URL, Net, wait_for

from lamarck.node.api.peer_auth import PeerTokens
from lamarck.proto.clock import SystemClock
from lamarck.proto.keys import KEYS_DIR, identity_path, load_private_key
from lamarck.proto.peer_auth import PeerAuthParams
from lamarck.proto.tls import TlsMaterial, load_tls, make_tls, tls_name
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.redis_directory import RedisPeerDirectory

#: Bound on every node seeing the others in the registry (rounds are 1 s).
SEEN_WITHIN_S = 60.0


def _material(node: Any) -> TlsMaterial:
    keys = node.home / KEYS_DIR
    return load_tls(keys / "tls.key", keys / "tls.crt")


def _dial(own: TlsMaterial, target: Any, *, pin: bytes | None = None) -> grpc.Channel:
    """A channel to ``target``'s peer port made with ``own`` certificate, trusting ``pin``
    (default: the certificate ``target`` registered, from its home)."""
    roots = pin if pin is not None else _material(target).cert_pem
    credentials = grpc.ssl_channel_credentials(roots, own.key_pem, own.cert_pem)
    return grpc.secure_channel(
        target.peer_addr,
        credentials,
        options=[("grpc.ssl_target_name_override", tls_name(target.node_id))],
    )


def _sync(channel: grpc.Channel, requester: str, metadata: Any) -> grpc.StatusCode:
    """How a Sync as ``requester`` ends (OK once the whole stream is read)."""
    try:
        for _ in peer_pb2_grpc.PeerServiceStub(channel).Sync(
            peer_pb2.SyncRequest(requester_node_id=requester), timeout=10, metadata=metadata
        ):
            pass
    except grpc.RpcError as e:
        return e.code()  # type: ignore[attr-defined,no-any-return]
    return grpc.StatusCode.OK


def _reason(channel: grpc.Channel, requester: str, metadata: Any) -> str:
    try:
        for _ in peer_pb2_grpc.PeerServiceStub(channel).Sync(
            peer_pb2.SyncRequest(requester_node_id=requester), timeout=10, metadata=metadata
        ):
            pass
    except grpc.RpcError as e:
        trailers = dict(e.trailing_metadata() or ())  # type: ignore[attr-defined]
        return f"{e.code().name}:{trailers.get('lamarck-reason', '')}"  # type: ignore[attr-defined]
    return "OK"


async def _registered_certificates(namespace: str) -> dict[str, str]:
    directory = RedisPeerDirectory.from_url(
        REDIS_URL,
        namespace=namespace,
        params=RegistryParams(admission=AdmissionMode.OPEN),
        clock=SystemClock(),
    )
    try:
        return {p.node_id: p.tls_certificate for p in await directory.live_peers()}
    finally:
        await directory.aclose()


def test_a_token_captured_from_one_peer_is_refused_on_another_peers_connection(net: Net) -> None:
    alice, bob, mallory = net.start(), net.start(), net.start()
    certs = wait_for(
        lambda: len(c := asyncio.run(_registered_certificates(net.namespace))) == 3 and c,
        "three nodes registered",
        SEEN_WITHIN_S,
    )
    # Each registration carries the node's own certificate: the registry binds it to the id.
    for node in (alice, bob, mallory):
        assert certs[node.node_id] == _material(node).cert_b64
    # Alice's token for Bob, as an on-path party would capture it (the wire is encrypted, so
    # it is made here from Alice's key: the strongest capture there could be).
    captured = PeerTokens(
        load_private_key(identity_path(alice.home)),
        SystemClock(),
        PeerAuthParams(),
        channel=_material(alice).fingerprint,
    ).metadata(bob.node_id)
    # On Alice's own connection it works (once Bob trusts Alice's certificate: his next
    # registry round).
    with _dial(_material(alice), bob) as channel:
        wait_for(
            lambda: _sync(channel, alice.node_id, captured) == grpc.StatusCode.OK,
            "Bob to answer Alice",
            SEEN_WITHIN_S,
        )
    # Mallory, admitted with her own certificate, replays it as Alice: refused.
    with _dial(_material(mallory), bob) as channel:
        wait_for(
            lambda: _sync(channel, mallory.node_id, ()) != grpc.StatusCode.UNAVAILABLE,
            "Bob to trust Mallory's certificate",
            SEEN_WITHIN_S,
        )
        assert _reason(channel, alice.node_id, captured) == "UNAUTHENTICATED:channel_mismatch"


def test_strangers_and_impostors_are_refused_at_the_handshake(net: Net) -> None:
    alice, bob = net.start(), net.start()
    with _dial(_material(alice), bob) as channel:
        wait_for(
            lambda: _sync(channel, alice.node_id, ()) != grpc.StatusCode.UNAVAILABLE,
            "Bob to trust Alice's certificate",
            SEEN_WITHIN_S,
        )
    # A certificate no registration carries, even one naming Alice, gets no connection.
    forged = make_tls(alice.node_id, SystemClock().now())
    with _dial(forged, bob) as channel:
        assert _sync(channel, alice.node_id, ()) == grpc.StatusCode.UNAVAILABLE
    # Dialling Bob's address while pinning Alice's certificate: the client refuses Bob's.
    with _dial(_material(alice), bob, pin=_material(alice).cert_pem) as channel:
        assert _sync(channel, alice.node_id, ()) == grpc.StatusCode.UNAVAILABLE
