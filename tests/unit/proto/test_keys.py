"""Key files (PKCS#8 PEM, 0600, refused when others can touch them) and key rotation."""

from __future__ import annotations

import json
import os
import random
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from lamarck.errors import InvalidRecord, KeyFileError, VerificationError
from lamarck.proto import keys as keys_module
from lamarck.proto.canonical import canonical_bytes, parse_received
from lamarck.proto.identity import NodeIdentity, node_id_for
from lamarck.proto.keys import (
    KeyRotation,
    identity_path,
    init_keys,
    load_private_key,
    make_rotation,
    rotate_keys,
    save_private_key,
    show_keys,
    verify_rotation,
)
from lamarck.proto.signing import RecordKind, sign_object, verify_object
from lamarck.registry.rotation import check_rotation_record

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
OLD = NodeIdentity.from_seed(b"\x01" * 32)
NEW = NodeIdentity.from_seed(b"\x02" * 32)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A umask that would leave new files world-readable, to prove we do not rely on it."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


# ---- key files --------------------------------------------------------------------------


@pytest.mark.usefixtures("open_umask")
def test_saved_key_is_pkcs8_pem_mode_0600_and_loads_back(tmp_path: Path) -> None:
    path = tmp_path / "k.pem"
    save_private_key(path, OLD)
    assert _mode(path) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n")
    assert load_private_key(path) == OLD


def test_an_existing_key_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "k.pem"
    save_private_key(path, OLD)
    with pytest.raises(KeyFileError) as info:
        save_private_key(path, NEW)
    assert info.value.reason == "exists"
    assert load_private_key(path) == OLD


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o644, 0o660, 0o666, 0o610])
def test_a_key_file_others_can_touch_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "k.pem"
    save_private_key(path, OLD)
    path.chmod(mode)
    with pytest.raises(KeyFileError) as info:
        load_private_key(path)
    assert info.value.reason == "insecure_permissions"


def test_a_missing_key_file_is_missing(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError) as info:
        load_private_key(tmp_path / "absent.pem")
    assert info.value.reason == "missing"


def _write_0600(path: Path, data: bytes) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"garbage",
        b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    ],
    ids=["empty", "garbage", "bad-base64", "not-ed25519"],
)
def test_a_key_file_that_is_not_an_ed25519_key_is_malformed(tmp_path: Path, data: bytes) -> None:
    path = _write_0600(tmp_path / "k.pem", data)
    with pytest.raises(KeyFileError) as info:
        load_private_key(path)
    assert info.value.reason == "malformed"


def test_a_symlinked_key_file_is_not_followed(tmp_path: Path) -> None:
    save_private_key(tmp_path / "real.pem", OLD)
    (tmp_path / "link.pem").symlink_to(tmp_path / "real.pem")
    with pytest.raises(KeyFileError) as info:
        load_private_key(tmp_path / "link.pem")
    assert info.value.reason == "unreadable"


def test_a_directory_is_not_a_key_file(tmp_path: Path) -> None:
    directory = tmp_path / "d"
    directory.mkdir(mode=0o700)
    with pytest.raises(KeyFileError) as info:
        load_private_key(directory)
    assert info.value.reason == "malformed"


# ---- the rotation record -----------------------------------------------------------------


def test_a_rotation_is_signed_by_the_old_key_and_names_the_new_one() -> None:
    record = make_rotation(OLD, NEW, NOW)
    assert set(record) == {
        "kind",
        "node_id",
        "old_public_key",
        "new_public_key",
        "new_node_id",
        "created_at",
        "countersignature",
        "signature",
    }
    assert record["kind"] == "key_rotation"
    assert record["countersignature"]["signed_by"] == NEW.public_key_b64
    assert record["node_id"] == OLD.node_id
    assert record["new_node_id"] == NEW.node_id
    assert record["created_at"] == "2026-03-01T12:00:00Z"
    assert record["signature"]["signed_by"] == OLD.public_key_b64
    rotation = verify_rotation(record)
    assert isinstance(rotation, KeyRotation)
    assert rotation.new_public_key == NEW.public_key_b64
    with pytest.raises(Exception):  # noqa: B017 - frozen model: any mutation error will do
        rotation.node_id = NEW.node_id  # type: ignore[misc]


