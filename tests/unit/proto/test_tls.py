"""The node's TLS certificate (``lamarck.proto.tls``) and its place in a registration."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography import x509

from lamarck.errors import InvalidRecord, KeyFileError
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.tls import (
    certificate_der,
    certificate_pem,
    load_or_create_tls,
    make_tls,
    rotate_tls,
    tls_name,
)
from lamarck.registry.params import AdmissionMode
from lamarck.registry.records import Admission, Registration, sign_registration

ALICE = NodeIdentity.from_seed(b"a" * 32)
T0 = datetime(2026, 12, 1, tzinfo=UTC)


def test_a_certificate_names_its_node_and_is_self_signed_p256() -> None:
    material = make_tls(ALICE.node_id, T0)
    cert = x509.load_pem_x509_certificate(material.cert_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [tls_name(ALICE.node_id)]
    assert cert.issuer == cert.subject
    assert cert.public_key().curve.name == "secp256r1"  # type: ignore[union-attr]
    # The fingerprint is the SHA-256 of the DER bytes, and the registration form is them.
    der = certificate_der(material.cert_pem)
    assert material.fingerprint == hashlib.sha256(der).hexdigest()
    assert certificate_pem(material.cert_b64) == material.cert_pem


def test_the_home_keeps_one_certificate_until_it_is_rotated(tmp_path: Path) -> None:
    first = load_or_create_tls(tmp_path, ALICE.node_id, T0)
    assert (tmp_path / "keys" / "tls.key").stat().st_mode & 0o777 == 0o600
    assert load_or_create_tls(tmp_path, ALICE.node_id, T0) == first
    rotated = rotate_tls(tmp_path, ALICE.node_id, T0)
    assert rotated.fingerprint != first.fingerprint
    assert load_or_create_tls(tmp_path, ALICE.node_id, T0) == rotated
    # After the identity key rotates, the next start makes a new certificate (it records
    # the key it was made with).
    keyed = load_or_create_tls(tmp_path, ALICE.node_id, T0, ALICE.public_key_b64)
    assert keyed.fingerprint != rotated.fingerprint
    assert load_or_create_tls(tmp_path, ALICE.node_id, T0, ALICE.public_key_b64) == keyed
    new_key = NodeIdentity.from_seed(b"n" * 32).public_key_b64
    assert load_or_create_tls(tmp_path, ALICE.node_id, T0, new_key).fingerprint != keyed.fingerprint
    # A home copied to another id gets a certificate naming the new id.
    other = NodeIdentity.from_seed(b"o" * 32)
    assert load_or_create_tls(tmp_path, other.node_id, T0).fingerprint != rotated.fingerprint


def test_a_tls_key_others_can_read_is_refused(tmp_path: Path) -> None:
    load_or_create_tls(tmp_path, ALICE.node_id, T0)
    (tmp_path / "keys" / "tls.key").chmod(0o644)
    with pytest.raises(KeyFileError) as caught:
        load_or_create_tls(tmp_path, ALICE.node_id, T0)
    assert caught.value.reason == "insecure_permissions"


def _registration(certificate: str | None) -> Registration:
    return sign_registration(
        ALICE,
        address="10.0.0.1:7700",
        domains=(),
        version="1",
        nonce="A" * 43,
        admission=Admission(mode=AdmissionMode.OPEN),
        created_at=T0,
        tls_certificate=certificate,
    )


def test_a_registration_binds_the_certificate_under_the_identity_signature() -> None:
    material = make_tls(ALICE.node_id, T0)
    reg = _registration(material.cert_b64)
    assert reg.tls_certificate == material.cert_b64
    assert Registration.from_wire(reg.wire()) == reg
    # Without one (a plaintext node) the member is absent, as before.
    assert "tls_certificate" not in _registration(None).wire()
    # Something that is no certificate is refused at parse time.
    wire = reg.wire()
    wire["tls_certificate"] = "bm90IGEgY2VydA"
    with pytest.raises(InvalidRecord):
        Registration.from_wire(wire)
