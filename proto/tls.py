"""The node's TLS certificate: the key pair its peer port speaks mutual TLS with.

Layout in the node's home, next to the identity key (``lamarck.proto.keys``)::

    <home>/keys/
        tls.key       ECDSA P-256 private key, PKCS#8 PEM, mode 0600
        tls.crt       self-signed X.509 certificate, PEM

The certificate names the node: its subject common name and its one DNS subject alternative
name are :func:`tls_name` of the node id (``<node id>.lamarck``); a URI subject alternative
name, ``urn:lamarck:key:<identity public key>``, records the identity key it was made with.
No CA is involved: the node's signed registration carries the certificate
(``Registration.tls_certificate``), so the registry binds it to the node's Ed25519 identity,
and peers trust exactly the certificate the registry pins for the id they dial. ECDSA P-256
because every TLS stack (gRPC's BoringSSL included) accepts it.

A certificate is made at the node's first start and replaced with its identity key: at a
start whose identity key (or node id) is not the one the certificate records, or at once by
:func:`rotate_tls`; the node then registers again, and its registration carries the new one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from lamarck.errors import InvalidRecord, KeyFileError
from lamarck.proto.keys import KEYS_DIR

__all__ = [
    "MAX_CERTIFICATE_BYTES",
    "TLS_CERT_FILE",
    "TLS_KEY_FILE",
    "TLS_NAME_SUFFIX",
    "TlsMaterial",
    "certificate_der",
    "certificate_fingerprint",
    "certificate_pem",
    "load_or_create_tls",
    "load_tls",
    "make_tls",
    "pem_fingerprint",
    "rotate_tls",
    "tls_name",
]

TLS_KEY_FILE = "tls.key"
TLS_CERT_FILE = "tls.crt"
#: A node's certificate names it ``<node id>`` + this suffix.
TLS_NAME_SUFFIX = ".lamarck"
# The certificate is pinned, not trusted for its dates; they only have to hold meanwhile.
_VALIDITY = timedelta(days=3650)
_BACKDATE = timedelta(days=1)
#: A DER certificate this node makes is under 600 bytes; anything far larger is not one.
MAX_CERTIFICATE_BYTES = 4096


def tls_name(node_id: str) -> str:
    """The name a node's certificate carries, and that its peers check it against."""
    return node_id + TLS_NAME_SUFFIX


@dataclass(frozen=True, slots=True)
class TlsMaterial:
    """A TLS key and certificate (PEM) and the certificate's SHA-256 fingerprint (hex)."""

    key_pem: bytes
    cert_pem: bytes

    @property
    def fingerprint(self) -> str:
        """SHA-256 (hex) of the certificate's DER bytes."""
        return pem_fingerprint(self.cert_pem)

    @property
    def cert_b64(self) -> str:
        """The certificate's DER bytes as unpadded base64url (as a registration carries it)."""
        return base64.urlsafe_b64encode(certificate_der(self.cert_pem)).rstrip(b"=").decode()


def _key_uri(identity_key: str) -> str:
    return f"urn:lamarck:key:{identity_key}"


def make_tls(node_id: str, now: datetime, identity_key: str = "") -> TlsMaterial:
    """A new ECDSA P-256 key and a self-signed certificate naming ``node_id`` (and recording
    ``identity_key``, the node's Ed25519 public key, when given)."""
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(tls_name(node_id))]
    if identity_key:
        names.append(x509.UniformResourceIdentifier(_key_uri(identity_key)))
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, tls_name(node_id))])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    return TlsMaterial(
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
    )


def certificate_der(cert_pem: bytes) -> bytes:
    """The DER bytes of a PEM certificate; ``InvalidRecord(bad_certificate)`` if it is none."""
    try:
        return x509.load_pem_x509_certificate(cert_pem).public_bytes(serialization.Encoding.DER)
    except ValueError as e:
        raise InvalidRecord(f"not a PEM certificate: {e}", reason="bad_certificate") from e


