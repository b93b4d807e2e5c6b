"""Mutual TLS on the peer port (``lamarck.node.peer_tls``) against a real gRPC server."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from lamarck.errors import DeliveryFailed
from lamarck.node.peer_tls import PeerTls, connection_fingerprint, peer_tls_for
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.tls import TlsMaterial, make_tls, tls_name
from lamarck.proto.v1 import peer_pb2, peer_pb2_grpc

SERVER = NodeIdentity.from_seed(b"s" * 32)
CLIENT = NodeIdentity.from_seed(b"c" * 32)
T0 = datetime.now(UTC)
#: The container's health probe (deploy files are not a package).
PROBE = Path(__file__).resolve().parents[3] / "deploy" / "healthcheck.py"


class _Echo(peer_pb2_grpc.PeerServiceServicer):
    """Answers GetIdentity with the fingerprint of the caller's certificate."""

    async def GetIdentity(self, request: Any, context: Any) -> Any:
        return peer_pb2.GetIdentityResponse(node_id=connection_fingerprint(context) or "none")


async def _serve(tls: PeerTls) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server()
    peer_pb2_grpc.add_PeerServiceServicer_to_server(_Echo(), server)
    port = server.add_secure_port("127.0.0.1:0", tls.server_credentials())
    await server.start()
    return server, f"127.0.0.1:{port}"


async def _call(client: PeerTls, address: str, node_id: str, registered: str) -> str:
    credentials, options = client.channel(node_id, registered)
    async with grpc.aio.secure_channel(address, credentials, options=options) as channel:
        try:
            reply = await peer_pb2_grpc.PeerServiceStub(channel).GetIdentity(
                peer_pb2.GetIdentityRequest(), timeout=5
            )
        except grpc.aio.AioRpcError as e:
            return e.code().name
    return str(reply.node_id)


@pytest.fixture
async def pair() -> AsyncIterator[tuple[PeerTls, PeerTls, str]]:
    server = PeerTls(SERVER.node_id, make_tls(SERVER.node_id, T0))
    client = PeerTls(CLIENT.node_id, make_tls(CLIENT.node_id, T0))
    grpc_server, address = await _serve(server)
    try:
        yield server, client, address
    finally:
        await grpc_server.stop(None)


async def test_only_listed_peers_get_a_connection_and_the_server_sees_their_certificate(
    pair: tuple[PeerTls, PeerTls, str],
) -> None:
    server, client, address = pair
    # Not yet listed: the handshake fails.
    assert await _call(client, address, SERVER.node_id, server.certificate) == "UNAVAILABLE"
    server.trust_peers([client.certificate])
    assert await _call(client, address, SERVER.node_id, server.certificate) == client.fingerprint
    # Unlisted again (revoked, or gone from the registry): new connections are refused.
    server.trust_peers([])
    assert await _call(client, address, SERVER.node_id, server.certificate) == "UNAVAILABLE"


async def test_the_client_refuses_a_server_that_is_not_the_node_it_dialled(
    pair: tuple[PeerTls, PeerTls, str],
) -> None:
    server, client, address = pair
    server.trust_peers([client.certificate])
    # Another node's registered certificate pinned for this address: refused.
    other = make_tls(CLIENT.node_id, T0)
    assert await _call(client, address, SERVER.node_id, other.cert_b64) == "UNAVAILABLE"
    # The right certificate, but dialled as another id: it does not name that id.
    assert await _call(client, address, CLIENT.node_id, server.certificate) == "UNAVAILABLE"
    with pytest.raises(DeliveryFailed) as caught:
        client.channel(SERVER.node_id, "")
    assert caught.value.reason == "no_peer_certificate"


async def test_a_rotated_certificate_is_served_from_the_next_handshake(
    pair: tuple[PeerTls, PeerTls, str],
) -> None:
    server, client, address = pair
    server.trust_peers([client.certificate])
    old = server.certificate
    server.rotate(make_tls(SERVER.node_id, T0))
    server.trust_peers([client.certificate])
    assert await _call(client, address, SERVER.node_id, old) == "UNAVAILABLE"
    assert await _call(client, address, SERVER.node_id, server.certificate) == client.fingerprint


def _ca() -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "operator ca")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(T0 - timedelta(days=1))
        .not_valid_after(T0 + timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _issued(ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate], node_id: str) -> TlsMaterial:
    ca_key, ca_cert = ca
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, tls_name(node_id))]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(T0 - timedelta(days=1))
        .not_valid_after(T0 + timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(tls_name(node_id))]), False)
        .sign(ca_key, hashes.SHA256())
    )
    return TlsMaterial(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        cert.public_bytes(serialization.Encoding.PEM),
    )


async def test_with_an_operator_ca_certificates_it_issued_are_accepted_by_name() -> None:
    ca = _ca()
    ca_pem = ca[1].public_bytes(serialization.Encoding.PEM)
    server = PeerTls(SERVER.node_id, _issued(ca, SERVER.node_id), ca_pem=ca_pem)
    client = PeerTls(CLIENT.node_id, _issued(ca, CLIENT.node_id), ca_pem=ca_pem)
    grpc_server, address = await _serve(server)
    try:
        # No registry listing needed: the CA vouches; the server still sees which one.
        assert await _call(client, address, SERVER.node_id, "") == client.fingerprint
        # A certificate the CA did not issue gets no connection.
        stranger = PeerTls(CLIENT.node_id, make_tls(CLIENT.node_id, T0), ca_pem=ca_pem)
        assert await _call(stranger, address, SERVER.node_id, "") == "UNAVAILABLE"
        # The CA's certificate for the server does not name another id.
        assert await _call(client, address, CLIENT.node_id, "") == "UNAVAILABLE"
    finally:
        await grpc_server.stop(None)


def test_plaintext_is_only_by_setting_and_warned_at_every_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FixedClock(T0)
    made = peer_tls_for("on", home=tmp_path, node_id=SERVER.node_id, clock=clock)
    assert made is not None and (tmp_path / "keys" / "tls.crt").exists()
    with caplog.at_level(logging.WARNING, logger="lamarck.node.peer_tls"):
        assert (
            peer_tls_for("off-insecure", home=tmp_path, node_id=SERVER.node_id, clock=clock) is None
        )
    assert "off-insecure" in caplog.text and "plaintext" in caplog.text


async def test_the_container_probe_dials_the_peer_port_with_the_homes_own_certificate(
    tmp_path: Path,
) -> None:
    import importlib.util
    import json

    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    tls = peer_tls_for("on", home=tmp_path, node_id=SERVER.node_id, clock=FixedClock(T0))
    assert tls is not None
    (tmp_path / "node.json").write_text(json.dumps({"node_id": SERVER.node_id, "peer_tls": "on"}))
    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    await servicer.set("lamarck.v1.PeerService", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_secure_port("127.0.0.1:0", tls.server_credentials())
    await server.start()
    spec = importlib.util.spec_from_file_location("lamarck_probe", PROBE)
    assert spec is not None and spec.loader is not None
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    try:
        address = f"127.0.0.1:{port}"
        assert (
            await asyncio.to_thread(probe.main, ["--address", address, "--home", str(tmp_path)])
            == 0
        )
        # Without the home's certificate the mutual-TLS port does not answer the probe.
        assert await asyncio.to_thread(probe.main, ["--address", address, "--home", ""]) == 1
    finally:
        await server.stop(None)
