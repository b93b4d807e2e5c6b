"""The pure admission and pinning rules: every refusal reason, no server."""

from __future__ import annotations

import logging
import random
from datetime import datetime, timedelta
from typing import Any

import pytest

from lamarck.errors import AdmissionRefused, RegistryError
from lamarck.proto.clock import FixedClock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.keys import make_rotation
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.timefmt import format_ts
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import (
    Admission,
    Endorsement,
    EnrollmentToken,
    Registration,
    sign_endorsement,
    sign_enrollment,
    sign_registration,
    sign_retraction,
    sign_revocation,
)
from lamarck.registry.rules import (
    AdmittedVia,
    check_registration,
    check_retraction,
    check_revocation,
)

NONCE = "bm9uY2Utbm9uY2Utbm9uY2U"
HOUR = timedelta(hours=1)


class World:
    """Identities, a fixed clock and helpers to build registrations."""

    def __init__(self) -> None:
        rng = random.Random(5)
        self.clock = FixedClock()
        self.operator = NodeIdentity.generate(rng)
        self.member = NodeIdentity.generate(rng)  # already admitted
        self.newcomer = NodeIdentity.generate(rng)
        self.stranger = NodeIdentity.generate(rng)

    @property
    def now(self) -> datetime:
        return self.clock.now()

    def endorsement(self, endorser: NodeIdentity | None = None, **kw: Any) -> Endorsement:
        args: dict[str, Any] = {
            "endorsee_id": self.newcomer.node_id,
            "endorsee_public_key": self.newcomer.public_key_b64,
            "created_at": self.now,
            "expires_at": self.now + HOUR,
        }
        args.update(kw)
        return sign_endorsement(endorser or self.member, **args)

    def token(self, signer: NodeIdentity | None = None, **kw: Any) -> EnrollmentToken:
        args: dict[str, Any] = {
            "node_id": self.newcomer.node_id,
            "issued_at": self.now,
            "expires_at": self.now + HOUR,
        }
        args.update(kw)
        return sign_enrollment(signer or self.operator, **args)

    def registration(
        self,
        identity: NodeIdentity | None = None,
        *,
        mode: AdmissionMode = AdmissionMode.ENDORSED,
        endorsement: Endorsement | None = None,
        token: EnrollmentToken | None = None,
        **kw: Any,
    ) -> Registration:
        return sign_registration(
            identity or self.newcomer,
            address="127.0.0.1:7000",
            domains=("git",),
            version="0.1.0",
            nonce=NONCE,
            admission=Admission(mode=mode, endorsement=endorsement, enrollment_token=token),
            created_at=self.now,
            **kw,
        )

    def check(self, reg: Registration, mode: AdmissionMode, **kw: Any) -> Any:
        args: dict[str, Any] = {
            "nonce_issued": self.now - timedelta(seconds=1),
            "pinned_key": None,
            "revoked": set(),
            "admitted_ids": {self.member.node_id: self.member.public_key_b64},
            "operator_public_key": self.operator.public_key_b64,
            "params": RegistryParams(admission=mode),
            "now": self.now,
        }
        args.update(kw)
        return check_registration(reg, **args)

    def rotation(self, signer: NodeIdentity, **kw: Any) -> dict[str, Any]:
        """A rotation of the member's id to the newcomer's key, signed by ``signer``."""
        body = make_rotation(self.member, self.newcomer, self.now)
        body.update(kw)
        return sign_object(RecordKind.key_rotation, body, signer)


@pytest.fixture
def w() -> World:
    return World()


def refused(reason: str) -> Any:
    return pytest.raises(AdmissionRefused, match=reason)


# -- Sybil gate ---------------------------------------------------------------------------


def test_sybil_without_endorsement_is_refused_in_endorsed_mode(w: World) -> None:
    with refused("no_endorsement") as e:
        w.check(w.registration(), AdmissionMode.ENDORSED)
    assert e.value.reason == "no_endorsement"


