"""Node identity: ids derived from keys, deterministic generation, strict base64url."""

from __future__ import annotations

import base64
import hashlib
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lamarck.errors import InvalidRecord
from lamarck.proto.identity import (
    NodeIdentity,
    b64u_decode,
    b64u_encode,
    is_node_id,
    node_id_for,
    public_key_from_b64,
)


def test_node_id_is_prefix_plus_160_bits_of_base32_sha256() -> None:
    ident = NodeIdentity.from_seed(bytes(range(32)))
    digest = hashlib.sha256(ident.public_key_bytes).digest()
    expected = "lmk1" + base64.b32encode(digest).decode().lower().rstrip("=")[:32]
    assert ident.node_id == expected == node_id_for(ident.public_key_bytes)
    assert len(ident.node_id) == 36
    assert is_node_id(ident.node_id)


def test_node_id_of_a_known_key_is_stable() -> None:
    # Pinned: a change here would orphan every existing node's identity.
    ident = NodeIdentity.from_seed(bytes(32))
    assert ident.public_key_b64 == "O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik"
    assert ident.node_id == "lmk1copdsqhgjnkjc4rardm2bv2bmkh4qjxa"


def test_from_seed_is_deterministic_and_seed_sensitive() -> None:
    a = NodeIdentity.from_seed(b"\x01" * 32)
    assert a == NodeIdentity.from_seed(b"\x01" * 32)
    assert a.node_id != NodeIdentity.from_seed(b"\x02" + b"\x01" * 31).node_id


def test_generate_with_an_injected_rng_is_reproducible() -> None:
    assert NodeIdentity.generate(random.Random(7)) == NodeIdentity.generate(random.Random(7))
    assert NodeIdentity.generate(random.Random(7)) != NodeIdentity.generate(random.Random(8))


def test_generate_without_rng_gives_distinct_keys() -> None:
    assert NodeIdentity.generate() != NodeIdentity.generate()


@pytest.mark.parametrize("seed", [b"", b"\x00" * 31, b"\x00" * 33])
def test_seed_must_be_32_bytes(seed: bytes) -> None:
    with pytest.raises(InvalidRecord):
        NodeIdentity.from_seed(seed)


def test_signature_verifies_with_the_public_key() -> None:
    ident = NodeIdentity.generate(random.Random(1))
    sig = ident.sign(b"hello")
    assert len(sig) == 64
    public_key_from_b64(ident.public_key_b64).verify(sig, b"hello")


def test_repr_does_not_leak_key_material() -> None:
    ident = NodeIdentity.from_seed(b"\x05" * 32)
    assert repr(ident) == f"NodeIdentity(node_id={ident.node_id!r})"


@pytest.mark.parametrize("bad", [b"", b"\x00" * 31, b"\x00" * 33])
def test_node_id_needs_a_32_byte_key(bad: bytes) -> None:
    with pytest.raises(InvalidRecord) as info:
        node_id_for(bad)
    assert info.value.reason == "malformed"


@pytest.mark.parametrize(
    "value",
    [
        "",
        "lmk1",
        "lmk1" + "a" * 31,
        "lmk1" + "a" * 33,
        "LMK1" + "a" * 32,
        "lmk1" + "A" * 32,
        "lmk1" + "1" * 32,  # 0, 1, 8, 9 are not in the base32 alphabet
        "lmk2" + "a" * 32,
        "lmk1" + "a" * 31 + "\n",
        None,
        42,
    ],
)
def test_is_node_id_rejects_other_shapes(value: object) -> None:
    assert not is_node_id(value)


@given(st.binary(max_size=80))
def test_b64u_round_trips_without_padding(data: bytes) -> None:
    text = b64u_encode(data)
    assert "=" not in text and "+" not in text and "/" not in text
    assert b64u_decode(text) == data


@pytest.mark.parametrize(
    "bad",
    [
        "AA==",  # padding
        "AA=",
        "A",  # impossible length
        "AB",  # stray bits: "AB" and "AA" would both decode to b"\x00"
        "AAB",
        "a+b/",  # standard alphabet
        "AA AA",  # whitespace
        "AA\n",
        "ÀÀ",
    ],
)
def test_b64u_decode_is_strict(bad: str) -> None:
    with pytest.raises(InvalidRecord) as info:
        b64u_decode(bad)
    assert info.value.reason == "malformed"


def test_public_key_from_b64_refuses_wrong_lengths() -> None:
    with pytest.raises(InvalidRecord):
        public_key_from_b64(b64u_encode(b"\x00" * 31))
