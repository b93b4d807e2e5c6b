"""``SignedMemory``: a memory exactly as received, with its parsed model and content hash.

A signature is checked over the bytes that were signed, never over a re-serialisation: the
object keeps the received bytes, and verification derives the signing input from them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from lamarck.errors import InvalidRecord, VerificationError
from lamarck.proto.canonical import ReceivedJson, canonical_bytes, parse_received, sha256_hex
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.limits import DEFAULT_LIMITS, RecordLimits, check_depth
from lamarck.proto.memory import Memory, MemoryV2, parse_memory
from lamarck.proto.signing import (
    MEMORY_SIGNER_ID_PATH,
    SIGNATURE_FIELD,
    RecordKind,
    sign_object,
    verify_received,
)
from lamarck.proto.timefmt import parse_ts

__all__ = ["DEFAULT_MAX_FUTURE_SKEW_S", "SignedMemory", "require_canonical"]

#: A record dated further than this into the future is refused.
DEFAULT_MAX_FUTURE_SKEW_S = 300.0


def require_canonical(received: ReceivedJson) -> None:
    """Refuse bytes that are not exactly the RFC 8785 canonical form of their own JSON.

    Why: one record has exactly one byte representation. Then the signature is checked over
    the bytes the signer produced (not over our re-serialisation of them), and the content
    hash (sha256 of the bytes) identifies the record: two copies of one record arriving by
    different peers hash alike and dedupe, and a relay cannot mint "new" records by
    re-spacing or re-ordering a signed one. Raises ``VerificationError(reason="not_canonical")``.
    """
    if not received.is_canonical:
        raise VerificationError(
            "record bytes are not their RFC 8785 canonical form", reason="not_canonical"
        )


class SignedMemory:
    """A received memory: exact bytes, parsed ``MemoryV2`` view, and ``content_hash``.

    Build one with :meth:`from_json` (received bytes) or :meth:`sign` (a local memory). Parsing
    does not verify; call :meth:`verify` before trusting it.
    """

    __slots__ = ("_memory", "_raw", "_received", "content_hash")

    def __init__(self, raw: bytes, *, limits: RecordLimits = DEFAULT_LIMITS) -> None:
        """Parse ``raw`` (see :meth:`from_json`)."""
        if not isinstance(raw, bytes):
            raise InvalidRecord("a signed memory is bytes", reason="malformed")
        # Size first: a hostile peer must not make us parse megabytes before refusing them.
        if len(raw) > limits.max_record_bytes:
            raise InvalidRecord(
                f"record is {len(raw)} bytes, limit {limits.max_record_bytes}",
                reason="too_large",
            )
        check_depth(raw, limits)
        self._raw = raw
        self._received = parse_received(raw, detach=SIGNATURE_FIELD)
        # parse_memory applies the schema, the limits and (for v1) the migration to a v2
        # view; the signature stays over the original bytes, whatever their version.
        self._memory = parse_memory(raw, limits=limits)
        if self._memory.signature is None:
            raise InvalidRecord("a signed memory needs a signature block", reason="malformed")
        #: sha256 hex of the exact bytes: the record's identity for dedupe and storage.
        self.content_hash = sha256_hex(raw)

    @classmethod
    def from_json(cls, raw: bytes, *, limits: RecordLimits = DEFAULT_LIMITS) -> SignedMemory:
        """Parse received bytes; ``InvalidRecord`` if they are not a memory with a signature."""
        return cls(raw, limits=limits)

    @classmethod
    def sign(
        cls,
        memory: Memory | MemoryV2,
        identity: NodeIdentity,
        *,
        limits: RecordLimits = DEFAULT_LIMITS,
    ) -> SignedMemory:
        """Sign ``memory`` with ``identity`` and return it as canonical bytes.

        The memory's ``provenance.source_agent_id`` must be ``identity.node_id`` (else
        ``VerificationError(reason="key_mismatch")``): nobody signs in another node's name.
        A v1 memory is signed as v1 bytes.
        """
        if memory.provenance.source_agent_id != identity.node_id:
            raise VerificationError(
                "source_agent_id is not the signing identity's node id", reason="key_mismatch"
            )
        signed = sign_object(RecordKind.memory, memory.signable_obj(), identity)
        return cls(canonical_bytes(signed), limits=limits)

    @property
    def raw(self) -> bytes:
        """The exact bytes received (or produced by :meth:`sign`)."""
        return self._raw

    @property
    def memory(self) -> MemoryV2:
        """The parsed record as v2 (a v1 record is migrated; its bytes stay v1)."""
        return self._memory

    @property
    def obj(self) -> dict[str, Any]:
        """The parsed JSON object of :attr:`raw` (read-only by convention)."""
        value: dict[str, Any] = self._received.value
        return value

    @property
    def is_canonical(self) -> bool:
        """Whether :attr:`raw` is exactly its own RFC 8785 canonical form."""
        return self._received.is_canonical

    @property
    def source_agent_id(self) -> str:
        """The node id the record names as its author (bound to the key by :meth:`verify`)."""
        return self._memory.provenance.source_agent_id

    def verify(self, now: datetime, max_future_skew_s: float = DEFAULT_MAX_FUTURE_SKEW_S) -> None:
        """Return ``None`` or raise ``VerificationError``.

        Checks, in order: (1) the bytes are canonical (``not_canonical``); (2)-(7) the
        signature over them for ``RecordKind.memory``, its author bound to
        ``provenance.source_agent_id`` (``malformed | unknown_algorithm | key_mismatch |
        hash_mismatch | bad_signature``, see ``signing``); (8) no timestamp of the record is
        more than ``max_future_skew_s`` after ``now`` (``future_timestamp``). The signature
        comes before the clock so that a future date is only ever blamed on its signer.
        """
        if now.tzinfo is None:
            raise ValueError("verify needs a timezone-aware now")
        if max_future_skew_s < 0:
            raise ValueError("max_future_skew_s must be >= 0")
        # (1)
        require_canonical(self._received)
        # (2)-(7)
        verify_received(
            RecordKind.memory,
            self._received,
            signer_id_path=MEMORY_SIGNER_ID_PATH,
            require_canonical=False,  # checked just above
        )
        # (8) Every date the record states: a record "from the future" would sort first,
        #     outlive its decay and win recency ties everywhere it spreads.
        limit = now + timedelta(seconds=max_future_skew_s)
        for label, stamp in self._timestamps():
            if parse_ts(stamp) > limit:
                raise VerificationError(
                    f"{label} {stamp} is more than {max_future_skew_s:g} s in the future",
                    reason="future_timestamp",
                )

    def _timestamps(self) -> list[tuple[str, str]]:
        provenance = self._memory.provenance
        stamps = [
            ("provenance.created_at", provenance.created_at),
            ("provenance.updated_at", provenance.updated_at),
        ]
        if provenance.last_validated is not None:
            stamps.append(("provenance.last_validated", provenance.last_validated))
        stamps.extend(
            (f"evidence[{i}].timestamp", e.timestamp) for i, e in enumerate(self._memory.evidence)
        )
        return stamps

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SignedMemory):
            return NotImplemented
        return self._raw == other._raw

    def __hash__(self) -> int:
        return hash(self.content_hash)

    def __repr__(self) -> str:
        return f"SignedMemory(id={self._memory.id!r}, content_hash={self.content_hash[:16]!r})"
