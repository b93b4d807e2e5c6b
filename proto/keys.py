"""Key files and key rotation: the node's private key on disk, and the record moving it.

Layout in the node's home::

    <home>/keys/                  mode 0700
        identity.pem              the current private key, PKCS#8 PEM, mode 0600
        identity.<n>.pem.old      the key replaced by rotation n (kept: history is not deleted)
        rotation.<n>.json         rotation n, canonical JSON, signed by both keys

A key file is created with ``O_CREAT | O_EXCL`` and mode 0600 in the same call, so there is
no moment at which it exists with wider permissions, and an existing key is never
overwritten. Loading refuses a file that group or others could read or write: a key others
can read is no longer a secret, and one others can write may not be ours.

The rotation record (``KeyRotation``)::

    {"kind": "key_rotation", "node_id": <the id whose key moves>,
     "old_public_key": ..., "new_public_key": ..., "new_node_id": node_id_for(new key),
     "created_at": RFC 3339 UTC,
     "countersignature": {... signed_by: the NEW key},
     "signature": {... signed_by: the OLD key}}

It proves possession of both keys: the new key countersigns the record's body (everything but
the two signatures; domain ``key_rotation_accept``), so nobody can move an identity to a key
it does not hold (or onto somebody else's key); the old key signs the body with that
countersignature (domain ``key_rotation``), so only the identity's holder can move it.

``node_id`` is the id being rotated. For a first rotation it is ``node_id_for(old key)``;
after that the registry keeps the original id pinned to the current key, so ``rotate_keys``
names the home's original id. Whether ``old_public_key`` is the key pinned for ``node_id`` is
the registry's decision (``lamarck.registry.rotation``), not something a record can prove.
"""

from __future__ import annotations

import json
import os
import random
import re
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import Field, StringConstraints, ValidationError

from lamarck.errors import InvalidRecord, KeyFileError, VerificationError
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.identity import NodeIdentity, b64u_decode, node_id_for
from lamarck.proto.memory import NodeId, RecordBlock, Signature, Timestamp, load_json_object
from lamarck.proto.signing import SIGNATURE_FIELD, RecordKind, sign_object, verify_object
from lamarck.proto.timefmt import format_ts

__all__ = [
    "IDENTITY_FILE",
    "KEYS_DIR",
    "KeyInfo",
    "KeyRotation",
    "identity_path",
    "init_keys",
    "latest_rotation",
    "load_private_key",
    "make_rotation",
    "rotate_keys",
    "save_private_key",
    "show_keys",
    "verify_rotation",
]

KEYS_DIR = "keys"
IDENTITY_FILE = "identity.pem"
_ROTATION_RE = re.compile(r"^rotation\.([1-9][0-9]*)\.json$")
_COUNTERSIGNATURE = "countersignature"
# An Ed25519 public key: 32 bytes are 43 unpadded base64url characters.
_PublicKeyB64 = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{43}$")]


def identity_path(home: Path) -> Path:
    """Where the node's current private key lives: ``<home>/keys/identity.pem``."""
    return Path(home) / KEYS_DIR / IDENTITY_FILE


def _write_new_file(path: Path, data: bytes, mode: int) -> None:
    # O_EXCL: never overwrite (a key lost to an overwrite is an identity lost). The mode is
    # given to open() itself, so the file never exists with wider permissions; fchmod then
    # pins it exactly, whatever the umask did.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError as exc:
        raise KeyFileError(f"{path} already exists", reason="exists", path=str(path)) from exc
    except OSError as exc:
        raise KeyFileError(f"cannot create {path}: {exc}", reason="unwritable") from exc
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    finally:
        os.close(fd)


def save_private_key(path: Path, identity: NodeIdentity) -> None:
    """Write ``identity``'s private key to a new file: PKCS#8 PEM, mode 0600.

    Raises ``KeyFileError(reason="exists")`` rather than overwrite an existing file.
    """
    pem = identity.private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write_new_file(Path(path), pem, 0o600)


