"""The registry's signed records: registration, endorsement, enrollment token, revocation,
retraction.

Each model is strict, frozen and refuses unknown members, so an invalid record cannot exist:
``from_wire`` turns any parse failure into ``InvalidRecord(reason="malformed")``. Times are
kept as their canonical RFC 3339 strings (``lamarck.proto.timefmt``), not re-formatted
datetimes, so the dictionary a verifier rebuilds is byte for byte the one the signer signed.

The signed object is ``wire()``: the model's JSON form with absent optional members left out
(never ``null``). ``sign_*`` build a record and sign that form; the rules in
``lamarck.registry.rules`` verify it.

Operator statements (enrollment tokens, revocations of an identity, retractions of one
record) are signed under the ``enrollment`` record kind and carry a ``type`` member each, so
one can never be presented as another.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from lamarck.errors import InvalidRecord
from lamarck.proto.identity import NodeIdentity, b64u_decode, is_node_id
from lamarck.proto.keys import KeyRotation
from lamarck.proto.labels import check_label, peer_label
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.timefmt import format_ts, is_canonical_ts, parse_ts
from lamarck.proto.tls import certificate_pem
from lamarck.registry.params import AdmissionMode

__all__ = [
    "MAX_DOMAINS",
    "Admission",
    "AdmissionProof",
    "Endorsement",
    "EnrollmentToken",
    "NodeId",
    "PublicKeyB64",
    "Registration",
    "RegistryRecord",
    "RegistrySeal",
    "Retraction",
    "Revocation",
    "SignatureBlock",
    "Timestamp",
    "parse_record_ts",
    "sign_endorsement",
    "sign_enrollment",
    "sign_registration",
    "sign_retraction",
    "sign_revocation",
    "sign_seal",
]

#: A node announces at most this many domains; each is at most 64 characters.
MAX_DOMAINS = 32
_MAX_DOMAIN_LEN = 64
_MAX_TEXT = 256
_HEX64_RE = re.compile(r"^[0-9a-f]{64}$")
# host:port, host being a DNS name, IPv4, or a bracketed IPv6 literal.
_ADDRESS_RE = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]{1,253}):([0-9]{1,5})$")


def _check_b64_key(value: str) -> str:
    try:
        raw = b64u_decode(value)
    except InvalidRecord as e:
        raise ValueError("public key is not unpadded base64url") from e
    if len(raw) != 32:
        raise ValueError("an Ed25519 public key is 32 bytes")
    return value


def _check_ts(value: str) -> str:
    if not is_canonical_ts(value):
        raise ValueError("timestamp is not canonical RFC 3339 UTC (YYYY-MM-DDTHH:MM:SS[.f]Z)")
    return value


def _check_node_id(value: str) -> str:
    if not is_node_id(value):
        raise ValueError("not a node id")
    return value


def _check_label(value: str) -> str:
    try:
        return check_label(value)
    except InvalidRecord as e:
        raise ValueError(str(e)) from e


#: A node's human label (``lamarck.proto.labels``): a claim shown beside its id.
NodeLabel = Annotated[str, AfterValidator(_check_label)]
#: A node id (``lmk1`` + 32 base32 characters).
NodeId = Annotated[str, AfterValidator(_check_node_id)]
#: A raw Ed25519 public key as unpadded base64url.
PublicKeyB64 = Annotated[str, AfterValidator(_check_b64_key)]
#: A canonical RFC 3339 UTC timestamp string.
Timestamp = Annotated[str, AfterValidator(_check_ts)]


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")


class SignatureBlock(_Model):
    """The ``signature`` member of every signed record (see ``lamarck.proto.signing``)."""

    algorithm: str = Field(max_length=32)
    hash: str = Field(max_length=64)
    signed_by: str = Field(max_length=64)
    value: str = Field(max_length=128)


class RegistryRecord(_Model):
    """Base of the signed registry records: the wire form, parsing, the signature's key."""

    signature: SignatureBlock

    def wire(self) -> dict[str, Any]:
        """The JSON object that is signed and sent; absent optional members are omitted."""
        return self.model_dump(mode="json", exclude_none=True)

    @classmethod
    def from_wire(cls, obj: object) -> Self:
        """Parse a received JSON object; ``InvalidRecord(reason="malformed")`` if it is not one."""
        try:
            # Through JSON mode: sequences arrive as JSON arrays (lists), which strict
            # validation accepts as the tuples the frozen models hold only from JSON.
            return cls.model_validate_json(_json_dumps(obj))
        except ValidationError as e:
            raise InvalidRecord(f"malformed {cls.__name__}: {e}", reason="malformed") from e

    @property
    def signed_by(self) -> str:
        """The base64url public key that made the signature (not yet verified)."""
        return self.signature.signed_by


