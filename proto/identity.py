"""Node identity: an Ed25519 key pair, and the node id derived from its public key.

A node id is not chosen, it is computed: ``"lmk1"`` + the first 32 characters of the
lowercase, unpadded base32 of ``sha256(public key)`` (160 bits). So a record's
``source_agent_id`` and the key that signed it are bound; claiming someone else's id needs
their key.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import random
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from lamarck.errors import InvalidRecord

__all__ = [
    "NODE_ID_PREFIX",
    "PUBLIC_KEY_SIZE",
    "SEED_SIZE",
    "SIGNATURE_SIZE",
    "NodeIdentity",
    "b64u_decode",
    "b64u_encode",
    "is_node_id",
    "node_id_for",
    "public_key_from_b64",
    "public_key_from_bytes",
    "verify_ed25519",
]

NODE_ID_PREFIX = "lmk1"
PUBLIC_KEY_SIZE = 32
SEED_SIZE = 32
SIGNATURE_SIZE = 64
# 32 base32 characters = 160 bits of sha256: far above the 128-bit floor for collisions
# an attacker would have to find by grinding keys.
_NODE_ID_CHARS = 32
_NODE_ID_RE = re.compile(rf"^{NODE_ID_PREFIX}[a-z2-7]{{{_NODE_ID_CHARS}}}$")
_B64U_RE = re.compile(r"^[A-Za-z0-9_-]*$")


def b64u_encode(data: bytes) -> str:
    """Encode ``data`` as base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_decode(text: str) -> bytes:
    """Decode unpadded base64url strictly; ``InvalidRecord(reason="malformed")`` otherwise.

    Strict means: only the URL-safe alphabet, no ``=`` padding, no whitespace, and no
    non-zero bits left over in the last character. Every byte string then has exactly one
    encoding, so a signed record cannot be re-encoded into different bytes (and a different
    content hash) by a relay.
    """
    if not isinstance(text, str) or not _B64U_RE.match(text) or len(text) % 4 == 1:
        raise InvalidRecord("not unpadded base64url", reason="malformed")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidRecord("not unpadded base64url", reason="malformed") from exc
    if b64u_encode(data) != text:
        raise InvalidRecord("non-canonical base64url (stray trailing bits)", reason="malformed")
    return data


def node_id_for(public_key_bytes: bytes) -> str:
    """Return the node id of a raw 32-byte Ed25519 public key."""
    if not isinstance(public_key_bytes, bytes) or len(public_key_bytes) != PUBLIC_KEY_SIZE:
        raise InvalidRecord("an Ed25519 public key is 32 bytes", reason="malformed")
    return _node_id_cached(public_key_bytes)


# Every verification derives the signer's id; a node hears from few distinct keys, and the
# pure-Python base32 costs about as much as the rest of the key checks together.
@functools.lru_cache(maxsize=4096)
def _node_id_cached(public_key_bytes: bytes) -> str:
    digest = hashlib.sha256(public_key_bytes).digest()
    encoded = base64.b32encode(digest).decode("ascii").lower()
    return NODE_ID_PREFIX + encoded[:_NODE_ID_CHARS]


def is_node_id(value: object) -> bool:
    """Tell whether ``value`` has the shape of a node id (it cannot tell whose it is)."""
    return isinstance(value, str) and _NODE_ID_RE.match(value) is not None


def public_key_from_bytes(data: bytes) -> Ed25519PublicKey:
    """Load a raw 32-byte Ed25519 public key; ``InvalidRecord(reason="malformed")`` otherwise."""
    if len(data) != PUBLIC_KEY_SIZE:
        raise InvalidRecord("an Ed25519 public key is 32 bytes", reason="malformed")
    try:
        return Ed25519PublicKey.from_public_bytes(data)
    except ValueError as exc:
        raise InvalidRecord("not an Ed25519 public key", reason="malformed") from exc


def public_key_from_b64(text: str) -> Ed25519PublicKey:
    """Load an Ed25519 public key from unpadded base64url."""
    return public_key_from_bytes(b64u_decode(text))


def verify_ed25519(public_key: Ed25519PublicKey, signature: bytes, data: bytes) -> bool:
    """Return whether ``signature`` is a valid Ed25519 signature of ``data`` by ``public_key``."""
    try:
        public_key.verify(signature, data)
    except InvalidSignature:
        return False
    return True


class NodeIdentity:
    """A node's Ed25519 private key, with its public key and node id."""

    __slots__ = ("_node_id", "_private_key", "_public_key_bytes")

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._private_key = private_key
        self._public_key_bytes = private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self._node_id = node_id_for(self._public_key_bytes)

    @classmethod
    def generate(cls, rng: random.Random | None = None) -> NodeIdentity:
        """Create a new identity: from the OS CSPRNG, or from ``rng`` for reproducible tests.

        ``rng`` is a ``random.Random`` and therefore not a secure source: pass it only in
        tests and simulations, never for a real node.
        """
        if rng is None:
            return cls(Ed25519PrivateKey.generate())
        return cls.from_seed(rng.randbytes(SEED_SIZE))

    @classmethod
    def from_seed(cls, seed: bytes) -> NodeIdentity:
        """Derive the identity whose RFC 8032 private key (seed) is these 32 bytes."""
        if not isinstance(seed, bytes) or len(seed) != SEED_SIZE:
            raise InvalidRecord("an Ed25519 seed is 32 bytes", reason="malformed")
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @property
    def private_key(self) -> Ed25519PrivateKey:
        """The private key object (for key files; never log or send it)."""
        return self._private_key

    @property
    def public_key(self) -> Ed25519PublicKey:
        """The public key object."""
        return self._private_key.public_key()

    @property
    def public_key_bytes(self) -> bytes:
        """The raw 32-byte public key."""
        return self._public_key_bytes

    @property
    def public_key_b64(self) -> str:
        """The public key as unpadded base64url (the ``signed_by`` form)."""
        return b64u_encode(self._public_key_bytes)

    @property
    def node_id(self) -> str:
        """This node's id, derived from its public key."""
        return self._node_id

    def sign(self, data: bytes) -> bytes:
        """Return the 64-byte Ed25519 signature of ``data``."""
        return self._private_key.sign(data)

    def __repr__(self) -> str:
        # Never show key material, not even by accident in a log line.
        return f"NodeIdentity(node_id={self._node_id!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeIdentity):
            return NotImplemented
        return self._public_key_bytes == other._public_key_bytes

    def __hash__(self) -> int:
        return hash(self._public_key_bytes)