def load_private_key(path: Path) -> NodeIdentity:
    """Load a private key file written by :func:`save_private_key`.

    Raises ``KeyFileError`` with reason ``missing``, ``insecure_permissions`` (group or others
    may read or write it), ``unreadable`` or ``malformed`` (not an Ed25519 PKCS#8 PEM key).
    """
    path = Path(path)
    try:
        # O_NOFOLLOW: the permissions checked are those of the file itself, not of a link.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError as exc:
        raise KeyFileError(f"no key file at {path}", reason="missing", path=str(path)) from exc
    except OSError as exc:
        raise KeyFileError(f"cannot open {path}: {exc}", reason="unreadable") from exc
    try:
        # fstat on the open descriptor: the file checked is the file read (no swap between).
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KeyFileError(f"{path} is not a regular file", reason="malformed")
        if st.st_mode & 0o077:
            raise KeyFileError(
                f"{path} is accessible by group or others (mode {stat.S_IMODE(st.st_mode):o}); "
                "run: chmod 600",
                reason="insecure_permissions",
                path=str(path),
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(64 * 1024)
    finally:
        os.close(fd)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path} is not a PEM private key", reason="malformed") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} is not an Ed25519 key", reason="malformed")
    return NodeIdentity(key)


class KeyRotation(RecordBlock):
    """A statement by a node's old key, countersigned by the new, that its key is now
    ``new_public_key``."""

    kind: Literal["key_rotation"] = "key_rotation"
    node_id: NodeId = Field(description="the id whose key moves")
    old_public_key: _PublicKeyB64 = Field(description="base64url; the key that signs this")
    new_public_key: _PublicKeyB64 = Field(description="base64url; the key from now on")
    new_node_id: NodeId = Field(description="node_id_for(new_public_key)")
    created_at: Timestamp
    countersignature: Signature = Field(description="by the new key, over the body")
    signature: Signature

    @classmethod
    def from_obj(cls, obj: object) -> KeyRotation:
        """Validate a JSON-shaped mapping; ``InvalidRecord`` on any failure."""
        try:
            return cls.model_validate(obj, strict=True)
        except ValidationError as exc:
            raise InvalidRecord(
                f"not a key rotation record: {exc.error_count()} error(s)", reason="malformed"
            ) from None
        # InvalidRecord raised inside a validator (bad_timestamp) propagates as it is.

    @classmethod
    def from_json(cls, raw: bytes | str) -> KeyRotation:
        """Parse untrusted JSON; ``InvalidRecord`` on any failure."""
        _, obj = load_json_object(raw)
        return cls.from_obj(obj)

    def to_obj(self) -> dict[str, Any]:
        """The record as a JSON-mode dict (every field; the record has no optional ones)."""
        return self.model_dump(mode="json")


def make_rotation(
    old_identity: NodeIdentity,
    new_identity: NodeIdentity,
    now: datetime,
    *,
    node_id: str | None = None,
) -> dict[str, Any]:
    """Build the record moving ``node_id`` to the new key: countersigned by the NEW key,
    then signed by the OLD (both keys proven held).

    ``node_id`` defaults to the old key's id (a first rotation).
    """
    if old_identity == new_identity:
        raise InvalidRecord("a rotation needs a different key", reason="same_key")
    body = {
        "kind": "key_rotation",
        "node_id": node_id if node_id is not None else old_identity.node_id,
        "old_public_key": old_identity.public_key_b64,
        "new_public_key": new_identity.public_key_b64,
        "new_node_id": new_identity.node_id,
        "created_at": format_ts(now),
    }
    accepted = sign_object(RecordKind.key_rotation_accept, body, new_identity)
    record = {**body, _COUNTERSIGNATURE: accepted[SIGNATURE_FIELD]}
    signed = sign_object(RecordKind.key_rotation, record, old_identity)
    KeyRotation.from_obj(signed)  # what we emit must parse: fail here, not at the registry
    return signed


