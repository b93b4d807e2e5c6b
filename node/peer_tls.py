"""Mutual TLS on the peer port: the node's certificate, whom it trusts, how it dials.

Every node holds a TLS key and a self-signed certificate naming it (``lamarck.proto.tls``);
its signed registration carries the certificate, so the registry binds it to the node's
Ed25519 identity. Then:

* **dialling** node X, a node trusts exactly the certificate X's registration carries (it is
  the channel's only root) and checks that it names X (``<X>.lamarck``,
  ``grpc.ssl_target_name_override``): nobody else can answer for X, whatever the address;
* **serving**, a node requires a client certificate and accepts only those of the peers its
  registry lists (``grpc.dynamic_ssl_server_credentials``: the roots are refreshed at every
  registry round, and read at each new handshake); a certificate it does not know fails the
  handshake. Each call's peer token names the certificate its caller's connections are made
  with, under the caller's identity key, and the node refuses a token presented on any other
  connection (``channel_mismatch``, ``lamarck.node.api.peer_auth``) and a revoked caller on
  every call (``revoked_peer``), established connections included;
* with an operator CA (``peer_tls_ca_file``), the CA's certificates are the roots on both
  sides instead of the pinned ones; the certificate must still name the node, and the token
  still binds each call to the connection's certificate.

``peer_tls = "off-insecure"`` turns all of this off (plaintext, for tests only): the node logs
a warning at every start, and anyone on the path reads and may alter every lesson and vote.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import grpc

from lamarck.errors import ConfigError, DeliveryFailed, InvalidRecord, KeyFileError
from lamarck.proto.clock import Clock
from lamarck.proto.keys import KEYS_DIR
from lamarck.proto.tls import (
    TLS_CERT_FILE,
    TLS_KEY_FILE,
    TlsMaterial,
    certificate_pem,
    load_or_create_tls,
    load_tls,
    pem_fingerprint,
    tls_name,
)

__all__ = [
    "PEER_CHANNEL_OPTIONS",
    "PeerTls",
    "connection_fingerprint",
    "dial_home",
    "peer_tls_for",
]

_log = logging.getLogger(__name__)

#: Channel options of every TLS peer channel: a handshake refused (a peer that does not know
#: this node yet) is tried again within seconds, not after gRPC's default two minutes.
PEER_CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 500),
    ("grpc.min_reconnect_backoff_ms", 500),
    ("grpc.max_reconnect_backoff_ms", 5_000),
)
# Fingerprints of the client certificates seen (PEM text -> SHA-256 hex): a connection's
# certificate is hashed once, not on every call.
_FINGERPRINTS: dict[bytes, str] = {}
_FINGERPRINTS_MAX = 4096


class PeerTls:
    """This node's TLS material and the certificates it trusts on its peer port."""

    def __init__(self, node_id: str, material: TlsMaterial, *, ca_pem: bytes | None = None) -> None:
        self.node_id = node_id
        self._material = material
        self._ca = ca_pem
        self._lock = threading.Lock()
        # The PEM roots the server requires client certificates to chain to, and whether the
        # server's configuration must be rebuilt at the next handshake.
        self._roots = self._roots_of(())
        self._changed = False

    @property
    def material(self) -> TlsMaterial:
        """This node's key and certificate."""
        return self._material

    @property
    def fingerprint(self) -> str:
        """SHA-256 (hex) of this node's certificate: what its peer tokens are bound to."""
        return self._material.fingerprint

    @property
    def certificate(self) -> str:
        """This node's certificate as its registration carries it (base64url DER)."""
        return self._material.cert_b64

    def _roots_of(self, peers: Iterable[bytes]) -> bytes:
        if self._ca is not None:
            return self._ca
        # This node's own certificate is always a root: tools on its host dial it with the
        # home's material (``dial_home``).
        return b"".join(sorted({self._material.cert_pem, *peers}))

    def trust_peers(self, certificates: Iterable[str]) -> None:
        """Accept client certificates of exactly these peers (base64url DER, as their
        registrations carry them; unreadable ones are skipped) from the next handshake on."""
        pems = []
        for cert in certificates:
            if not cert:
                continue
            try:
                pems.append(certificate_pem(cert))
            except InvalidRecord:
                _log.warning("a registered peer certificate does not parse; not trusted")
        roots = self._roots_of(pems)
        with self._lock:
            if roots != self._roots:
                self._roots, self._changed = roots, True

    def rotate(self, material: TlsMaterial) -> None:
        """Serve and dial with new material from the next handshake on."""
        with self._lock:
            self._material = material
            self._roots = self._roots_of(())
            self._changed = True

    def _configuration(self) -> grpc.ServerCertificateConfiguration:
        material = self._material
        return grpc.ssl_server_certificate_configuration(
            [(material.key_pem, material.cert_pem)], root_certificates=self._roots
        )

    def _fetch(self) -> grpc.ServerCertificateConfiguration | None:
        # Called by gRPC at each new handshake (from its own thread): a new configuration
        # only when the trusted peers or the material changed, else None (keep the current).
        with self._lock:
            if not self._changed:
                return None
            self._changed = False
            return self._configuration()

    def server_credentials(self) -> grpc.ServerCredentials:
        """Server credentials requiring a client certificate among the trusted ones."""
        with self._lock:
            initial = self._configuration()
            self._changed = False
        # The stubs say the fetcher returns a configuration; gRPC documents None as "keep the
        # current one", which is what it answers between changes.
        return grpc.dynamic_ssl_server_credentials(
            initial,
            self._fetch,  # type: ignore[arg-type]
            require_client_authentication=True,
        )

    def channel(
        self, node_id: str, registered_certificate: str
    ) -> tuple[grpc.ChannelCredentials, tuple[tuple[str, Any], ...]]:
        """Credentials and options to dial ``node_id``, trusting only the certificate its
        registration carries (or the operator CA) and requiring it to name ``node_id``;
        ``DeliveryFailed(no_peer_certificate)`` when it registered none."""
        if self._ca is not None:
            roots = self._ca
        else:
            if not registered_certificate:
                raise DeliveryFailed(
                    f"peer {node_id} registered no TLS certificate", reason="no_peer_certificate"
                )
            try:
                roots = certificate_pem(registered_certificate)
            except InvalidRecord as e:
                raise DeliveryFailed(
                    f"peer {node_id}'s certificate does not parse", reason="no_peer_certificate"
                ) from e
        material = self._material
        credentials = grpc.ssl_channel_credentials(roots, material.key_pem, material.cert_pem)
        return credentials, (
            ("grpc.ssl_target_name_override", tls_name(node_id)),
            *PEER_CHANNEL_OPTIONS,
        )


