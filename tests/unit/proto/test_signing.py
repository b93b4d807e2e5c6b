"""Signing and verification: reasons, domain separation, and tamper-evidence of every field."""

from __future__ import annotations

import copy
import itertools
import math
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lamarck.errors import VerificationError
from lamarck.proto.canonical import MAX_SAFE_INTEGER, canonical_bytes, sha256_hex
from lamarck.proto.identity import NodeIdentity, b64u_decode, b64u_encode
from lamarck.proto.signing import (
    RecordKind,
    sign_object,
    signing_input,
    verify_object,
    verify_raw,
)

ALICE = NodeIdentity.from_seed(b"\xa1" * 32)
MALLORY = NodeIdentity.from_seed(b"\x66" * 32)


def memory_record(author: NodeIdentity = ALICE) -> dict[str, Any]:
    """A memory-shaped record (the signing layer does not care about the schema)."""
    return {
        "schema_version": "2.0",
        "id": "0b7c2d4e-9f3a-4c1b-8e2d-5a6f7b8c9d0e",
        "type": "UC",
        "content": "pip install needs --break-system-packages on Debian 12 system Python",
        "confidence": 0.85,
        "access_level": "public",
        "recipients": [],
        "context": {
            "domain": "python",
            "environment": "debian-12",
            "tools": ["pip", "apt"],
            "constraints": {"network": "offline", "déjà": "vu"},
        },
        "provenance": {
            "source_agent_id": author.node_id,
            "source_type": "empirical",
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "validation_count": 3,
            "contradiction_count": 0,
            "last_validated": None,
        },
        "evidence": [],
        "validation": {"validated_by": [], "contradicted_by": [], "consensus_level": 0.0},
        "metadata": {
            "success_count": 3,
            "failure_count": 0,
            "related_memories": [],
            "superseded_by": None,
            "tags": ["pip"],
        },
    }


def test_a_signed_record_verifies() -> None:
    signed = sign_object(RecordKind.memory, memory_record(), ALICE)
    verify_object(RecordKind.memory, signed)
    verify_raw(RecordKind.memory, canonical_bytes(signed))


def test_signature_block_has_the_documented_shape() -> None:
    record = memory_record()
    signed = sign_object(RecordKind.memory, record, ALICE)
    block = signed["signature"]
    assert set(block) == {"algorithm", "hash", "signed_by", "value"}
    assert block["algorithm"] == "ed25519"
    data = b"lamarck/v1/memory\n" + canonical_bytes(record)
    assert signing_input(RecordKind.memory, signed) == data
    assert block["hash"] == sha256_hex(data)
    assert block["signed_by"] == ALICE.public_key_b64
    assert b64u_decode(block["value"]) == ALICE.sign(data)  # Ed25519 is deterministic


def test_sign_object_does_not_mutate_and_replaces_an_old_signature() -> None:
    record = memory_record()
    before = copy.deepcopy(record)
    signed = sign_object(RecordKind.memory, record, ALICE)
    assert record == before
    resigned = sign_object(RecordKind.memory, {**signed, "content": "edited"}, ALICE)
    verify_object(RecordKind.memory, resigned)
    assert resigned["signature"]["hash"] != signed["signature"]["hash"]


def test_every_kind_has_its_own_prefix() -> None:
    prefixes = {kind: kind.prefix for kind in RecordKind}
    assert prefixes[RecordKind.memory] == b"lamarck/v1/memory\n"
    assert prefixes[RecordKind.registry_nonce] == b"lamarck/v1/registry_nonce\n"
    assert prefixes[RecordKind.peer_auth] == b"lamarck/v1/peer_auth\n"
    assert prefixes[RecordKind.key_rotation_accept] == b"lamarck/v1/key_rotation_accept\n"
    assert len(set(prefixes.values())) == len(RecordKind) == 12
    for prefix in prefixes.values():
        assert prefix.startswith(b"lamarck/v1/") and prefix.endswith(b"\n")