def verify_rotation(obj: Any) -> KeyRotation:
    """Check a rotation record and return it parsed.

    Raises ``InvalidRecord`` if it is not a rotation record, and ``VerificationError`` if:
    (1) ``signed_by`` is not ``old_public_key`` (``key_mismatch``); (2) ``new_node_id`` is
    not derived from ``new_public_key`` (``key_mismatch``); (3) old and new keys are equal
    (``malformed``); (4) the signature does not hold (its own reason); (5) the
    countersignature is not the new key's (``key_mismatch``) or does not hold
    (``countersignature``, with the signature's reason as ``cause``).
    """
    rotation = KeyRotation.from_obj(obj)
    # (1) Signed by the key being retired: only its holder may move the identity.
    if rotation.signature.signed_by != rotation.old_public_key:
        raise VerificationError("rotation is not signed by the old key", reason="key_mismatch")
    # (2) The new id is the one the new key derives, so later records by it bind to it.
    if rotation.new_node_id != node_id_for(b64u_decode(rotation.new_public_key)):
        raise VerificationError(
            "new_node_id is not derived from new_public_key", reason="key_mismatch"
        )
    # (3) A rotation to the same key is meaningless and would hide a replay.
    if rotation.new_public_key == rotation.old_public_key:
        raise VerificationError("old and new keys are the same", reason="malformed")
    # (4) The signature over the record (domain: key_rotation). No id binding here: after a
    #     first rotation node_id is no longer derived from the old key (see the module doc).
    verify_object(RecordKind.key_rotation, obj, signer_id_path=None)
    # (5) The new key countersigned the body: the rotating node holds it (a rotation signed
    #     by the old key alone could hand the identity to a key somebody else holds).
    if rotation.countersignature.signed_by != rotation.new_public_key:
        raise VerificationError(
            "rotation is not countersigned by the new key", reason="key_mismatch"
        )
    body = {k: v for k, v in obj.items() if k not in (SIGNATURE_FIELD, _COUNTERSIGNATURE)}
    try:
        verify_object(
            RecordKind.key_rotation_accept,
            {**body, SIGNATURE_FIELD: obj[_COUNTERSIGNATURE]},
            signer_id_path=None,
        )
    except VerificationError as e:
        raise VerificationError(
            f"the new key's countersignature does not verify: {e}",
            reason="countersignature",
            cause=e.reason,
        ) from e
    return rotation


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """What ``lamarck keys show`` prints: public facts about the current key."""

    node_id: str
    public_key: str
    path: Path
    rotations: int
    original_node_id: str


def _keys_dir(home: Path, *, create: bool) -> Path:
    directory = Path(home) / KEYS_DIR
    if create:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkdir's mode is filtered by the umask and ignored for an existing directory.
        os.chmod(directory, 0o700)
    return directory


