"""Registry parameters and record models: refused when invalid, stable when signed."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest

from lamarck.errors import ConfigError, InvalidRecord
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import (
    Admission,
    EnrollmentToken,
    Registration,
    Retraction,
    Revocation,
    sign_enrollment,
    sign_registration,
    sign_retraction,
    sign_revocation,
)

NONCE = "bm9uY2Utbm9uY2Utbm9uY2U"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("heartbeat_ttl_s", 0.0),
        ("heartbeat_ttl_s", float("nan")),
        ("nonce_ttl_s", -1.0),
        ("max_future_skew_s", -1.0),
        ("deregister_timeout_s", 0.0),
        ("deregister_timeout_s", float("inf")),
        ("heartbeat_interval_s", 20.0),  # more than half of the 30 s TTL
    ],
)
def test_invalid_params_name_the_field(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=field) as e:
        RegistryParams.load({field: value})
    assert e.value.reason == "invalid_config"


def test_params_load_accepts_mode_names_and_refuses_unknown_ones() -> None:
    assert RegistryParams.load({"admission": "open"}).admission is AdmissionMode.OPEN
    with pytest.raises(ConfigError):
        RegistryParams.load({"admission": "anyone"})
    with pytest.raises(ConfigError):
        RegistryParams.load({"heartbeat_ttl": 3})  # unknown field: a typo is not ignored


def test_default_admission_is_closed() -> None:
    assert RegistryParams().admission is AdmissionMode.OPERATOR


@pytest.fixture
def reg() -> Registration:
    clock = FixedClock()
    return sign_registration(
        NodeIdentity.generate(random.Random(1)),
        address="peer.example:7443",
        domains=["git", "python"],
        version="0.1.0",
        nonce=NONCE,
        admission=Admission(mode=AdmissionMode.OPEN),
        created_at=clock.now(),
    )


def test_registration_round_trips_through_its_wire_form(reg: Registration) -> None:
    wire = reg.wire()
    assert "rotation" not in wire and "endorsement" not in wire["admission"]  # never null
    assert Registration.from_wire(wire) == reg


@pytest.mark.parametrize(
    "change",
    [
        {"address": "no-port"},
        {"address": "host:70000"},
        {"created_at": "2026-01-01T00:00:00+00:00"},  # not the canonical spelling
        {"node_id": "alice"},
        {"public_key": "AAAA"},
        {"nonce": "not base64!not base64!"},
        {"domains": ["x" * 65]},
        {"extra": 1},
    ],
)
def test_malformed_registration_is_invalid_record(
    reg: Registration, change: dict[str, Any]
) -> None:
    with pytest.raises(InvalidRecord) as e:
        Registration.from_wire({**reg.wire(), **change})
    assert e.value.reason == "malformed"


def test_enrollment_token_must_name_someone() -> None:
    operator = NodeIdentity.generate(random.Random(2))
    now = FixedClock().now()
    with pytest.raises(InvalidRecord):
        sign_enrollment(operator, issued_at=now, expires_at=now + timedelta(hours=1))


def test_revocation_cannot_pass_as_enrollment_token() -> None:
    operator = NodeIdentity.generate(random.Random(2))
    now = FixedClock().now()
    revocation = sign_revocation(
        operator, node_id=operator.node_id, reason="compromised", created_at=now
    )
    with pytest.raises(InvalidRecord):
        EnrollmentToken.from_wire(revocation.wire())


def test_a_retraction_round_trips_and_names_one_record_by_its_hash() -> None:
    operator = NodeIdentity.generate(random.Random(3))
    now = FixedClock().now()
    retraction = sign_retraction(operator, content_hash="ab" * 32, reason="wrong", created_at=now)
    assert Retraction.from_wire(retraction.wire()) == retraction
    assert retraction.wire()["type"] == "retraction"
    assert retraction.signed_by == operator.public_key_b64
    for bad in ("AB" * 32, "ab" * 31, "zz" * 32, ""):
        with pytest.raises(InvalidRecord):
            sign_retraction(operator, content_hash=bad, reason="wrong", created_at=now)
    with pytest.raises(InvalidRecord):
        sign_retraction(operator, content_hash="ab" * 32, reason="", created_at=now)


def test_a_retraction_and_a_revocation_cannot_pass_as_each_other() -> None:
    operator = NodeIdentity.generate(random.Random(4))
    now = FixedClock().now()
    retraction = sign_retraction(operator, content_hash="ab" * 32, reason="x", created_at=now)
    revocation = sign_revocation(operator, node_id=operator.node_id, reason="x", created_at=now)
    with pytest.raises(InvalidRecord):
        Revocation.from_wire(retraction.wire())
    with pytest.raises(InvalidRecord):
        Retraction.from_wire(revocation.wire())
    with pytest.raises(InvalidRecord):
        EnrollmentToken.from_wire(retraction.wire())