class Endorsement(RegistryRecord):
    """An admitted node vouches for a new identity (``endorsed`` admission), signed by it."""

    endorser_id: NodeId
    endorsee_id: NodeId
    endorsee_public_key: PublicKeyB64
    created_at: Timestamp
    expires_at: Timestamp


class EnrollmentToken(RegistryRecord):
    """The operator admits one identity (``operator`` admission): by node id, key, or both."""

    type: Literal["enrollment"] = "enrollment"
    node_id: NodeId | None = None
    public_key: PublicKeyB64 | None = None
    issued_at: Timestamp
    expires_at: Timestamp
    #: The human label the operator gives the node (shown beside its id everywhere).
    label: NodeLabel | None = None

    @model_validator(mode="after")
    def _names_someone(self) -> Self:
        # A token that names nobody would admit anybody: refuse it at parse time.
        if self.node_id is None and self.public_key is None:
            raise ValueError("an enrollment token names a node_id or a public_key")
        return self


class Revocation(RegistryRecord):
    """The operator revokes an identity: refused everywhere from then on."""

    type: Literal["revocation"] = "revocation"
    node_id: NodeId
    reason: str = Field(min_length=1, max_length=_MAX_TEXT)
    created_at: Timestamp


class Retraction(RegistryRecord):
    """The operator retracts one record (by its content hash): its lesson leaves every prompt
    on every node that holds it, as a revoked source's do (``lamarck.consensus.taint``)."""

    type: Literal["retraction"] = "retraction"
    #: The retracted record's content hash (sha256 hex of its canonical signed bytes).
    content_hash: str
    reason: str = Field(min_length=1, max_length=_MAX_TEXT)
    created_at: Timestamp

    @field_validator("content_hash")
    @classmethod
    def _content_hash(cls, v: str) -> str:
        if not _HEX64_RE.match(v):
            raise ValueError("content_hash is 64 lowercase hex digits (a sha256)")
        return v


class RegistrySeal(RegistryRecord):
    """The operator's sequence-numbered, signed statement of what the registry must keep: the
    revoked ids, who each endorser admitted (the endorsement caps count them) and the pin of
    every admitted id. A node keeps the highest ``seq`` it has seen and holds the registry to
    it: whoever can write Redis can delete records or put old ones back, but cannot forge a
    seal, nor make a node forget one (``lamarck.registry.seal``)."""

    type: Literal["seal"] = "seal"
    #: The network's namespace (a seal of another network seals nothing here).
    namespace: str = Field(min_length=1, max_length=64)
    #: Strictly increasing: a lower one is a rollback.
    seq: int = Field(ge=1)
    created_at: Timestamp
    revoked: tuple[NodeId, ...] = ()
    #: Endorser id -> the ids it admitted.
    endorsees: dict[str, tuple[NodeId, ...]] = Field(default_factory=dict)
    #: Admitted id -> its pinned key.
    pins: dict[str, PublicKeyB64] = Field(default_factory=dict)
    #: Compromised keys -> since when: whatever such a key signed at or after that instant is
    #: refused everywhere, what it signed before keeps verifying (the node's history).
    revoked_keys: dict[str, Timestamp] = Field(default_factory=dict)


class Admission(_Model):
    """The admission material a registration carries (which one depends on the mode)."""

    mode: AdmissionMode = Field(strict=False)
    endorsement: Endorsement | None = None
    enrollment_token: EnrollmentToken | None = None