@pytest.mark.parametrize(
    ("signed_as", "verified_as"),
    list(itertools.permutations(RecordKind, 2)),
    ids=lambda k: k.value,
)
def test_a_signature_for_one_kind_never_verifies_as_another(
    signed_as: RecordKind, verified_as: RecordKind
) -> None:
    signed = sign_object(signed_as, memory_record(), ALICE)
    with pytest.raises(VerificationError) as info:
        verify_object(verified_as, signed)
    assert info.value.reason == "hash_mismatch"
    # Even with the hash recomputed for the other kind, the signature itself does not carry.
    forged = copy.deepcopy(signed)
    forged["signature"]["hash"] = sha256_hex(signing_input(verified_as, signed))
    with pytest.raises(VerificationError) as info:
        verify_object(verified_as, forged)
    assert info.value.reason == "bad_signature"


def _signed() -> dict[str, Any]:
    return sign_object(RecordKind.memory, memory_record(), ALICE)


def _set_sig(field: str, value: Any) -> dict[str, Any]:
    signed = _signed()
    signed["signature"][field] = value
    return signed


def _del(key: str) -> dict[str, Any]:
    signed = _signed()
    del signed[key]
    return signed


def _reason(obj: Any, **kwargs: Any) -> str:
    with pytest.raises(VerificationError) as info:
        verify_object(RecordKind.memory, obj, **kwargs)
    return info.value.reason


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (lambda: _del("signature"), "malformed"),
        (lambda: {**_signed(), "signature": "abc"}, "malformed"),
        (lambda: {**_signed(), "signature": None}, "malformed"),
        (lambda: _set_sig("extra", "x"), "malformed"),
        (lambda: _set_sig("value", 5), "malformed"),
        (lambda: _set_sig("algorithm", "rsa-pss-sha256"), "unknown_algorithm"),
        (lambda: _set_sig("algorithm", "Ed25519"), "unknown_algorithm"),
        (lambda: _set_sig("hash", "A" * 64), "malformed"),
        (lambda: _set_sig("hash", "0" * 63), "malformed"),
        (lambda: _set_sig("signed_by", ALICE.public_key_b64 + "="), "malformed"),
        (lambda: _set_sig("signed_by", b64u_encode(ALICE.public_key_bytes[:31])), "malformed"),
        (lambda: _set_sig("value", b64u_encode(b"\x00" * 63)), "malformed"),
        (lambda: _set_sig("value", "!" * 86), "malformed"),
        (lambda: _set_sig("hash", "0" * 64), "hash_mismatch"),
        (lambda: _set_sig("value", b64u_encode(b"\x00" * 64)), "bad_signature"),
        (lambda: _set_sig("signed_by", MALLORY.public_key_b64), "key_mismatch"),
        (lambda: {**_signed(), "content": "changed"}, "hash_mismatch"),
        (lambda: [1, 2], "malformed"),
    ],
)
def test_each_failure_has_its_reason(case: Any, expected: str) -> None:
    assert _reason(case()) == expected


def test_a_record_signed_in_another_nodes_name_is_key_mismatch() -> None:
    # Mallory signs a record claiming Alice as its author.
    forged = sign_object(RecordKind.memory, memory_record(author=ALICE), MALLORY)
    assert _reason(forged) == "key_mismatch"


def test_a_valid_signature_with_a_forged_hash_is_bad_signature() -> None:
    signed = _signed()
    signed["content"] = "changed"
    signed["signature"]["hash"] = sha256_hex(signing_input(RecordKind.memory, signed))
    assert _reason(signed) == "bad_signature"


