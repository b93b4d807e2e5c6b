"""Peer tokens: checks (1)-(3) of ``lamarck.proto.peer_auth``, each refusal with its reason."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest

from lamarck.errors import Unauthenticated
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.peer_auth import PeerAuthParams, issue_token, read_token
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.timefmt import format_ts

ALICE = NodeIdentity.from_seed(b"a" * 32)
BOB = NodeIdentity.from_seed(b"b" * 32)
MALLORY = NodeIdentity.from_seed(b"m" * 32)
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
P = PeerAuthParams()


def _encode(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(canonical_bytes(obj)).rstrip(b"=").decode()


def _decode(token: str) -> dict[str, object]:
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    value: dict[str, object] = json.loads(raw)
    return value


def _reason(token: str, *, audience: str = BOB.node_id, now: datetime = T0) -> str:
    with pytest.raises(Unauthenticated) as caught:
        read_token(token, audience=audience, now=now, params=P)
    return caught.value.reason


def test_a_token_names_its_signer_audience_and_validity() -> None:
    token = issue_token(ALICE, BOB.node_id, T0, P)
    peer = read_token(token, audience=BOB.node_id, now=T0 + timedelta(seconds=10), params=P)
    assert peer.node_id == ALICE.node_id
    assert peer.public_key_b64 == ALICE.public_key_b64
    assert peer.expires_at == T0 + timedelta(seconds=P.lifetime_s)
    assert token.isascii() and "=" not in token  # a metadata value, no padding


def test_a_token_for_another_node_cannot_be_replayed_to_a_third() -> None:
    token = issue_token(ALICE, BOB.node_id, T0, P)
    assert _reason(token, audience=MALLORY.node_id) == "wrong_audience"


def test_expired_and_future_tokens_are_refused() -> None:
    token = issue_token(ALICE, BOB.node_id, T0, P)
    assert _reason(token, now=T0 + timedelta(seconds=P.lifetime_s)) == "token_expired"
    ahead = issue_token(ALICE, BOB.node_id, T0 + timedelta(seconds=P.clock_skew_s + 1), P)
    assert _reason(ahead) == "token_not_yet_valid"
    # Within the skew is fine: clocks drift.
    near = issue_token(ALICE, BOB.node_id, T0 + timedelta(seconds=P.clock_skew_s - 1), P)
    assert read_token(near, audience=BOB.node_id, now=T0, params=P).node_id == ALICE.node_id


def test_a_token_claiming_a_long_life_is_refused_even_when_signed() -> None:
    long_lived = issue_token(
        ALICE, BOB.node_id, T0, PeerAuthParams(lifetime_s=7200, max_lifetime_s=7200)
    )
    assert _reason(long_lived) == "token_too_long_lived"


def test_a_changed_field_breaks_the_signature() -> None:
    obj = _decode(issue_token(ALICE, BOB.node_id, T0, P))
    obj["expires_at"] = format_ts(T0 + timedelta(seconds=600))
    assert _reason(_encode(obj)) in {"token_bad_signature"}


def test_a_token_in_another_nodes_name_is_a_key_mismatch() -> None:
    obj = _decode(issue_token(MALLORY, BOB.node_id, T0, P))
    obj["node_id"] = ALICE.node_id
    resigned = sign_object(RecordKind.peer_auth, {k: v for k, v in obj.items()}, MALLORY)
    assert _reason(_encode(resigned)) == "token_key_mismatch"


def test_a_token_names_the_certificate_its_calls_come_with_under_its_signature() -> None:
    cert = "0123456789abcdef" * 4
    token = issue_token(ALICE, BOB.node_id, T0, P, channel=cert)
    assert read_token(token, audience=BOB.node_id, now=T0, params=P).channel == cert
    # Rebinding it to another certificate breaks the signature.
    obj = _decode(token)
    obj["channel"] = "f" * 64
    assert _reason(_encode(obj)) == "token_bad_signature"
    # A channel that is no SHA-256 is malformed, even when signed.
    bad = _decode(issue_token(ALICE, BOB.node_id, T0, P))
    bad["channel"] = "not-a-hash"
    resigned = sign_object(RecordKind.peer_auth, {k: v for k, v in bad.items()}, ALICE)
    assert _reason(_encode(resigned)) == "token_malformed"


def test_a_record_of_another_kind_is_not_a_token() -> None:
    # Same fields, signed under the memory domain: the peer_auth prefix does not verify it.
    body = {
        "kind": "peer_auth",
        "node_id": ALICE.node_id,
        "audience": BOB.node_id,
        "channel": "",
        "issued_at": format_ts(T0),
        "expires_at": format_ts(T0 + timedelta(seconds=60)),
    }
    assert _reason(_encode(sign_object(RecordKind.vote, body, ALICE))) == "token_bad_signature"


@pytest.mark.parametrize(
    "token",
    ["", "not base64 !!", "x" * 5000, base64.urlsafe_b64encode(b"[1,2]").decode().rstrip("=")],
)
def test_garbage_is_a_malformed_token(token: str) -> None:
    assert _reason(token) == "token_malformed"


def test_extra_fields_make_a_malformed_token() -> None:
    body = {
        "kind": "peer_auth",
        "node_id": ALICE.node_id,
        "audience": BOB.node_id,
        "channel": "",
        "issued_at": format_ts(T0),
        "expires_at": format_ts(T0 + timedelta(seconds=60)),
        "scope": "admin",
    }
    assert _reason(_encode(sign_object(RecordKind.peer_auth, body, ALICE))) == "token_malformed"


@pytest.mark.parametrize(
    "changes",
    [
        {"lifetime_s": 0},
        {"lifetime_s": 1000, "max_lifetime_s": 900},
        {"clock_skew_s": float("nan")},
        {"renew_fraction": 1.0},
    ],
)
def test_params_are_validated(changes: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="PeerAuthParams"):
        PeerAuthParams(**changes)