def test_a_rotation_signature_is_domain_separated() -> None:
    record = make_rotation(OLD, NEW, NOW)
    with pytest.raises(VerificationError):
        verify_object(RecordKind.memory, record, signer_id_path=None)
    verify_object(RecordKind.key_rotation, record, signer_id_path=("node_id",))


def _resigned(record: dict[str, Any], by: NodeIdentity, **changes: Any) -> dict[str, Any]:
    return sign_object(RecordKind.key_rotation, {**record, **changes}, by)


def _uncountersigned(by: NodeIdentity) -> dict[str, Any]:
    """A rotation OLD -> NEW whose countersignature is ``by``'s (or absent for None)."""
    body = {k: v for k, v in make_rotation(OLD, NEW, NOW).items() if k != "signature"}
    body["countersignature"] = sign_object(
        RecordKind.key_rotation_accept,
        {k: v for k, v in body.items() if k != "countersignature"},
        by,
    )["signature"]
    return sign_object(RecordKind.key_rotation, body, OLD)


def test_a_rotation_proves_possession_of_the_new_key_too() -> None:
    # Signed by the old key alone: the identity could be moved onto a key its holder does
    # not have (or onto somebody else's). The new key's countersignature is required.
    stranger = NodeIdentity.from_seed(b"\x09" * 32)
    bare = {k: v for k, v in make_rotation(OLD, NEW, NOW).items() if k != "countersignature"}
    with pytest.raises(InvalidRecord):
        verify_rotation(sign_object(RecordKind.key_rotation, bare, OLD))
    with pytest.raises(VerificationError) as other:
        verify_rotation(_uncountersigned(stranger))
    assert other.value.reason == "key_mismatch"
    forged = make_rotation(OLD, NEW, NOW)
    forged["countersignature"] = {
        **forged["countersignature"],
        "value": forged["signature"]["value"],
    }
    with pytest.raises(VerificationError) as bad:
        verify_rotation(sign_object(RecordKind.key_rotation, forged, OLD))
    assert bad.value.reason == "countersignature"
    verify_rotation(_uncountersigned(NEW))


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (
            lambda r: {**r, "new_public_key": NodeIdentity.from_seed(b"\x03" * 32).public_key_b64},
            "key_mismatch",
        ),
        (lambda r: {**r, "node_id": NEW.node_id}, "hash_mismatch"),
        (lambda r: _resigned(r, NEW), "key_mismatch"),  # signed by the new key, not the old
        (lambda r: _resigned(r, OLD, new_node_id=OLD.node_id), "key_mismatch"),
        (
            lambda r: _resigned(r, OLD, new_public_key=OLD.public_key_b64, new_node_id=OLD.node_id),
            "malformed",
        ),
    ],
)
def test_a_tampered_rotation_fails_verification(tamper: Any, reason: str) -> None:
    with pytest.raises(VerificationError) as info:
        verify_rotation(tamper(make_rotation(OLD, NEW, NOW)))
    assert info.value.reason == reason


@pytest.mark.parametrize(
    "tamper",
    [
        lambda r: {**r, "extra": 1},
        lambda r: {**r, "kind": "memory"},
        lambda r: {**r, "created_at": "2026-03-01 12:00:00"},
        lambda r: {k: v for k, v in r.items() if k != "signature"},
        lambda r: {**r, "old_public_key": "short"},
        lambda r: [r],
    ],
)
def test_a_record_that_is_not_a_rotation_is_invalid(tamper: Any) -> None:
    with pytest.raises(InvalidRecord):
        verify_rotation(tamper(make_rotation(OLD, NEW, NOW)))


def test_rotating_to_the_same_key_is_refused() -> None:
    with pytest.raises(InvalidRecord) as info:
        make_rotation(OLD, OLD, NOW)
    assert info.value.reason == "same_key"


def test_the_registry_accepts_a_rotation_made_here() -> None:
    record = make_rotation(OLD, NEW, NOW)
    check_rotation_record(
        record,
        node_id=OLD.node_id,
        old_key=OLD.public_key_b64,
        new_key=NEW.public_key_b64,
        now=NOW,
        max_future_skew_s=300,
    )


def test_rotation_record_round_trips_through_json() -> None:
    record = make_rotation(OLD, NEW, NOW)
    assert KeyRotation.from_json(canonical_bytes(record)).to_obj() == record


# ---- keys init | show | rotate ------------------------------------------------------------


