"""Signing and verifying records: domain-separated Ed25519 over RFC 8785 canonical bytes.

Signing input = ``b"lamarck/v1/<kind>\\n"`` + canonical JSON of the record without its
``signature`` member. The prefix differs per record kind, so a signature made for a vote can
never be presented as a memory, a registration, or anything else.

The ``signature`` block::

    {"algorithm": "ed25519",
     "hash": sha256 hex of the signing input,
     "signed_by": base64url (unpadded) raw public key,
     "value": base64url (unpadded) signature}

Verification returns ``None`` or raises ``VerificationError`` with ``reason`` one of
``malformed``, ``unknown_algorithm``, ``key_mismatch``, ``hash_mismatch``, ``bad_signature``
(and ``not_canonical`` from :func:`verify_raw` when asked to insist on canonical bytes).

Order of the checks (numbered the same in the code), cheapest and most specific first, the
Ed25519 verification last: (0) received bytes only: UTF-8 JSON, and canonical; (1) the
signature block's shape; (2) the algorithm; (3) the encodings of hash, key and signature;
(4) the author id bound to the key; (5) the hash of the signing input; (6) the signature.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from lamarck.errors import InvalidRecord, VerificationError
from lamarck.proto.canonical import ReceivedJson, canonical_bytes, parse_received, sha256_hex
from lamarck.proto.identity import (
    PUBLIC_KEY_SIZE,
    SIGNATURE_SIZE,
    NodeIdentity,
    b64u_decode,
    b64u_encode,
    node_id_for,
    public_key_from_bytes,
    verify_ed25519,
)

__all__ = [
    "ALGORITHM",
    "MEMORY_SIGNER_ID_PATH",
    "SIGNATURE_FIELD",
    "RecordKind",
    "sign_object",
    "signing_input",
    "verify_object",
    "verify_raw",
    "verify_received",
]

ALGORITHM = "ed25519"
SIGNATURE_FIELD = "signature"
# Where a memory names its author; verify binds that id to the signing key.
MEMORY_SIGNER_ID_PATH: tuple[str, ...] = ("provenance", "source_agent_id")
_SIGNATURE_KEYS = frozenset({"algorithm", "hash", "signed_by", "value"})
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class RecordKind(enum.Enum):
    """Every kind of signed record; each has its own domain-separation prefix."""

    memory = "memory"
    vote = "vote"
    key_rotation = "key_rotation"
    #: The new key's countersignature of a rotation (proof it is held by the rotating node).
    key_rotation_accept = "key_rotation_accept"
    registration = "registration"
    endorsement = "endorsement"
    registry_nonce = "registry_nonce"
    enrollment = "enrollment"
    outcome = "outcome"
    peer_auth = "peer_auth"
    trust_summary = "trust_summary"
    attestation = "attestation"

    @property
    def prefix(self) -> bytes:
        """The domain-separation prefix, ``b"lamarck/v1/<kind>\\n"``."""
        return _PREFIXES[self]


# The newline ends the prefix: no kind name is a prefix of another's prefix+payload, since
# canonical JSON never starts with a newline.
_PREFIXES: dict[RecordKind, bytes] = {
    kind: f"lamarck/v1/{kind.value}\n".encode("ascii") for kind in RecordKind
}


def _without_signature(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != SIGNATURE_FIELD}


def signing_input(kind: RecordKind, obj: Mapping[str, Any]) -> bytes:
    """Return the bytes that are hashed and signed: kind prefix + canonical JSON sans signature.

    Raises ``InvalidRecord(reason="not_canonicalizable")`` if ``obj`` cannot be canonicalised.
    """
    return kind.prefix + canonical_bytes(_without_signature(obj))


def sign_object(kind: RecordKind, obj: Mapping[str, Any], identity: NodeIdentity) -> dict[str, Any]:
    """Return a copy of ``obj`` with a fresh ``signature`` block by ``identity``.

    An existing ``signature`` member is replaced, never signed over. The caller binds the
    author id (e.g. ``provenance.source_agent_id``) to ``identity.node_id`` before signing.
    """
    data = signing_input(kind, obj)
    signed = _without_signature(obj)
    signed[SIGNATURE_FIELD] = {
        "algorithm": ALGORITHM,
        "hash": sha256_hex(data),
        "signed_by": identity.public_key_b64,
        "value": b64u_encode(identity.sign(data)),
    }
    return signed


def _malformed(message: str) -> VerificationError:
    return VerificationError(message, reason="malformed")


def _lookup(obj: Mapping[str, Any], path: tuple[str, ...]) -> object:
    node: object = obj
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            raise _malformed(f"signer id {'.'.join(path)} is missing")
        node = node[part]
    return node


def _check_and_get_key(
    obj: Mapping[str, Any], signer_id_path: tuple[str, ...] | None
) -> tuple[Ed25519PublicKey, bytes, str]:
    """Checks (1)-(4): structure, algorithm, encodings, key binding. Cheap, no crypto."""
    # (1) The signature block exists and has exactly the four string members. Extra members
    #     are refused: they are not signed, so they would let a relay change the record's
    #     bytes (and content hash) without breaking the signature.
    if not isinstance(obj, Mapping):
        raise _malformed("record is not a JSON object")
    block = obj.get(SIGNATURE_FIELD)
    if not isinstance(block, Mapping):
        raise _malformed("signature block is missing or not an object")
    if set(block) != _SIGNATURE_KEYS or not all(isinstance(v, str) for v in block.values()):
        raise _malformed("signature block must hold exactly algorithm, hash, signed_by, value")
    # (2) The algorithm is one we implement. Checked before decoding the fields, whose
    #     shapes depend on the algorithm.
    if block["algorithm"] != ALGORITHM:
        raise VerificationError(
            f"unknown algorithm {block['algorithm']!r}", reason="unknown_algorithm"
        )
    # (3) Encodings: hash is 64 lowercase hex; signed_by a 32-byte key; value 64 bytes.
    if not _HEX64.match(block["hash"]):
        raise _malformed("hash is not 64 lowercase hex digits")
    try:
        key_bytes = b64u_decode(block["signed_by"])
        signature = b64u_decode(block["value"])
        if len(key_bytes) != PUBLIC_KEY_SIZE or len(signature) != SIGNATURE_SIZE:
            raise _malformed("signed_by must be 32 bytes and value 64 bytes")
        public_key = public_key_from_bytes(key_bytes)
    except InvalidRecord as exc:
        raise _malformed(str(exc)) from exc
    # (4) The id the record claims as its author is the one derived from the signing key.
    #     Before any hashing: a record forged in another node's name is reported as
    #     key_mismatch, so that node is not blamed for a bad signature it never made.
    if signer_id_path is not None:
        claimed = _lookup(obj, signer_id_path)
        if not isinstance(claimed, str):
            raise _malformed(f"signer id {'.'.join(signer_id_path)} is not a string")
        if claimed != node_id_for(key_bytes):
            raise VerificationError(
                "the record's author id is not the signing key's node id", reason="key_mismatch"
            )
    return public_key, signature, block["hash"]


def _check_hash_and_signature(
    public_key: Ed25519PublicKey, signature: bytes, claimed_hash: str, data: bytes
) -> None:
    """Checks (5)-(6) over the signing input ``data``."""
    # (5) The stated hash is the hash of what we are about to verify. A mismatch means the
    #     content changed after signing (or the hash was forged); it is a cheaper, more
    #     specific diagnosis than a failed signature.
    if sha256_hex(data) != claimed_hash:
        raise VerificationError("hash does not match the signing input", reason="hash_mismatch")
    # (6) The Ed25519 signature over the signing input (OpenSSL: strict, S < L enforced).
    if not verify_ed25519(public_key, signature, data):
        raise VerificationError("Ed25519 signature does not verify", reason="bad_signature")


def verify_object(
    kind: RecordKind,
    obj: Mapping[str, Any],
    *,
    signer_id_path: tuple[str, ...] | None = MEMORY_SIGNER_ID_PATH,
) -> None:
    """Verify ``obj``'s signature for ``kind``; return ``None`` or raise ``VerificationError``.

    ``signer_id_path`` names the member holding the author's node id, which must equal
    ``node_id_for(signed_by)``; ``None`` skips that binding (for records that carry the key
    itself as the identity). The default is the memory's ``provenance.source_agent_id``: a
    record of another kind verified without naming its path fails closed (``malformed``).
    This re-canonicalises ``obj``; for bytes received from a peer use :func:`verify_raw`.
    """
    public_key, signature, claimed_hash = _check_and_get_key(obj, signer_id_path)
    try:
        data = signing_input(kind, obj)
    except InvalidRecord as exc:
        raise _malformed(str(exc)) from exc
    _check_hash_and_signature(public_key, signature, claimed_hash, data)


def verify_received(
    kind: RecordKind,
    received: ReceivedJson,
    *,
    signer_id_path: tuple[str, ...] | None = MEMORY_SIGNER_ID_PATH,
    require_canonical: bool = True,
) -> None:
    """Verify an already parsed :class:`ReceivedJson` (see :func:`verify_raw`)."""
    # (0) The bytes are their own canonical form, so the signing input below is the very
    #     bytes the signer signed (less the signature member), not a re-serialisation that
    #     could differ from them.
    if require_canonical and not received.is_canonical:
        raise VerificationError(
            "record bytes are not their RFC 8785 canonical form", reason="not_canonical"
        )
    if not isinstance(received.value, dict):
        raise _malformed("record is not a JSON object")
    public_key, signature, claimed_hash = _check_and_get_key(received.value, signer_id_path)
    try:
        data = kind.prefix + received.canonical_bytes_without(SIGNATURE_FIELD)
    except InvalidRecord as exc:
        raise _malformed(str(exc)) from exc
    _check_hash_and_signature(public_key, signature, claimed_hash, data)


def verify_raw(
    kind: RecordKind,
    raw: bytes,
    *,
    signer_id_path: tuple[str, ...] | None = MEMORY_SIGNER_ID_PATH,
    require_canonical: bool = True,
) -> dict[str, Any]:
    """Verify the exact received bytes ``raw`` and return the parsed object.

    Checks, in order: (0) ``raw`` is UTF-8 JSON (else ``malformed``) and, unless
    ``require_canonical`` is false, exactly its own canonical form (else ``not_canonical``);
    then (1)-(6) as in :func:`verify_object`. The canonical check runs mostly in the C
    ``json`` encoder (see ``lamarck.proto.canonical.ReceivedJson``), which is what keeps
    verification close to the cost of the Ed25519 check itself.
    """
    try:
        received = parse_received(raw, detach=SIGNATURE_FIELD)
    except InvalidRecord as exc:
        raise _malformed(str(exc)) from exc
    verify_received(
        kind, received, signer_id_path=signer_id_path, require_canonical=require_canonical
    )
    value: dict[str, Any] = received.value
    return value
