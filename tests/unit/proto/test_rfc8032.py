"""Ed25519 (via cryptography, through NodeIdentity) against the RFC 8032 §7.1 test vectors.

The vectors live in the repository, tests/data/rfc8032-ed25519.json. If the file is missing
the tests fail (they never skip): a silently skipped known-answer test proves nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lamarck.proto.identity import (
    NodeIdentity,
    public_key_from_bytes,
    verify_ed25519,
)

TESTS_ROOT = Path(__file__).resolve().parents[2]
VECTORS = TESTS_ROOT / "data" / "rfc8032-ed25519.json"


def _vectors() -> list[dict[str, Any]]:
    if not VECTORS.is_file():
        pytest.fail(f"RFC 8032 test vectors missing: {VECTORS}", pytrace=False)
    vectors: list[dict[str, Any]] = json.loads(VECTORS.read_text())["vectors"]
    return vectors


def test_vector_file_holds_the_rfc_section_7_1_vectors() -> None:
    names = [v["name"] for v in _vectors()]
    assert {"TEST 1", "TEST 2", "TEST 3"} <= set(names)
    assert len(names) >= 4


def test_public_keys_derive_from_the_secret_keys() -> None:
    for v in _vectors():
        ident = NodeIdentity.from_seed(bytes.fromhex(v["secret_key"]))
        assert ident.public_key_bytes.hex() == v["public_key"], v["name"]


def test_signatures_equal_the_vectors() -> None:
    for v in _vectors():
        ident = NodeIdentity.from_seed(bytes.fromhex(v["secret_key"]))
        assert ident.sign(bytes.fromhex(v["message"])).hex() == v["signature"], v["name"]


def test_vector_signatures_verify_and_any_bit_flip_fails() -> None:
    for v in _vectors():
        key = public_key_from_bytes(bytes.fromhex(v["public_key"]))
        message = bytes.fromhex(v["message"])
        signature = bytes.fromhex(v["signature"])
        assert verify_ed25519(key, signature, message), v["name"]
        flipped = bytearray(signature)
        flipped[0] ^= 1
        assert not verify_ed25519(key, bytes(flipped), message), v["name"]
        assert not verify_ed25519(key, signature, message + b"\x00"), v["name"]


def test_a_missing_vector_file_fails_rather_than_skips(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(f"{__name__}.VECTORS", tmp_path / "absent.json")
    with pytest.raises(pytest.fail.Exception, match="missing"):
        _vectors()