def test_sybil_without_enrollment_token_is_refused_in_operator_mode(w: World) -> None:
    with refused("bad_enrollment"):
        w.check(w.registration(mode=AdmissionMode.OPERATOR), AdmissionMode.OPERATOR)


def test_endorsement_does_not_admit_in_operator_mode(w: World) -> None:
    reg = w.registration(mode=AdmissionMode.OPERATOR, endorsement=w.endorsement())
    with refused("bad_enrollment"):
        w.check(reg, AdmissionMode.OPERATOR)


def test_open_mode_admits_anyone_and_logs_unsafe(
    w: World, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="lamarck.registry.rules"):
        admitted = w.check(w.registration(mode=AdmissionMode.OPEN), AdmissionMode.OPEN)
        w.check(
            w.registration(mode=AdmissionMode.OPEN),
            AdmissionMode.OPEN,
            pinned_key=w.newcomer.public_key_b64,
        )
    assert admitted.via is AdmittedVia.OPEN and admitted.new_pin
    unsafe = [r for r in caplog.records if r.getMessage() == "UNSAFE: open admission"]
    assert len(unsafe) == 2 and all(r.levelno == logging.WARNING for r in unsafe)


def test_valid_endorsement_from_admitted_node_admits(w: World) -> None:
    admitted = w.check(w.registration(endorsement=w.endorsement()), AdmissionMode.ENDORSED)
    assert admitted.via is AdmittedVia.ENDORSEMENT
    assert admitted.new_pin and admitted.pin_key == w.newcomer.public_key_b64


@pytest.mark.parametrize(
    "case",
    ["endorser_not_admitted", "endorser_revoked", "expired", "future", "forged", "other_key"],
)
def test_bad_endorsement_is_refused(w: World, case: str) -> None:
    endorsement = w.endorsement()
    kw: dict[str, Any] = {}
    if case == "endorser_not_admitted":
        kw["admitted_ids"] = {}
    elif case == "endorser_revoked":
        kw["revoked"] = {w.member.node_id}
    elif case == "expired":
        endorsement = w.endorsement(created_at=w.now - 2 * HOUR, expires_at=w.now - HOUR)
    elif case == "future":
        endorsement = w.endorsement(created_at=w.now + HOUR, expires_at=w.now + 2 * HOUR)
    elif case == "forged":
        # The stranger signs in the member's name: the member's pinned key did not sign it.
        endorsement = w.endorsement(w.stranger, endorser_id=w.member.node_id)
    elif case == "other_key":
        endorsement = w.endorsement(endorsee_public_key=w.stranger.public_key_b64)
    with refused("bad_endorsement"):
        w.check(w.registration(endorsement=endorsement), AdmissionMode.ENDORSED, **kw)


def test_self_endorsement_is_refused(w: World) -> None:
    endorsement = w.endorsement(w.newcomer)
    admitted = {w.newcomer.node_id: w.newcomer.public_key_b64}
    with refused("bad_endorsement"):
        w.check(
            w.registration(endorsement=endorsement),
            AdmissionMode.ENDORSED,
            admitted_ids=admitted,
        )


def test_tampered_endorsement_signature_is_refused(w: World) -> None:
    wire = w.endorsement().wire()
    wire["expires_at"] = format_ts(w.now + 100 * HOUR)  # stretch its life after signing
    with refused("bad_endorsement"):
        w.check(w.registration(endorsement=Endorsement.from_wire(wire)), AdmissionMode.ENDORSED)


@pytest.mark.parametrize("mode", [AdmissionMode.OPERATOR, AdmissionMode.ENDORSED])
def test_operator_token_admits_in_closed_modes(w: World, mode: AdmissionMode) -> None:
    admitted = w.check(w.registration(mode=mode, token=w.token()), mode)
    assert admitted.via is AdmittedVia.ENROLLMENT


def test_token_by_public_key_admits(w: World) -> None:
    token = w.token(node_id=None, public_key=w.newcomer.public_key_b64)
    admitted = w.check(w.registration(token=token), AdmissionMode.OPERATOR)
    assert admitted.via is AdmittedVia.ENROLLMENT