def _rotation_numbers(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    found = (_ROTATION_RE.match(p.name) for p in directory.iterdir())
    return sorted(int(m.group(1)) for m in found if m)


def _original_node_id(directory: Path, current: NodeIdentity) -> str:
    numbers = _rotation_numbers(directory)
    if not numbers:
        return current.node_id
    first = json.loads((directory / f"rotation.{numbers[0]}.json").read_bytes())
    node_id = first.get("node_id") if isinstance(first, dict) else None
    if not isinstance(node_id, str):
        raise KeyFileError("rotation.1.json names no node_id", reason="malformed")
    return node_id


def init_keys(home: Path, *, rng: random.Random | None = None) -> NodeIdentity:
    """Create the node's first key in ``<home>/keys``; ``KeyFileError("exists")`` if present.

    ``rng`` is for tests only (see ``NodeIdentity.generate``).
    """
    directory = _keys_dir(home, create=True)
    identity = NodeIdentity.generate(rng)
    save_private_key(directory / IDENTITY_FILE, identity)
    return identity


def show_keys(home: Path) -> KeyInfo:
    """Describe the current key (loading it, so an unsafe key file is reported)."""
    directory = _keys_dir(home, create=False)
    identity = load_private_key(directory / IDENTITY_FILE)
    return KeyInfo(
        node_id=identity.node_id,
        public_key=identity.public_key_b64,
        path=directory / IDENTITY_FILE,
        rotations=len(_rotation_numbers(directory)),
        original_node_id=_original_node_id(directory, identity),
    )


def latest_rotation(home: Path, identity: NodeIdentity) -> dict[str, Any] | None:
    """The home's last rotation record if it moved to ``identity``'s key (what the node
    presents when it registers: the registry admits the new key's id as the successor of the
    rotated one); ``None`` for a key never rotated to."""
    directory = _keys_dir(home, create=False)
    numbers = _rotation_numbers(directory)
    if not numbers:
        return None
    path = directory / f"rotation.{numbers[-1]}.json"
    try:
        _, record = load_json_object(path.read_bytes())
    except (OSError, InvalidRecord) as exc:
        raise KeyFileError(f"{path} is not a rotation record", reason="malformed") from exc
    if record.get("new_public_key") != identity.public_key_b64:
        return None
    return record


def rotate_keys(
    home: Path, now: datetime, *, rng: random.Random | None = None
) -> tuple[NodeIdentity, dict[str, Any]]:
    """Replace the node's key; return the new identity and the rotation record.

    The old key is kept as ``identity.<n>.pem.old`` and the record written as
    ``rotation.<n>.json`` (canonical bytes). The steps are ordered so that a crash at any
    point leaves a state the next call finishes: (a) the new key is staged in
    ``identity.pem.new``; (b) the record is written; (c) the old key is copied aside;
    (d) ``identity.pem`` is atomically replaced. A staged key with its record already written
    was announced and is completed, never discarded; a staged key without one was never
    announced and is replaced.
    """
    directory = _keys_dir(home, create=True)
    current_path = directory / IDENTITY_FILE
    staged = directory / f"{IDENTITY_FILE}.new"
    old = load_private_key(current_path)
    numbers = _rotation_numbers(directory)
    if staged.exists():
        pending = _pending_rotation(directory, numbers, staged)
        if pending is not None:
            new, record, n = pending
            return _finish_rotation(directory, old, new, record, n, staged)
        staged.unlink()
    new = NodeIdentity.generate(rng)
    n = (numbers[-1] if numbers else 0) + 1
    record = make_rotation(old, new, now, node_id=_original_node_id(directory, old))
    save_private_key(staged, new)  # (a)
    _write_new_file(directory / f"rotation.{n}.json", canonical_bytes(record), 0o644)  # (b)
    return _finish_rotation(directory, old, new, record, n, staged)


def _pending_rotation(
    directory: Path, numbers: list[int], staged: Path
) -> tuple[NodeIdentity, dict[str, Any], int] | None:
    # A crash between (b) and (d): the last record names the staged key as the new one.
    if not numbers:
        return None
    new = load_private_key(staged)
    path = directory / f"rotation.{numbers[-1]}.json"
    try:
        _, record = load_json_object(path.read_bytes())
    except InvalidRecord as exc:
        raise KeyFileError(f"{path} is not a rotation record", reason="malformed") from exc
    if record.get("new_public_key") != new.public_key_b64:
        return None
    return new, record, numbers[-1]


def _finish_rotation(
    directory: Path,
    old: NodeIdentity,
    new: NodeIdentity,
    record: dict[str, Any],
    n: int,
    staged: Path,
) -> tuple[NodeIdentity, dict[str, Any]]:
    kept = directory / f"identity.{n}.pem.old"
    if not kept.exists():
        save_private_key(kept, old)  # (c)
    os.replace(staged, directory / IDENTITY_FILE)  # (d)
    return new, record