def connection_fingerprint(context: Any) -> str | None:
    """SHA-256 (hex) of the client certificate a call's connection was made with; ``None``
    for a connection without TLS."""
    auth = context.auth_context() or {}
    pems: Sequence[bytes] = auth.get("x509_pem_cert") or ()
    if not pems:
        return None
    pem = pems[0]
    known = _FINGERPRINTS.get(pem)
    if known is None:
        try:
            known = pem_fingerprint(pem)
        except InvalidRecord:
            return "unreadable"  # matches no token: the call is refused
        if len(_FINGERPRINTS) >= _FINGERPRINTS_MAX:
            _FINGERPRINTS.clear()
        _FINGERPRINTS[pem] = known
    return known


def peer_tls_for(
    mode: str,
    *,
    home: Path,
    node_id: str,
    clock: Clock,
    identity_key: str = "",
    cert_file: str = "",
    key_file: str = "",
    ca_file: str = "",
) -> PeerTls | None:
    """This node's peer TLS from its settings; ``None`` (logged as a warning) when it runs
    ``off-insecure``. The home's certificate names ``node_id`` (the id the node registers as)
    and is made anew when ``identity_key`` changed. ``ConfigError`` when configured files
    cannot be used."""
    if mode == "off-insecure":
        _log.warning(
            "peer_tls is off-insecure: the peer port is plaintext, anyone on the path reads "
            "and may alter every lesson and vote. For tests only."
        )
        return None
    try:
        if cert_file or key_file:
            material = load_tls(Path(key_file), Path(cert_file))
        else:
            material = load_or_create_tls(home, node_id, clock.now(), identity_key)
        ca = Path(ca_file).read_bytes() if ca_file else None
    except (KeyFileError, OSError) as e:
        raise ConfigError(f"cannot use the peer TLS material: {e}", reason="bad_tls") from e
    return PeerTls(node_id, material, ca_pem=ca)


def dial_home(home: Path, node_id: str, address: str, *, tls: bool = True) -> grpc.Channel:
    """A blocking channel to the peer port of the node whose home is ``home`` (this host's
    probes and tools), made with that node's own certificate (which it always trusts);
    plaintext when ``tls`` is False (a node run ``off-insecure``, as ``node.json`` says)."""
    if not tls:
        return grpc.insecure_channel(address)
    keys = home / KEYS_DIR
    material = load_tls(keys / TLS_KEY_FILE, keys / TLS_CERT_FILE)
    credentials = grpc.ssl_channel_credentials(
        material.cert_pem, material.key_pem, material.cert_pem
    )
    return grpc.secure_channel(
        address, credentials, options=[("grpc.ssl_target_name_override", tls_name(node_id))]
    )