def test_signer_id_path_names_where_the_author_is() -> None:
    vote = {"voter_id": ALICE.node_id, "memory_id": "m", "verdict": "confirm"}
    signed = sign_object(RecordKind.vote, vote, ALICE)
    verify_object(RecordKind.vote, signed, signer_id_path=("voter_id",))
    # The memory default does not silently pass for a record without provenance.
    with pytest.raises(VerificationError) as info:
        verify_object(RecordKind.vote, signed)
    assert info.value.reason == "malformed"
    # None: no id binding (a record whose identity is the key itself).
    other = sign_object(RecordKind.vote, {**vote, "voter_id": MALLORY.node_id}, ALICE)
    verify_object(RecordKind.vote, other, signer_id_path=None)
    with pytest.raises(VerificationError) as info:
        verify_object(RecordKind.vote, other, signer_id_path=("voter_id",))
    assert info.value.reason == "key_mismatch"
    with pytest.raises(VerificationError) as info:
        verify_object(RecordKind.vote, {**signed, "voter_id": 7}, signer_id_path=("voter_id",))
    assert info.value.reason == "malformed"


def test_unsignable_values_are_malformed_at_verification() -> None:
    signed = _signed()
    signed["confidence"] = math.nan
    assert _reason(signed) == "malformed"


# ---- verify_raw: the exact received bytes ------------------------------------------------


def _raw_reason(raw: bytes, **kwargs: Any) -> str:
    with pytest.raises(VerificationError) as info:
        verify_raw(RecordKind.memory, raw, **kwargs)
    return info.value.reason


def test_verify_raw_returns_the_parsed_record() -> None:
    signed = _signed()
    assert verify_raw(RecordKind.memory, canonical_bytes(signed)) == signed


@pytest.mark.parametrize("raw", [b"", b"{", b"\xff\xfe", b'{"a":NaN}', b"[]", b"null"])
def test_verify_raw_refuses_non_json_as_malformed(raw: bytes) -> None:
    assert _raw_reason(raw, require_canonical=False) == "malformed"


def test_verify_raw_refuses_non_canonical_bytes_unless_told_otherwise() -> None:
    import json

    signed = _signed()
    pretty = json.dumps(signed, indent=2).encode()
    assert _raw_reason(pretty) == "not_canonical"
    assert verify_raw(RecordKind.memory, pretty, require_canonical=False) == signed


def test_verify_raw_with_astral_characters_takes_the_rfc8785_path() -> None:
    record = memory_record()
    record["context"]["constraints"] = {"\U0001f600": "grin", "\ufb33": "dalet"}
    signed = sign_object(RecordKind.memory, record, ALICE)
    verify_raw(RecordKind.memory, canonical_bytes(signed))


def test_verify_raw_catches_tampering_in_the_bytes() -> None:
    raw = canonical_bytes(_signed())
    tampered = raw.replace(b"0.85", b"0.95")
    assert tampered != raw
    assert _raw_reason(tampered) == "hash_mismatch"


# ---- property: any change to any field fails verification --------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=10)
_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    _text,
)
_tree = st.recursive(
    _leaf,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(_text, kids, max_size=4)),
    max_leaves=12,
)


@st.composite
def generated_records(draw: st.DrawFn) -> dict[str, Any]:
    """Memory-shaped records with every field drawn: strings, numbers, lists, nested dicts."""
    record = memory_record()
    record["content"] = draw(_text)
    record["confidence"] = draw(st.floats(0, 1))
    record["type"] = draw(st.sampled_from(["UC", "AC"]))
    record["context"]["domain"] = draw(_text)
    record["context"]["tools"] = draw(st.lists(_text, max_size=4))
    record["context"]["constraints"] = draw(st.dictionaries(_text, _tree, max_size=4))
    record["provenance"]["validation_count"] = draw(st.integers(0, MAX_SAFE_INTEGER))
    record["evidence"] = draw(
        st.lists(
            st.fixed_dictionaries(
                {"type": _text, "description": _text, "timestamp": _text, "validator": _text}
            ),
            max_size=3,
        )
    )
    record["metadata"]["tags"] = draw(st.lists(_text, max_size=4))
    record["extra"] = draw(_tree)  # unknown extension members are signed too
    return record