class Registration(RegistryRecord):
    """A node announces itself: id, key, gRPC address, domains; signed over a registry nonce.

    ``rotation`` carries a key-rotation record (signed by the old key) when the node
    registers a new key for an id already pinned to its old one. ``tls_certificate`` is the
    node's peer-port TLS certificate (unpadded base64url DER, ``lamarck.proto.tls``): signed
    here with the identity key, it is what peers pin for this id when they dial it and what
    this node's calls may present (absent: a plaintext node, reachable by none that run TLS).
    """

    node_id: NodeId
    public_key: PublicKeyB64
    address: str
    domains: tuple[str, ...] = Field(max_length=MAX_DOMAINS)
    version: str = Field(min_length=1, max_length=64)
    nonce: str = Field(min_length=16, max_length=128)
    admission: Admission
    created_at: Timestamp
    rotation: dict[str, Any] | None = None
    tls_certificate: str | None = Field(default=None, max_length=8192)
    #: The node's own human label (its ``label`` setting); an enrollment label wins over it.
    label: NodeLabel | None = None

    @property
    def shown_label(self) -> str:
        """The label peers show beside this node's id (``lamarck.proto.labels``)."""
        token = self.admission.enrollment_token
        return peer_label(self.label, token.label if token is not None else None)

    @field_validator("tls_certificate")
    @classmethod
    def _certificate(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                certificate_pem(v)
            except InvalidRecord as e:
                raise ValueError(str(e)) from e
        return v

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        m = _ADDRESS_RE.match(v)
        if m is None or not 0 < int(m.group(2)) < 65536:
            raise ValueError("address is host:port")
        return v

    @field_validator("domains")
    @classmethod
    def _domains(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if any(not 0 < len(d) <= _MAX_DOMAIN_LEN for d in v):
            raise ValueError(f"each domain is 1..{_MAX_DOMAIN_LEN} characters")
        return v

    @field_validator("nonce")
    @classmethod
    def _nonce(cls, v: str) -> str:
        try:
            b64u_decode(v)
        except InvalidRecord as e:
            raise ValueError("nonce is not unpadded base64url") from e
        return v


@dataclass(frozen=True, slots=True)
class AdmissionProof:
    """An id's admission proof as the registry keeps it (``lamarck.registry.proofs``): the
    signed registration that admitted it and every key rotation since, oldest first.

    Nothing here is verified beyond its shape: a registry judges the proof with
    ``verify_admission`` before it believes a word of it.
    """

    registration: Registration
    #: Each rotation record's wire form (``lamarck.proto.keys.KeyRotation``), oldest first.
    rotations: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        for rotation in self.rotations:
            KeyRotation.from_obj(rotation)  # InvalidRecord unless it has a rotation's shape

    @property
    def keys(self) -> tuple[str, ...]:
        """The id's keys as this proof states them, first to current (unverified)."""
        if not self.rotations:
            return (self.registration.public_key,)
        first = str(self.rotations[0]["old_public_key"])
        return (first, *(str(r["new_public_key"]) for r in self.rotations))

    def with_rotation(self, rotation: Mapping[str, Any]) -> AdmissionProof:
        """This proof with ``rotation`` appended (unless it is already its last link)."""
        if self.rotations and dict(self.rotations[-1]) == dict(rotation):
            return self
        return AdmissionProof(self.registration, (*self.rotations, dict(rotation)))

    def wire(self) -> dict[str, Any]:
        """The JSON object a node keeps in its home."""
        return {
            "registration": self.registration.wire(),
            "rotations": [dict(r) for r in self.rotations],
        }

    @classmethod
    def from_wire(cls, obj: object) -> AdmissionProof:
        """Parse a kept proof; ``InvalidRecord(reason="malformed")`` if it is not one."""
        if not isinstance(obj, dict) or set(obj) != {"registration", "rotations"}:
            raise InvalidRecord("not an admission proof", reason="malformed")
        rotations = obj["rotations"]
        if not isinstance(rotations, list) or not all(isinstance(r, dict) for r in rotations):
            raise InvalidRecord("rotations is not a list of records", reason="malformed")
        return cls(Registration.from_wire(obj["registration"]), tuple(rotations))


def _json_dumps(obj: object) -> str:
    import json

    try:
        return json.dumps(obj, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidRecord(f"not a JSON value: {e}", reason="malformed") from e


def _signed(cls: type[Any], kind: RecordKind, body: dict[str, Any], signer: NodeIdentity) -> Any:
    # Drop absent members before signing: the wire form never carries null, so the verifier's
    # wire() rebuilds exactly this object.
    clean = {k: v for k, v in body.items() if v is not None}
    return cls.from_wire(sign_object(kind, clean, signer))


def sign_registration(
    identity: NodeIdentity,
    *,
    address: str,
    domains: tuple[str, ...] | list[str],
    version: str,
    nonce: str,
    admission: Admission,
    created_at: datetime,
    node_id: str | None = None,
    rotation: dict[str, Any] | None = None,
    tls_certificate: str | None = None,
    label: str | None = None,
) -> Registration:
    """Build and sign a registration for ``identity`` (``node_id`` differs only after rotation)."""
    body = {
        "node_id": node_id or identity.node_id,
        "public_key": identity.public_key_b64,
        "address": address,
        "domains": list(domains),
        "version": version,
        "nonce": nonce,
        "admission": admission.model_dump(mode="json", exclude_none=True),
        "created_at": format_ts(created_at),
        "rotation": rotation,
        "tls_certificate": tls_certificate,
        "label": label,
    }
    reg: Registration = _signed(Registration, RecordKind.registration, body, identity)
    return reg


def sign_endorsement(
    endorser: NodeIdentity,
    *,
    endorsee_id: str,
    endorsee_public_key: str,
    created_at: datetime,
    expires_at: datetime,
    endorser_id: str | None = None,
) -> Endorsement:
    """Build and sign an endorsement of ``endorsee_id``/key by ``endorser``."""
    body = {
        "endorser_id": endorser_id or endorser.node_id,
        "endorsee_id": endorsee_id,
        "endorsee_public_key": endorsee_public_key,
        "created_at": format_ts(created_at),
        "expires_at": format_ts(expires_at),
    }
    endorsement: Endorsement = _signed(Endorsement, RecordKind.endorsement, body, endorser)
    return endorsement


def sign_enrollment(
    operator: NodeIdentity,
    *,
    issued_at: datetime,
    expires_at: datetime,
    node_id: str | None = None,
    public_key: str | None = None,
    label: str | None = None,
) -> EnrollmentToken:
    """Build and sign an operator enrollment token for a node id and/or public key, with the
    node's human ``label`` if given (validated: ``InvalidRecord(reason="invalid_label")``)."""
    body = {
        "type": "enrollment",
        "node_id": node_id,
        "public_key": public_key,
        "issued_at": format_ts(issued_at),
        "expires_at": format_ts(expires_at),
        "label": None if label is None else check_label(label),
    }
    token: EnrollmentToken = _signed(EnrollmentToken, RecordKind.enrollment, body, operator)
    return token


def sign_revocation(
    operator: NodeIdentity, *, node_id: str, reason: str, created_at: datetime
) -> Revocation:
    """Build and sign an operator revocation of ``node_id``."""
    body = {
        "type": "revocation",
        "node_id": node_id,
        "reason": reason,
        "created_at": format_ts(created_at),
    }
    revocation: Revocation = _signed(Revocation, RecordKind.enrollment, body, operator)
    return revocation


def sign_retraction(
    operator: NodeIdentity, *, content_hash: str, reason: str, created_at: datetime
) -> Retraction:
    """Build and sign an operator retraction of the record whose content hash is given."""
    body = {
        "type": "retraction",
        "content_hash": content_hash,
        "reason": reason,
        "created_at": format_ts(created_at),
    }
    retraction: Retraction = _signed(Retraction, RecordKind.enrollment, body, operator)
    return retraction


def sign_seal(
    operator: NodeIdentity,
    *,
    namespace: str,
    seq: int,
    created_at: datetime,
    revoked: Iterable[str] = (),
    endorsees: Mapping[str, Iterable[str]] | None = None,
    pins: Mapping[str, str] | None = None,
    revoked_keys: Mapping[str, datetime] | None = None,
) -> RegistrySeal:
    """Build and sign the operator's seal ``seq`` of ``namespace``'s registry."""
    body = {
        "type": "seal",
        "namespace": namespace,
        "seq": seq,
        "created_at": format_ts(created_at),
        "revoked": sorted(set(revoked)),
        "endorsees": {e: sorted(set(ids)) for e, ids in sorted((endorsees or {}).items())},
        "pins": dict(sorted((pins or {}).items())),
        "revoked_keys": {k: format_ts(t) for k, t in sorted((revoked_keys or {}).items())},
    }
    seal: RegistrySeal = _signed(RegistrySeal, RecordKind.enrollment, body, operator)
    return seal


def parse_record_ts(value: str) -> datetime:
    """Parse one of these records' canonical timestamps (already validated at parse time)."""
    return parse_ts(value)