def certificate_pem(cert_b64: str) -> bytes:
    """A registration's certificate (unpadded base64url DER) as PEM; ``InvalidRecord`` if it
    is not an X.509 certificate."""
    try:
        der = base64.urlsafe_b64decode(cert_b64 + "=" * (-len(cert_b64) % 4))
    except (binascii.Error, ValueError) as e:
        raise InvalidRecord("certificate is not base64url", reason="bad_certificate") from e
    if len(der) > MAX_CERTIFICATE_BYTES:
        raise InvalidRecord("certificate is oversized", reason="bad_certificate")
    try:
        return x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM)
    except ValueError as e:
        raise InvalidRecord(f"not a DER certificate: {e}", reason="bad_certificate") from e


def certificate_fingerprint(der: bytes) -> str:
    """SHA-256 (hex) of a certificate's DER bytes: what a peer token binds a call to."""
    return hashlib.sha256(der).hexdigest()


def pem_fingerprint(cert_pem: bytes) -> str:
    """SHA-256 (hex) of a PEM certificate's DER bytes."""
    return certificate_fingerprint(certificate_der(cert_pem))


def _paths(home: Path) -> tuple[Path, Path]:
    keys = Path(home) / KEYS_DIR
    return keys / TLS_KEY_FILE, keys / TLS_CERT_FILE


def load_tls(key_path: Path, cert_path: Path) -> TlsMaterial:
    """Read a TLS key and certificate; ``KeyFileError`` (``missing``, ``unreadable``,
    ``insecure_permissions``, ``malformed``) when they cannot be used."""
    try:
        mode = key_path.stat().st_mode
        key_pem, cert_pem = key_path.read_bytes(), cert_path.read_bytes()
    except FileNotFoundError as e:
        raise KeyFileError(
            f"{e.filename} is missing", reason="missing", path=str(e.filename)
        ) from e
    except OSError as e:
        raise KeyFileError(f"cannot read {key_path}: {e}", reason="unreadable") from e
    if mode & 0o077:
        raise KeyFileError(
            f"{key_path} is readable or writable by others (chmod 600 it)",
            reason="insecure_permissions",
            path=str(key_path),
        )
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
        cert = x509.load_pem_x509_certificate(cert_pem)
    except (ValueError, TypeError) as e:
        raise KeyFileError(f"{key_path} or {cert_path}: {e}", reason="malformed") from e
    if cert.public_key().public_numbers() != key.public_key().public_numbers():  # type: ignore[union-attr]
        raise KeyFileError(f"{cert_path} is not {key_path}'s certificate", reason="malformed")
    return TlsMaterial(key_pem=key_pem, cert_pem=cert_pem)


def _names(cert_pem: bytes) -> list[str]:
    """The certificate's DNS and URI subject alternative names."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [
        *san.get_values_for_type(x509.DNSName),
        *san.get_values_for_type(x509.UniformResourceIdentifier),
    ]


def load_or_create_tls(
    home: Path, node_id: str, now: datetime, identity_key: str = ""
) -> TlsMaterial:
    """The home's TLS material, made on first start; a certificate that does not name
    ``node_id`` or record ``identity_key`` (the identity key rotated, or a copied home) is
    replaced, with its key."""
    key_path, cert_path = _paths(home)
    if key_path.exists() or cert_path.exists():
        material = load_tls(key_path, cert_path)
        names = _names(material.cert_pem)
        if tls_name(node_id) in names and (not identity_key or _key_uri(identity_key) in names):
            return material
    return rotate_tls(home, node_id, now, identity_key)


def rotate_tls(home: Path, node_id: str, now: datetime, identity_key: str = "") -> TlsMaterial:
    """Replace the home's TLS key and certificate with new ones (at key rotation, or when the
    TLS key may have leaked); the node's next registration carries the new certificate."""
    key_path, cert_path = _paths(home)
    key_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    material = make_tls(node_id, now, identity_key)
    _replace(key_path, material.key_pem, 0o600)
    _replace(cert_path, material.cert_pem, 0o644)
    return material


def _replace(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file, created with ``mode``)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
