"""Peer tokens: how a node proves, on every PeerService call, which node is calling.

A request's ``sender_node_id`` (Publish) or ``requester_node_id`` (Sync) is only a claim; the
receiver charges the sender for bad bytes and decides from the requester's reputation which
``trusted`` and ``private`` records it may see, so the claim must be proven. The caller sends a
**peer token** in the call metadata key ``lamarck-peer-token``: base64url (no padding) of the
canonical JSON of a record signed as kind ``peer_auth``::

    {"kind": "peer_auth", "node_id": <caller>, "audience": <callee's node id>,
     "channel": <SHA-256 hex of the caller's TLS certificate, "" without TLS>,
     "issued_at": RFC 3339 UTC, "expires_at": RFC 3339 UTC, "signature": {...}}

The callee (1) decodes it and verifies the signature, whose key must be the one ``node_id``
is derived from; (2) checks that ``audience`` is itself; (3) checks that it is already issued
(allowing ``clock_skew_s``), not expired, and not valid for longer than ``max_lifetime_s``.
The node then (4) checks that the key is the one the registry pins to ``node_id`` and that
the id is not revoked, (5) that the id the request names is the token's, and (6) that
``channel`` is the certificate the call's TLS connection was made with
(``lamarck.node.api.peer_auth``).

Why one token per (caller, callee) reused until near its expiry rather than a signature per
call: verification is cached by the callee, so an authenticated call costs a dictionary
lookup. The audience binding means a peer that receives a token cannot replay it to a third
node, and the channel binding means nobody can replay it to the callee either: a call is
accepted only on a mutual-TLS connection whose client proved it holds the private key of the
certificate the token names, which the token's signer alone holds. The token states, under
the caller's identity key, which certificate speaks for it: that is what maps a connection's
certificate to an admitted id.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from lamarck.errors import InvalidRecord, Unauthenticated, VerificationError
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.identity import NodeIdentity, is_node_id
from lamarck.proto.signing import RecordKind, sign_object, verify_raw
from lamarck.proto.timefmt import format_ts, parse_ts

__all__ = [
    "PEER_TOKEN_KIND",
    "PEER_TOKEN_METADATA_KEY",
    "PeerAuthParams",
    "PeerToken",
    "issue_token",
    "read_token",
]

#: Metadata key carrying the caller's peer token on PeerService calls.
PEER_TOKEN_METADATA_KEY = "lamarck-peer-token"
#: The ``kind`` member of a peer token record.
PEER_TOKEN_KIND = "peer_auth"
# A token is a few hundred bytes; anything much larger is not one.
_MAX_TOKEN_CHARS = 2048
_FIELDS = frozenset(
    {"kind", "node_id", "audience", "channel", "issued_at", "expires_at", "signature"}
)
_HEX64 = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True)
class PeerAuthParams:
    """Lifetimes and tolerances of peer tokens, validated on construction."""

    # Seconds a token issued by this node stays valid, > 0 and <= max_lifetime_s.
    lifetime_s: float = 300.0
    # Longest validity a received token may claim; a longer one is refused (a leaked
    # token must not live for days).
    max_lifetime_s: float = 900.0
    # How far a received token's issued_at may lie in this node's future (clock drift).
    clock_skew_s: float = 60.0
    # A caller renews its token once less than this share of the lifetime remains.
    renew_fraction: float = 0.5

    def __post_init__(self) -> None:
        for name in ("lifetime_s", "max_lifetime_s", "clock_skew_s", "renew_fraction"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"invalid PeerAuthParams.{name}: must be a finite number >= 0")
        if not 0 < self.lifetime_s <= self.max_lifetime_s:
            raise ValueError("invalid PeerAuthParams.lifetime_s: must be > 0 and <= max_lifetime_s")
        if not 0 < self.renew_fraction < 1:
            raise ValueError("invalid PeerAuthParams.renew_fraction: must be in (0, 1)")


@dataclass(frozen=True, slots=True)
class PeerToken:
    """A verified peer token: who called, with which key, and until when it holds."""

    node_id: str
    public_key_b64: str
    audience: str
    #: SHA-256 (hex) of the TLS certificate the caller's calls come with; "" without TLS.
    channel: str
    issued_at: datetime
    expires_at: datetime


def issue_token(
    identity: NodeIdentity,
    audience: str,
    now: datetime,
    params: PeerAuthParams,
    *,
    channel: str = "",
) -> str:
    """A peer token by ``identity`` for calls to ``audience`` over connections made with the
    TLS certificate whose fingerprint is ``channel`` ("" without TLS), valid from ``now``."""
    record = {
        "kind": PEER_TOKEN_KIND,
        "node_id": identity.node_id,
        "audience": audience,
        "channel": channel,
        "issued_at": format_ts(now),
        "expires_at": format_ts(now + timedelta(seconds=params.lifetime_s)),
    }
    raw = canonical_bytes(sign_object(RecordKind.peer_auth, record, identity))
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def read_token(token: str, *, audience: str, now: datetime, params: PeerAuthParams) -> PeerToken:
    """Checks (1)-(3) of a received token; returns it or raises ``Unauthenticated``.

    Reasons: ``token_malformed``, ``token_bad_signature``, ``token_key_mismatch``,
    ``wrong_audience``, ``token_not_yet_valid``, ``token_expired``, ``token_too_long_lived``.
    """
    if not token or len(token) > _MAX_TOKEN_CHARS:
        raise Unauthenticated("peer token is empty or oversized", reason="token_malformed")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError) as e:
        raise Unauthenticated("peer token is not base64url", reason="token_malformed") from e
    # (1) The signature, by the key node_id is derived from.
    try:
        obj = verify_raw(RecordKind.peer_auth, raw, signer_id_path=("node_id",))
    except VerificationError as e:
        reason = {"key_mismatch": "token_key_mismatch", "malformed": "token_malformed"}.get(
            e.reason, "token_bad_signature"
        )
        raise Unauthenticated(f"peer token does not verify: {e}", reason=reason) from e
    issued_at, expires_at = _shape(obj)
    # (2) Issued for this node, so no peer can replay a token it was given to a third node.
    if obj["audience"] != audience:
        raise Unauthenticated("peer token is for another node", reason="wrong_audience")
    # (3) Within its validity, which is itself bounded.
    if issued_at > now + timedelta(seconds=params.clock_skew_s):
        raise Unauthenticated("peer token is issued in the future", reason="token_not_yet_valid")
    if now >= expires_at:
        raise Unauthenticated("peer token has expired", reason="token_expired")
    if (expires_at - issued_at).total_seconds() > params.max_lifetime_s:
        raise Unauthenticated(
            "peer token claims a validity longer than allowed", reason="token_too_long_lived"
        )
    return PeerToken(
        node_id=obj["node_id"],
        public_key_b64=obj["signature"]["signed_by"],
        audience=audience,
        channel=obj["channel"],
        issued_at=issued_at,
        expires_at=expires_at,
    )


def _shape(obj: dict[str, Any]) -> tuple[datetime, datetime]:
    """The token has exactly its fields, of the right types; returns its two times."""
    if set(obj) != _FIELDS or obj["kind"] != PEER_TOKEN_KIND:
        raise Unauthenticated("not a peer token record", reason="token_malformed")
    if not is_node_id(obj["node_id"]) or not isinstance(obj["audience"], str):
        raise Unauthenticated("peer token ids are malformed", reason="token_malformed")
    channel = obj["channel"]
    if not isinstance(channel, str) or (
        channel and (len(channel) != 64 or not set(channel) <= _HEX64)
    ):
        raise Unauthenticated("peer token channel is malformed", reason="token_malformed")
    try:
        issued_at, expires_at = parse_ts(obj["issued_at"]), parse_ts(obj["expires_at"])
    except (InvalidRecord, TypeError) as e:
        raise Unauthenticated("peer token times are malformed", reason="token_malformed") from e
    if expires_at <= issued_at:
        raise Unauthenticated("peer token expires before it is issued", reason="token_malformed")
    return issued_at, expires_at
