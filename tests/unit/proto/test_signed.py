"""SignedMemory: exact bytes, canonical-only, signer bound to the author, no future dates."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lamarck.errors import InvalidRecord, VerificationError
from lamarck.proto.canonical import canonical_bytes, sha256_hex
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.memory import Memory, MemoryV2, parse_memory
from lamarck.proto.signed import SignedMemory
from lamarck.proto.signing import RecordKind, sign_object
from lamarck.proto.timefmt import format_ts

ALICE = NodeIdentity.from_seed(b"\xa1" * 32)
MALLORY = NodeIdentity.from_seed(b"\x66" * 32)
NOW = datetime(2026, 1, 1, tzinfo=UTC)
TS = "2025-12-31T23:00:00Z"


def v1_obj(author: NodeIdentity = ALICE, **overrides: Any) -> dict[str, Any]:
    """A valid v1 memory as a JSON-shaped dict (unsigned)."""
    obj: dict[str, Any] = {
        "schema_version": "1.0",
        "id": str(uuid.UUID(int=1, version=4)),
        "type": "AC",
        "content": "Run pytest from the repo root, not tests/ — conftest lives at the root",
        "confidence": 0.75,
        "context": {"domain": "python", "environment": "ci", "tools": ["pytest"]},
        "provenance": {
            "source_agent_id": author.node_id,
            "source_type": "empirical",
            "created_at": TS,
            "updated_at": TS,
        },
        "evidence": [
            {
                "type": "empirical",
                "description": "from tests/ no conftest was found; from the root it passed",
                "timestamp": TS,
                "validator": "reality",
                "outcome_id": str(uuid.UUID(int=2, version=4)),
            }
        ],
        "metadata": {"success_count": 5, "failure_count": 1, "tags": ["pytest"]},
    }
    obj.update(overrides)
    return obj


def v2_obj(author: NodeIdentity = ALICE, **overrides: Any) -> dict[str, Any]:
    """A valid v2 memory as a JSON-shaped dict (unsigned)."""
    obj = v1_obj(author)
    obj["schema_version"] = "2.0"
    obj["confidence_interval"] = {"mean": 0.75, "std_dev": 0.1}
    obj.update(overrides)
    return obj


def signed_bytes(obj: dict[str, Any], by: NodeIdentity = ALICE) -> bytes:
    return canonical_bytes(sign_object(RecordKind.memory, obj, by))


def reason(raw: bytes, now: datetime = NOW, **kwargs: Any) -> str:
    with pytest.raises(VerificationError) as info:
        SignedMemory.from_json(raw).verify(now, **kwargs)
    return info.value.reason


def test_a_signed_memory_is_canonical_bytes_that_verify() -> None:
    memory = parse_memory(v2_obj())
    signed = SignedMemory.sign(memory, ALICE)
    assert signed.is_canonical
    assert signed.raw == canonical_bytes(json.loads(signed.raw))
    assert signed.content_hash == sha256_hex(signed.raw)
    assert signed.memory.id == memory.id
    assert signed.memory.signature is not None
    assert signed.memory.signature.signed_by == ALICE.public_key_b64
    signed.verify(NOW)


def test_signing_is_deterministic_and_equal_bytes_dedupe() -> None:
    a = SignedMemory.sign(parse_memory(v2_obj()), ALICE)
    b = SignedMemory.sign(parse_memory(v2_obj()), ALICE)
    assert a.raw == b.raw and a == b and len({a, b}) == 1
    assert SignedMemory.from_json(a.raw).content_hash == a.content_hash


def test_received_bytes_are_kept_exactly() -> None:
    raw = signed_bytes(v2_obj())
    received = SignedMemory.from_json(raw)
    assert received.raw is raw
    assert received.obj == json.loads(raw)
    assert received.source_agent_id == ALICE.node_id


def test_a_v1_record_is_signed_and_verified_as_its_v1_bytes() -> None:
    v1 = Memory.from_obj(v1_obj())
    signed = SignedMemory.sign(v1, ALICE)
    assert json.loads(signed.raw)["schema_version"] == "1.0"
    assert isinstance(signed.memory, MemoryV2)  # the view is migrated ...
    signed.verify(NOW)  # ... the signature still holds over the original bytes
    SignedMemory.from_json(signed_bytes(v1_obj())).verify(NOW)


def test_an_old_signature_block_is_replaced_when_signing() -> None:
    signed = SignedMemory.sign(parse_memory(v2_obj()), ALICE)
    again = SignedMemory.sign(signed.memory, ALICE)
    assert again.raw == signed.raw


def test_nobody_signs_in_another_nodes_name() -> None:
    with pytest.raises(VerificationError) as info:
        SignedMemory.sign(parse_memory(v2_obj(author=ALICE)), MALLORY)
    assert info.value.reason == "key_mismatch"


def test_a_record_forged_in_another_nodes_name_is_key_mismatch() -> None:
    assert reason(signed_bytes(v2_obj(author=ALICE), by=MALLORY)) == "key_mismatch"


def test_non_canonical_bytes_are_refused_even_with_a_valid_signature() -> None:
    signed = sign_object(RecordKind.memory, v2_obj(), ALICE)
    for raw in (
        json.dumps(signed, indent=2).encode(),
        json.dumps(signed).encode(),  # ", " and ": " separators
        json.dumps(signed, sort_keys=True, separators=(",", ":")).encode(),  # \u escapes
        canonical_bytes(signed) + b"\n",
    ):
        parsed = SignedMemory.from_json(raw)
        assert not parsed.is_canonical
        assert reason(raw) == "not_canonical"


def test_tampered_bytes_fail_with_hash_mismatch() -> None:
    raw = signed_bytes(v2_obj())
    tampered = raw.replace(b"repo root", b"repo ROOT")
    assert tampered != raw
    assert reason(tampered) == "hash_mismatch"


def test_a_flipped_signature_is_bad_signature() -> None:
    signed = sign_object(RecordKind.memory, v2_obj(), ALICE)
    value = signed["signature"]["value"]
    signed["signature"]["value"] = ("B" if value[0] == "A" else "A") + value[1:]
    assert reason(canonical_bytes(signed)) == "bad_signature"


def test_an_unknown_algorithm_is_named() -> None:
    signed = sign_object(RecordKind.memory, v2_obj(), ALICE)
    signed["signature"]["algorithm"] = "rsa-pss-sha256"
    assert reason(canonical_bytes(signed)) == "unknown_algorithm"


@pytest.mark.parametrize(
    ("field", "offset_s", "skew", "ok"),
    [
        ("created_at", 300, 300, True),
        ("created_at", 301, 300, False),
        ("updated_at", 301, 300, False),
        ("updated_at", 3600, 7200, True),
        ("updated_at", 1, 0, False),
    ],
)
def test_a_record_dated_beyond_the_skew_is_future_timestamp(
    field: str, offset_s: int, skew: float, ok: bool
) -> None:
    obj = v2_obj()
    stamp = format_ts(NOW + timedelta(seconds=offset_s))
    obj["provenance"]["updated_at"] = stamp  # updated_at >= created_at always
    if field == "created_at":
        obj["provenance"]["created_at"] = stamp
    raw = signed_bytes(obj)
    if ok:
        SignedMemory.from_json(raw).verify(NOW, max_future_skew_s=skew)
    else:
        assert reason(raw, max_future_skew_s=skew) == "future_timestamp"


def test_the_default_skew_is_300_seconds() -> None:
    obj = v2_obj()
    obj["provenance"]["updated_at"] = format_ts(NOW + timedelta(seconds=301))
    raw = signed_bytes(obj)
    assert reason(raw) == "future_timestamp"
    SignedMemory.from_json(raw).verify(NOW + timedelta(seconds=1))


def test_future_evidence_and_last_validated_are_future_timestamps_too() -> None:
    later = format_ts(NOW + timedelta(days=1))
    obj = v2_obj()
    obj["evidence"][0]["timestamp"] = later
    assert reason(signed_bytes(obj)) == "future_timestamp"
    obj = v2_obj()
    obj["provenance"]["last_validated"] = later
    assert reason(signed_bytes(obj)) == "future_timestamp"


def test_the_signature_is_checked_before_the_clock() -> None:
    obj = v2_obj()
    obj["provenance"]["updated_at"] = format_ts(NOW + timedelta(days=1))
    assert reason(signed_bytes(obj, by=MALLORY)) == "key_mismatch"


def test_verify_needs_an_aware_now() -> None:
    with pytest.raises(ValueError):
        SignedMemory.from_json(signed_bytes(v2_obj())).verify(datetime(2026, 1, 1))


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b"[]",
        b'{"schema_version":"9.0"}',
        canonical_bytes(v2_obj()),  # unsigned
        canonical_bytes({**v2_obj(), "confidence": 1.5}),
        b"\xff",
    ],
)
def test_anything_but_a_signed_memory_is_an_invalid_record(raw: bytes) -> None:
    with pytest.raises(InvalidRecord):
        SignedMemory.from_json(raw)


def test_oversized_bytes_are_refused_before_parsing() -> None:
    with pytest.raises(InvalidRecord) as info:
        SignedMemory.from_json(b" " * 70_000)
    assert info.value.reason == "too_large"


def test_a_parse_keeps_the_callers_bytes() -> None:
    # ``raw`` is always the caller's bytes object; equal bytes give an equal record.
    raw = signed_bytes(v2_obj())
    first = SignedMemory.from_json(raw)
    assert first.raw is raw
    copy = bytes(bytearray(raw))
    other = SignedMemory.from_json(copy)
    assert other.raw is copy
    assert other.content_hash == first.content_hash and other.memory == first.memory