@pytest.mark.parametrize("case", ["not_operator", "expired", "other_id", "no_operator_key"])
def test_bad_enrollment_is_refused(w: World, case: str) -> None:
    token = w.token()
    kw: dict[str, Any] = {}
    if case == "not_operator":
        token = w.token(w.member)
    elif case == "expired":
        token = w.token(issued_at=w.now - 2 * HOUR, expires_at=w.now - HOUR)
    elif case == "other_id":
        token = w.token(node_id=w.stranger.node_id)
    elif case == "no_operator_key":
        kw["operator_public_key"] = None
    with refused("bad_enrollment"):
        w.check(w.registration(token=token), AdmissionMode.OPERATOR, **kw)


# -- proof of key and nonce ---------------------------------------------------------------


def test_registration_not_signed_by_its_key_is_bad_proof(w: World) -> None:
    wire = w.registration(token=w.token()).wire()
    wire["address"] = "10.0.0.66:7000"  # redirect the peer after signing
    with refused("bad_proof"):
        w.check(Registration.from_wire(wire), AdmissionMode.OPERATOR)


def test_registration_signed_by_another_key_is_bad_proof(w: World) -> None:
    wire = w.registration(token=w.token()).wire()
    signed = sign_object(RecordKind.registration, wire, w.stranger)
    with refused("bad_proof"):
        w.check(Registration.from_wire(signed), AdmissionMode.OPERATOR)


def test_registration_signature_is_domain_separated(w: World) -> None:
    # A valid signature over the same object, but as another record kind, is no proof.
    wire = w.registration(token=w.token()).wire()
    signed = sign_object(RecordKind.endorsement, wire, w.newcomer)
    with refused("bad_proof"):
        w.check(Registration.from_wire(signed), AdmissionMode.OPERATOR)


def test_unknown_or_replayed_nonce_is_refused(w: World) -> None:
    # The directory consumes a nonce on first use, so a replay arrives with no issue time.
    with refused("unknown_nonce"):
        w.check(w.registration(token=w.token()), AdmissionMode.OPERATOR, nonce_issued=None)


def test_stale_nonce_is_refused(w: World) -> None:
    issued = w.now - timedelta(seconds=RegistryParams().nonce_ttl_s + 1)
    with refused("stale_nonce"):
        w.check(w.registration(token=w.token()), AdmissionMode.OPERATOR, nonce_issued=issued)


# -- key binding and pinning --------------------------------------------------------------


def test_id_not_derived_from_key_is_key_mismatch(w: World) -> None:
    reg = w.registration(node_id=w.member.node_id, token=w.token(node_id=w.member.node_id))
    with refused("key_mismatch"):
        w.check(reg, AdmissionMode.OPERATOR, admitted_ids={})


def test_key_substitution_for_pinned_id_is_refused(w: World) -> None:
    # The newcomer's key tries to take over the member's id, with valid admission material.
    reg = w.registration(node_id=w.member.node_id, token=w.token(node_id=w.member.node_id))
    with refused("key_pinned"):
        w.check(reg, AdmissionMode.OPERATOR, pinned_key=w.member.public_key_b64)


def test_pinned_id_reregisters_without_admission_material(w: World) -> None:
    reg = w.registration(w.member, mode=AdmissionMode.OPERATOR)
    admitted = w.check(reg, AdmissionMode.OPERATOR, pinned_key=w.member.public_key_b64)
    assert admitted.via is AdmittedVia.PINNED and not admitted.new_pin


def test_rotation_signed_by_old_key_is_accepted(w: World) -> None:
    reg = w.registration(node_id=w.member.node_id, rotation=w.rotation(w.member))
    admitted = w.check(reg, AdmissionMode.OPERATOR, pinned_key=w.member.public_key_b64)
    assert admitted.via is AdmittedVia.ROTATION
    assert admitted.rotated_from == w.member.public_key_b64
    assert admitted.pin_key == w.newcomer.public_key_b64