@pytest.mark.usefixtures("open_umask")
def test_init_creates_a_private_key_in_a_private_directory(tmp_path: Path) -> None:
    identity = init_keys(tmp_path, rng=random.Random(1))
    path = identity_path(tmp_path)
    assert path == tmp_path / "keys" / "identity.pem"
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert load_private_key(path) == identity
    info = show_keys(tmp_path)
    assert (info.node_id, info.public_key) == (identity.node_id, identity.public_key_b64)
    assert info.rotations == 0
    assert info.original_node_id == identity.node_id


def test_init_refuses_to_replace_an_existing_key(tmp_path: Path) -> None:
    first = init_keys(tmp_path)
    with pytest.raises(KeyFileError) as info:
        init_keys(tmp_path)
    assert info.value.reason == "exists"
    assert show_keys(tmp_path).node_id == first.node_id


def test_show_without_a_key_is_missing(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError) as info:
        show_keys(tmp_path)
    assert info.value.reason == "missing"


def test_show_refuses_an_exposed_key(tmp_path: Path) -> None:
    init_keys(tmp_path)
    identity_path(tmp_path).chmod(0o644)
    with pytest.raises(KeyFileError) as info:
        show_keys(tmp_path)
    assert info.value.reason == "insecure_permissions"


@pytest.mark.usefixtures("open_umask")
def test_rotate_keeps_the_old_key_and_writes_a_signed_record(tmp_path: Path) -> None:
    first = init_keys(tmp_path, rng=random.Random(1))
    second, record = rotate_keys(tmp_path, NOW, rng=random.Random(2))
    keys_dir = tmp_path / "keys"
    assert load_private_key(identity_path(tmp_path)) == second
    old_copy = keys_dir / "identity.1.pem.old"
    assert _mode(old_copy) == 0o600
    assert load_private_key(old_copy) == first
    written = (keys_dir / "rotation.1.json").read_bytes()
    assert parse_received(written).is_canonical
    assert json.loads(written) == record
    rotation = verify_rotation(record)
    assert rotation.node_id == first.node_id
    assert rotation.old_public_key == first.public_key_b64
    assert rotation.new_node_id == second.node_id == node_id_for(second.public_key_bytes)
    assert not (keys_dir / "identity.pem.new").exists()


def test_a_second_rotation_keeps_naming_the_original_id(tmp_path: Path) -> None:
    first = init_keys(tmp_path, rng=random.Random(1))
    second, _ = rotate_keys(tmp_path, NOW, rng=random.Random(2))
    third, record = rotate_keys(tmp_path, NOW + timedelta(days=1), rng=random.Random(3))
    rotation = verify_rotation(record)
    # The registry keeps the first id pinned to the current key: the id stays, the key moves.
    assert rotation.node_id == first.node_id
    assert rotation.old_public_key == second.public_key_b64
    assert rotation.new_public_key == third.public_key_b64
    info = show_keys(tmp_path)
    assert (info.node_id, info.rotations, info.original_node_id) == (
        third.node_id,
        2,
        first.node_id,
    )
    assert load_private_key(tmp_path / "keys" / "identity.2.pem.old") == second


def test_an_interrupted_rotation_is_completed_not_forgotten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = init_keys(tmp_path, rng=random.Random(1))

    def crash(*_: object) -> None:
        raise OSError("power cut before the swap")

    with monkeypatch.context() as m:
        m.setattr(keys_module.os, "replace", crash)
        with pytest.raises(OSError):
            rotate_keys(tmp_path, NOW, rng=random.Random(2))
    # The record announcing the staged key was written; the current key is still the old one.
    assert load_private_key(identity_path(tmp_path)) == first
    announced = json.loads((tmp_path / "keys" / "rotation.1.json").read_bytes())
    new, record = rotate_keys(tmp_path, NOW, rng=random.Random(99))
    assert record == announced
    assert new.public_key_b64 == announced["new_public_key"]
    assert load_private_key(identity_path(tmp_path)) == new
    assert show_keys(tmp_path).rotations == 1


def test_a_staged_key_never_announced_is_replaced(tmp_path: Path) -> None:
    init_keys(tmp_path, rng=random.Random(1))
    save_private_key(tmp_path / "keys" / "identity.pem.new", NodeIdentity.generate())
    new, record = rotate_keys(tmp_path, NOW, rng=random.Random(2))
    assert record["new_public_key"] == new.public_key_b64
    assert load_private_key(identity_path(tmp_path)) == new
