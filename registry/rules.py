"""The registry's pure rules: admission (the Sybil gate), key pinning, revocation and
retraction. No I/O.

``check_registration`` decides from values the directory looked up (the nonce's issue time,
the id's pinned key, the revoked ids, the admitted ids with their keys, the operator key) and
an explicit ``now``; it returns ``Admitted`` or raises ``AdmissionRefused(reason=...)``.

Reasons: ``revoked``, ``unknown_nonce``, ``stale_nonce``, ``bad_proof``, ``key_mismatch``,
``key_pinned``, ``no_endorsement``, ``bad_endorsement``, ``bad_enrollment``. Open admission is
never refused for want of material, but every admission it grants is logged at WARNING as
``UNSAFE: open admission``. An id the registry lost may be re-admitted on the admission proof
it kept (``proven_keys``, ``AdmittedVia.KEPT_PROOF``): every rule but the material's applies.
A new id registering with a rotation of another id's pinned key to its own (signed by both
keys) is that id's **successor** (``AdmittedVia.ROTATION`` with ``lineage``): admitted on the
lineage's admission, since it is the same node under the id its new key derives.

These rules judge a registration once, in the registering node's process. Every reader judges
the stored admission proof again with its own mode and operator key
(``lamarck.registry.proofs``), reusing ``check_enrollment``, ``check_endorsement``,
``check_revocation`` and ``verify_signed_by``: a node that skips ``register()`` and writes
the registry's keys itself is admitted by nobody.

``pin_decision`` is the one key-pin refusal: whether a key is the registered, unrevoked key of
a node id (or, for a record, the key it had when the record was signed). The import
pipeline's stage (3) and the peer authentication of every PeerService call both ask it
(through ``lamarck.registry.pins.pin_refusal``, which fetches the facts).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from lamarck.errors import (
    AdmissionRefused,
    InvalidRecord,
    RegistryError,
    RotationInvalid,
    VerificationError,
)
from lamarck.proto.identity import b64u_decode, node_id_for
from lamarck.proto.signing import RecordKind, verify_object
from lamarck.registry.params import AdmissionMode, RegistryParams
from lamarck.registry.records import (
    Endorsement,
    EnrollmentToken,
    Registration,
    RegistryRecord,
    RegistrySeal,
    Retraction,
    Revocation,
    parse_record_ts,
)
from lamarck.registry.rotation import check_rotation_record

__all__ = [
    "Admitted",
    "AdmittedVia",
    "PinReason",
    "check_endorsement",
    "check_enrollment",
    "check_registration",
    "check_retraction",
    "check_revocation",
    "check_seal",
    "lineage_ids",
    "pin_decision",
    "verify_signed_by",
]

log = logging.getLogger(__name__)


class AdmittedVia(StrEnum):
    """On what grounds a registration was admitted."""

    PINNED = "pinned"  # a known id re-registering with its pinned key; admitted earlier
    ROTATION = "rotation"  # a known id moving to a new key, with a rotation signed by the old
    OPEN = "open"
    ENDORSEMENT = "endorsement"
    ENROLLMENT = "enrollment"
    KEPT_PROOF = "kept_proof"  # an id the registry lost, on the admission proof it kept


@dataclass(frozen=True, slots=True)
class Admitted:
    """A registration passed: what to pin (``pin_key``) and whether the pin is new or moved."""

    node_id: str
    pin_key: str
    via: AdmittedVia
    #: The id had no pin: the directory pins ``pin_key`` (first key wins, SETNX).
    new_pin: bool
    #: The id's pin moves from this key to ``pin_key`` (compare-and-set on the old key).
    rotated_from: str | None = None
    #: A successor: the id whose key rotated to ``pin_key`` (the rotation record's
    #: ``node_id``); this new id, derived from the new key, is admitted on that id's
    #: admission and every id of that lineage moves to the new key.
    lineage: str | None = None


def _refuse(reason: str, message: str, **details: Any) -> AdmissionRefused:
    return AdmissionRefused(message, reason=reason, **details)


def lineage_ids(keys: Sequence[str]) -> frozenset[str]:
    """The ids of a key chain's lineage: each derived from one of its keys (the first is the
    id the chain was admitted as; each later one a successor a rotation admitted)."""
    return frozenset(node_id_for(b64u_decode(k)) for k in keys)


def verify_signed_by(kind: RecordKind, record: RegistryRecord, expected_key: str) -> None:
    """Verify ``record``'s signature and that it was made by ``expected_key`` (base64url).

    Raises ``VerificationError``; the signer is named by key, not id, because after a key
    rotation an id is no longer derived from its current key.
    """
    if record.signed_by != expected_key:
        raise VerificationError("signed by another key", reason="key_mismatch")
    verify_object(kind, record.wire(), signer_id_path=None)


def check_registration(
    reg: Registration,
    *,
    nonce_issued: datetime | None,
    pinned_key: str | None,
    revoked: Collection[str],
    admitted_ids: Mapping[str, str],
    operator_public_key: str | None,
    params: RegistryParams,
    now: datetime,
    proven_keys: Sequence[str] | None = None,
    predecessor_key: str | None = None,
) -> Admitted:
    """Decide a registration; return ``Admitted`` or raise ``AdmissionRefused(reason=...)``.

    ``nonce_issued`` is when the registry issued ``reg.nonce`` (``None``: never issued, or
    already used); ``pinned_key`` the key ``reg.node_id`` is bound to (``None``: a new id);
    ``revoked`` holds revoked ids (at least ``reg.node_id`` and any endorser's, if revoked);
    ``admitted_ids`` maps admitted ids to their pinned keys (endorsers are looked up there);
    ``operator_public_key`` verifies enrollment tokens (``None``: no operator, tokens refused).

    ``proven_keys``: for an id with no pin, the key chain (first key to current) of the
    admission proof the node kept, which the caller verified (``verify_admission``). The id
    was admitted before, so (5) is skipped (and nothing is logged as open admission); the
    chain stands for the id's derivation from the key and for any rotation presented.

    ``predecessor_key``: for a new id whose registration carries a rotation of another id
    (the rotation's ``node_id``, its **lineage**), the key that id is pinned to now, as the
    caller verified it (``None``: not admitted, unknown, or revoked). The rotation must move
    exactly that key to the key registering, signed by both; then the new id — the one its
    key derives, so every record it signs binds to it as any other — is admitted as the
    lineage's successor, without new admission material (it is the same node). ``revoked``
    must hold the lineage's id when it is revoked.
    """
    # (1) Revoked ids are refused before anything else, whatever they present.
    if reg.node_id in revoked:
        raise _refuse("revoked", "this node id is revoked", node_id=reg.node_id)
    # (2) The nonce was issued by this registry, not yet used, and is fresh: a captured
    #     registration cannot be replayed later.
    if nonce_issued is None:
        raise _refuse("unknown_nonce", "nonce was not issued by the registry or already used")
    if now - nonce_issued > timedelta(seconds=params.nonce_ttl_s):
        raise _refuse("stale_nonce", "nonce is older than nonce_ttl_s")
    # (3) Proof of possession: the registration, which covers the nonce, is signed by the
    #     key it registers.
    try:
        verify_signed_by(RecordKind.registration, reg, reg.public_key)
    except VerificationError as e:
        raise _refuse("bad_proof", f"registration signature: {e}", cause=e.reason) from e
    # (4) Key binding. A known id keeps its first key unless the old key signed a rotation.
    if pinned_key is not None:
        admitted = _check_pinned(reg, pinned_key, params=params, now=now)
    elif proven_keys is not None:
        # A lost id: its kept chain starts at the key the id is derived from and ends at the
        # key registered now (verified by the caller; the ends are re-checked here).
        if not proven_keys or proven_keys[-1] != reg.public_key:
            raise _refuse("key_mismatch", "the kept proof's key chain ends at another key")
        if reg.node_id not in lineage_ids(proven_keys):
            raise _refuse("key_mismatch", "the kept proof's key chain is not this id's")
        return Admitted(reg.node_id, reg.public_key, AdmittedVia.KEPT_PROOF, new_pin=True)
    else:
        # A new id must be the one derived from the key: ids are computed, never chosen.
        if reg.node_id != node_id_for(b64u_decode(reg.public_key)):
            raise _refuse("key_mismatch", "node id is not derived from the public key")
        if reg.rotation is not None and reg.rotation.get("node_id") in revoked:
            raise _refuse("revoked", "the id this key rotated from is revoked")
        if reg.rotation is not None and predecessor_key is not None:
            return _check_successor(reg, predecessor_key, revoked=revoked, params=params, now=now)
        # A rotation from no key this registry believes (unknown, or revoked as compromised)
        # admits nothing by itself: the new id is judged on its own material.
        # (5) Admission: only a new identity passes the Sybil gate; a pinned one did already.
        via = _check_admission(
            reg,
            revoked=revoked,
            admitted_ids=admitted_ids,
            operator_public_key=operator_public_key,
            params=params,
            now=now,
        )
        admitted = Admitted(reg.node_id, reg.public_key, via, new_pin=True)
    if params.admission is AdmissionMode.OPEN:
        log.warning("UNSAFE: open admission", extra={"node_id": reg.node_id})
    return admitted


def _check_successor(
    reg: Registration,
    predecessor_key: str,
    *,
    revoked: Collection[str],
    params: RegistryParams,
    now: datetime,
) -> Admitted:
    """A new id registering with a rotation of its lineage's key to its own (see
    ``check_registration``)."""
    assert reg.rotation is not None
    lineage = reg.rotation.get("node_id")
    if not isinstance(lineage, str) or lineage == reg.node_id:
        raise _refuse("key_mismatch", "rotation presented for an id with no pinned key")
    if lineage in revoked:
        raise _refuse("revoked", "the id this key rotated from is revoked", node_id=lineage)
    try:
        check_rotation_record(
            reg.rotation,
            node_id=lineage,
            old_key=predecessor_key,
            new_key=reg.public_key,
            now=now,
            max_future_skew_s=params.max_future_skew_s,
        )
    except RotationInvalid as e:
        raise _refuse("key_pinned", f"rotation refused: {e}", cause=e.reason) from e
    return Admitted(
        reg.node_id,
        reg.public_key,
        AdmittedVia.ROTATION,
        new_pin=True,
        rotated_from=predecessor_key,
        lineage=lineage,
    )


def _check_pinned(
    reg: Registration, pinned_key: str, *, params: RegistryParams, now: datetime
) -> Admitted:
    if reg.public_key == pinned_key:
        return Admitted(reg.node_id, pinned_key, AdmittedVia.PINNED, new_pin=False)
    if reg.rotation is None:
        raise _refuse("key_pinned", "node id is bound to another key; a rotation is required")
    try:
        check_rotation_record(
            reg.rotation,
            node_id=reg.node_id,
            old_key=pinned_key,
            new_key=reg.public_key,
            now=now,
            max_future_skew_s=params.max_future_skew_s,
        )
    except RotationInvalid as e:
        raise _refuse("key_pinned", f"rotation refused: {e}", cause=e.reason) from e
    return Admitted(
        reg.node_id, reg.public_key, AdmittedVia.ROTATION, new_pin=False, rotated_from=pinned_key
    )


def _check_admission(
    reg: Registration,
    *,
    revoked: Collection[str],
    admitted_ids: Mapping[str, str],
    operator_public_key: str | None,
    params: RegistryParams,
    now: datetime,
) -> AdmittedVia:
    mode = params.admission
    if mode is AdmissionMode.OPEN:
        return AdmittedVia.OPEN
    token = reg.admission.enrollment_token
    endorsement = reg.admission.endorsement
    # An operator token admits in both closed modes: it is how the first node of an
    # endorsed network gets in, and the operator is trusted more than any endorser.
    if token is not None:
        check_enrollment(
            token,
            node_id=reg.node_id,
            public_key=reg.public_key,
            operator_public_key=operator_public_key,
            params=params,
            now=now,
        )
        return AdmittedVia.ENROLLMENT
    if mode is AdmissionMode.OPERATOR:
        raise _refuse("bad_enrollment", "operator admission needs an enrollment token")
    if endorsement is None:
        raise _refuse("no_endorsement", "endorsed admission needs an endorsement or a token")
    check_endorsement(
        endorsement,
        endorsee_id=reg.node_id,
        endorsee_public_key=reg.public_key,
        revoked=revoked,
        admitted_ids=admitted_ids,
        params=params,
        now=now,
    )
    return AdmittedVia.ENDORSEMENT


def _check_window(
    reason: str, start: str, end: str, *, params: RegistryParams, now: datetime
) -> None:
    """A record is usable from ``start`` (allowing clock skew) until strictly before ``end``."""
    begins, ends = parse_record_ts(start), parse_record_ts(end)
    if ends <= begins:
        raise _refuse(reason, "validity window is empty (expires before it starts)")
    if begins > now + timedelta(seconds=params.max_future_skew_s):
        raise _refuse(reason, "issued in the future")
    if now >= ends:
        raise _refuse(reason, "expired")


def check_endorsement(
    endorsement: Endorsement,
    *,
    endorsee_id: str,
    endorsee_public_key: str,
    revoked: Collection[str],
    admitted_ids: Mapping[str, str],
    params: RegistryParams,
    now: datetime,
) -> None:
    """Check an endorsement admits this id and key; raise ``AdmissionRefused(bad_endorsement)``."""
    bad = "bad_endorsement"
    # (1) It names exactly this identity: an endorsement for one key cannot admit another.
    if endorsement.endorsee_id != endorsee_id or endorsement.endorsee_public_key != (
        endorsee_public_key
    ):
        raise _refuse(bad, "endorsement is for another identity")
    # (2) Nobody vouches for themselves.
    if endorsement.endorser_id == endorsee_id:
        raise _refuse(bad, "self-endorsement")
    # (3) The endorser is admitted (pinned) and not revoked.
    endorser_key = admitted_ids.get(endorsement.endorser_id)
    if endorser_key is None:
        raise _refuse(bad, "endorser is not admitted", endorser_id=endorsement.endorser_id)
    if endorsement.endorser_id in revoked:
        raise _refuse(bad, "endorser is revoked", endorser_id=endorsement.endorser_id)
    # (4) Within its validity window.
    _check_window(bad, endorsement.created_at, endorsement.expires_at, params=params, now=now)
    # (5) Signed by the endorser's pinned key.
    try:
        verify_signed_by(RecordKind.endorsement, endorsement, endorser_key)
    except VerificationError as e:
        raise _refuse(bad, f"endorsement signature: {e}", cause=e.reason) from e


def check_enrollment(
    token: EnrollmentToken,
    *,
    node_id: str,
    public_key: str,
    operator_public_key: str | None,
    params: RegistryParams,
    now: datetime,
) -> None:
    """Check an operator token admits this id and key, else ``AdmissionRefused(bad_enrollment)``."""
    bad = "bad_enrollment"
    # (1) Without an operator key nobody can be enrolled: fail closed, never skip the check.
    if operator_public_key is None:
        raise _refuse(bad, "no operator key is configured")
    # (2) Every identity field it names matches (it names at least one, see the model).
    if token.node_id is not None and token.node_id != node_id:
        raise _refuse(bad, "token is for another node id")
    if token.public_key is not None and token.public_key != public_key:
        raise _refuse(bad, "token is for another public key")
    # (3) Within its validity window.
    _check_window(bad, token.issued_at, token.expires_at, params=params, now=now)
    # (4) Signed by the operator key.
    try:
        verify_signed_by(RecordKind.enrollment, token, operator_public_key)
    except VerificationError as e:
        raise _refuse(bad, f"enrollment signature: {e}", cause=e.reason) from e


def _operator_statement_refusal(
    what: str,
    record: Revocation | Retraction | RegistrySeal,
    *,
    operator_public_key: str | None,
    params: RegistryParams,
    now: datetime,
) -> str | None:
    """Why an operator statement (revocation, retraction) is not the operator's, or ``None``:
    (1) a key to judge it by is configured, (2) it is not dated ahead of ``now`` beyond the
    skew, (3) the operator key signed it."""
    if operator_public_key is None:
        return "no operator key is configured"
    if parse_record_ts(record.created_at) > now + timedelta(seconds=params.max_future_skew_s):
        return f"{what} issued in the future"
    try:
        verify_signed_by(RecordKind.enrollment, record, operator_public_key)
    except (VerificationError, InvalidRecord) as e:
        return f"{what} signature: {e}"
    return None


def check_revocation(
    revocation: Revocation,
    *,
    operator_public_key: str | None,
    params: RegistryParams,
    now: datetime,
) -> None:
    """Check a revocation is the operator's; raise ``RegistryError(reason="bad_revocation")``."""
    why = _operator_statement_refusal(
        "revocation", revocation, operator_public_key=operator_public_key, params=params, now=now
    )
    if why is not None:
        raise RegistryError(why, reason="bad_revocation")


def check_seal(
    seal: RegistrySeal,
    *,
    namespace: str,
    operator_public_key: str | None,
    params: RegistryParams,
    now: datetime,
) -> None:
    """Check a seal is the operator's, for this network; ``RegistryError(reason="bad_seal")``."""
    why = _operator_statement_refusal(
        "seal", seal, operator_public_key=operator_public_key, params=params, now=now
    )
    if why is None and seal.namespace != namespace:
        why = f"seal of namespace {seal.namespace!r}, not {namespace!r}"
    if why is not None:
        raise RegistryError(why, reason="bad_seal")


def check_retraction(
    retraction: Retraction,
    *,
    operator_public_key: str | None,
    params: RegistryParams,
    now: datetime,
) -> None:
    """Check a retraction is the operator's; raise ``RegistryError(reason="bad_retraction")``.

    Anything not signed by the network's operator key retracts nothing: a node, or anyone
    with write access to the registry, cannot take another's lesson out of every prompt.
    """
    why = _operator_statement_refusal(
        "retraction", retraction, operator_public_key=operator_public_key, params=params, now=now
    )
    if why is not None:
        raise RegistryError(why, reason="bad_retraction")


class PinReason(StrEnum):
    """Why a key is not the one to believe for a node id."""

    UNREGISTERED_SOURCE = "unregistered_source"
    REVOKED_SOURCE = "revoked_source"
    KEY_NOT_PINNED = "key_not_pinned"
    #: The operator revoked the signing key as compromised (its seal), from before the record.
    REVOKED_KEY = "revoked_key"
    REGISTRY_UNAVAILABLE = "registry_unavailable"


def pin_decision(
    node_id: str,
    key: str | None,
    *,
    revoked: bool,
    pinned: str | None,
    revoked_via: str | None = None,
    key_then: bool = False,
) -> tuple[PinReason, str] | None:
    """Why ``key`` is not the registered, unrevoked key of ``node_id`` (a reason and a phrase
    about ``node_id``), or None when it is; ``revoked`` and ``pinned`` are the registry's
    facts about ``node_id`` (``pinned`` None: it never registered), ``revoked_via`` the
    revoked identity its admission ran through, if any.

    ``key_then``: ``key`` was ``node_id``'s key when the record was signed (a key its verified
    rotation chain retired after the record's date). Such a record keeps verifying after the
    rotation; anything new from a retired key is refused like any other key."""
    if revoked:
        return PinReason.REVOKED_SOURCE, f"{node_id} is revoked"
    if revoked_via is not None and revoked_via != node_id:
        return (
            PinReason.REVOKED_SOURCE,
            f"{node_id} was admitted through {revoked_via}, which is revoked",
        )
    if pinned is None:
        return PinReason.UNREGISTERED_SOURCE, f"{node_id} is not registered"
    if key != pinned and not key_then:
        return PinReason.KEY_NOT_PINNED, f"{node_id} is pinned to another key"
    return None