Draw = Callable[[st.SearchStrategy[Any]], Any]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out.extend(_paths(value, (*prefix, index)))
    return out


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


def _changed_leaf(value: Any, draw: Draw) -> Any:
    """A value that differs from ``value`` in its JSON meaning, usually minimally."""
    if isinstance(value, bool):
        return not value
    if value is None:
        return draw(st.sampled_from([0, "", False, [], {}]))
    if isinstance(value, int):
        return value + draw(st.sampled_from([1, -1]))
    if isinstance(value, float):
        # The next double up or down: the smallest change a float admits.
        return math.nextafter(value, draw(st.sampled_from([math.inf, -math.inf])))
    if isinstance(value, str):
        if value and draw(st.booleans()):
            i = draw(st.integers(0, len(value) - 1))
            replacement = chr((ord(value[i]) + 1) % 0xD800 or 1)
            return value[:i] + replacement + value[i + 1 :]
        return value + draw(st.sampled_from([" ", "\u0000", "x", "é"]))
    raise AssertionError(f"not a leaf: {value!r}")


def _mutate(record: dict[str, Any], draw: Draw) -> dict[str, Any]:
    mutated = copy.deepcopy(record)
    path = draw(st.sampled_from(_paths(mutated)))
    target = _get(mutated, path)
    if isinstance(target, dict):
        op = draw(st.sampled_from(["add", "remove", "rename"] if target else ["add"]))
        if op == "add":
            key = draw(_text.filter(lambda k: k not in target))
            target[key] = draw(_leaf)
        else:
            key = draw(st.sampled_from(sorted(target)))
            value = target.pop(key)
            if op == "rename":
                target[draw(_text.filter(lambda k: k not in target and k != key))] = value
    elif isinstance(target, list):
        op = draw(st.sampled_from(["append", "pop", "swap"] if target else ["append"]))
        if op == "append":
            target.append(draw(_leaf))
        elif op == "pop":
            target.pop(draw(st.integers(0, len(target) - 1)))
        else:
            i, j = draw(st.permutations(range(len(target))))[:2] if len(target) > 1 else (0, 0)
            if canonical_bytes(target[i]) == canonical_bytes(target[j]):
                target.append(None)  # equal elements: swapping would change nothing
            else:
                target[i], target[j] = target[j], target[i]
    else:
        parent, key = _get(mutated, path[:-1]), path[-1]
        parent[key] = _changed_leaf(target, draw)
    return mutated


@settings(max_examples=300, deadline=None)
@given(generated_records(), st.data())
def test_any_change_to_any_field_fails_verification(
    record: dict[str, Any], data: st.DataObject
) -> None:
    signed = sign_object(RecordKind.memory, record, ALICE)
    verify_object(RecordKind.memory, signed)
    mutated = _mutate(signed, data.draw)
    try:
        mutated_bytes = canonical_bytes(mutated)
    except Exception:
        mutated_bytes = None  # e.g. a count pushed past 2**53 - 1: refused anyway
    assert mutated_bytes != canonical_bytes(signed), "the mutation must change the record"
    with pytest.raises(VerificationError):
        verify_object(RecordKind.memory, mutated)
    if mutated_bytes is not None:
        with pytest.raises(VerificationError):
            verify_raw(RecordKind.memory, mutated_bytes)


@settings(max_examples=50, deadline=None)
@given(generated_records())
def test_generated_records_verify_from_their_canonical_bytes(record: dict[str, Any]) -> None:
    ident = NodeIdentity.generate(random.Random(3))
    signed = sign_object(
        RecordKind.memory,
        {**record, "provenance": {**record["provenance"], "source_agent_id": ident.node_id}},
        ident,
    )
    assert verify_raw(RecordKind.memory, canonical_bytes(signed)) == signed