@pytest.mark.parametrize("case", ["signed_by_new_key", "other_target", "tampered", "future"])
def test_rotation_without_old_key_signature_is_refused(w: World, case: str) -> None:
    if case == "signed_by_new_key":
        rotation = w.rotation(w.newcomer)
    elif case == "other_target":
        # A genuine rotation by the member, but to another key than the one registering.
        rotation = make_rotation(w.member, w.stranger, w.now)
    elif case == "tampered":
        rotation = w.rotation(w.member)
        rotation["created_at"] = format_ts(w.now - HOUR)
    else:
        rotation = w.rotation(w.member, created_at=format_ts(w.now + 10 * HOUR))
    reg = w.registration(node_id=w.member.node_id, rotation=rotation)
    with refused("key_pinned"):
        w.check(reg, AdmissionMode.OPERATOR, pinned_key=w.member.public_key_b64)


def test_a_rotation_from_a_key_nobody_pinned_admits_nothing_by_itself(w: World) -> None:
    # No predecessor this registry believes (unknown, or its key revoked as compromised):
    # the new id is judged on its own material, as if it presented no rotation.
    reg = w.registration(rotation=make_rotation(w.stranger, w.newcomer, w.now))
    with refused("bad_enrollment"):
        w.check(reg, AdmissionMode.OPERATOR)
    admitted = w.check(reg, AdmissionMode.OPEN)
    assert admitted.lineage is None and admitted.via is not AdmittedVia.ROTATION


# -- revocation ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(AdmissionMode))
@pytest.mark.parametrize("pinned", [False, True])
def test_revoked_id_is_refused_in_every_mode(w: World, mode: AdmissionMode, pinned: bool) -> None:
    reg = w.registration(mode=mode, token=w.token(), endorsement=w.endorsement())
    pin = w.newcomer.public_key_b64 if pinned else None
    with refused("revoked"):
        w.check(reg, mode, revoked={w.newcomer.node_id}, pinned_key=pin)


def test_revocation_must_be_signed_by_operator(w: World) -> None:
    params = RegistryParams()
    good = sign_revocation(w.operator, node_id=w.member.node_id, reason="abuse", created_at=w.now)
    check_revocation(good, operator_public_key=w.operator.public_key_b64, params=params, now=w.now)
    forged = sign_revocation(w.member, node_id=w.stranger.node_id, reason="x", created_at=w.now)
    with pytest.raises(RegistryError, match="bad_revocation"):
        check_revocation(
            forged, operator_public_key=w.operator.public_key_b64, params=params, now=w.now
        )
    with pytest.raises(RegistryError, match="bad_revocation"):
        check_revocation(good, operator_public_key=None, params=params, now=w.now)


def test_retraction_must_be_signed_by_operator_and_not_dated_ahead(w: World) -> None:
    params = RegistryParams()
    key = w.operator.public_key_b64
    good = sign_retraction(w.operator, content_hash="cd" * 32, reason="wrong", created_at=w.now)
    check_retraction(good, operator_public_key=key, params=params, now=w.now)
    forged = sign_retraction(w.member, content_hash="cd" * 32, reason="spite", created_at=w.now)
    with pytest.raises(RegistryError) as e:
        check_retraction(forged, operator_public_key=key, params=params, now=w.now)
    assert e.value.reason == "bad_retraction"
    with pytest.raises(RegistryError, match="bad_retraction"):
        check_retraction(good, operator_public_key=None, params=params, now=w.now)
    ahead = w.now + timedelta(seconds=params.max_future_skew_s + 60)
    early = sign_retraction(w.operator, content_hash="cd" * 32, reason="x", created_at=ahead)
    with pytest.raises(RegistryError, match="bad_retraction"):
        check_retraction(early, operator_public_key=key, params=params, now=w.now)
    # Its signature covers the hash: the operator's retraction of one record retracts no other.
    moved = good.model_copy(update={"content_hash": "ef" * 32})
    with pytest.raises(RegistryError, match="bad_retraction"):
        check_retraction(moved, operator_public_key=key, params=params, now=w.now)
