"""The trust summary: a node's signed local trust in the peers it has judged.

Every node signs one on each global-trust recomputation and serves its newest in Sync; the
receivers compute EigenTrust over them (``lamarck.reputation.summaries``, ``docs/trust.md``).

The record (canonical JSON, signed as ``RecordKind.trust_summary``, the signer bound to the
key through ``signer_id``)::

    {"schema_version": "1.0", "kind": "trust_summary", "signer_id": <node id>,
     "issued_at": RFC 3339 UTC, "trust": [{"peer": <node id>, "value": 0.65}, ...],
     "signature": {...}}

``trust`` lists each judged peer once, sorted by id, never the signer itself, at most
``RecordLimits.max_list_items`` entries, each value a finite number in [0, 1] (the signer's
pairwise trust; the receiver floors and row-normalises it, so the scale a signer writes gives
it no extra weight). ``issued_at`` orders one signer's summaries: the newest wins.

:func:`read_summary` checks in this order, so that a fault is charged to whoever made it:
(1) the bytes are a JSON object with a string ``signer_id`` and a signature block that
verifies for that id (else ``InvalidRecord`` whose :func:`summary_fault` is the channel:
anyone can write any signer id, so only the peer that handed the bytes over is known); (2) the
signed content is a well-formed summary (else the signer's fault: it signed garbage).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, ClassVar, Literal, Self

from pydantic import AfterValidator, StringConstraints, model_validator

from lamarck.errors import InvalidRecord, VerificationError
from lamarck.proto.canonical import canonical_bytes
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.limits import DEFAULT_LIMITS, RecordLimits
from lamarck.proto.memory import (
    NodeId,
    Probability,
    RecordBlock,
    RecordModel,
    Signature,
    Timestamp,
    max_items,
)
from lamarck.proto.signing import RecordKind, sign_object, verify_raw
from lamarck.proto.timefmt import format_ts, parse_ts

__all__ = [
    "SIGNER_ID_PATH",
    "SummaryFault",
    "TrustEntry",
    "TrustSummary",
    "make_summary",
    "read_summary",
    "summary_fault",
]

#: Where a summary names its signer; verification binds that id to the signing key.
SIGNER_ID_PATH: tuple[str, ...] = ("signer_id",)

#: Whose fault a refused summary is: the peer that handed it over, or its signer.
SummaryFault = Literal["channel", "signer"]


def _refused(message: str, reason: str, fault: SummaryFault, signer: str = "") -> InvalidRecord:
    return InvalidRecord(message, reason=reason, fault=fault, signer=signer)


def summary_fault(error: InvalidRecord) -> tuple[SummaryFault, str]:
    """Whose fault a :func:`read_summary` refusal is, and the verified signer when it is the
    signer's ("" when it is the channel's)."""
    fault: SummaryFault = "signer" if error.details.get("fault") == "signer" else "channel"
    return fault, str(error.details.get("signer", "")) if fault == "signer" else ""


class TrustEntry(RecordBlock):
    """The signer's trust in one peer, in [0, 1]."""

    peer: NodeId
    value: Probability


class TrustSummary(RecordModel):
    """A node's signed local trust in the peers it has judged (schema 1.x)."""

    _majors: ClassVar[tuple[int, ...]] = (1,)
    _always_written: ClassVar[tuple[str, ...]] = ("schema_version", "kind")

    schema_version: Annotated[str, StringConstraints(pattern=r"^1\.(0|[1-9][0-9]{0,3})$")] = "1.0"
    kind: Literal["trust_summary"] = "trust_summary"
    signer_id: NodeId
    issued_at: Timestamp
    trust: Annotated[tuple[TrustEntry, ...], AfterValidator(max_items("max_list_items"))] = ()
    signature: Signature | None = None

    @model_validator(mode="after")
    def _one_sorted_entry_per_peer(self) -> Self:
        peers = [e.peer for e in self.trust]
        if peers != sorted(set(peers)):
            raise InvalidRecord(
                "trust entries must name each peer once, sorted by id", reason="bad_summary"
            )
        if self.signer_id in peers:
            raise InvalidRecord("a summary never rates its own signer", reason="bad_summary")
        return self

    @property
    def issued(self) -> datetime:
        """``issued_at`` as an aware datetime."""
        return parse_ts(self.issued_at)

    @property
    def digest(self) -> str:
        """The signed hash naming this exact summary."""
        return self.signature.hash if self.signature is not None else ""

    def values(self) -> dict[str, float]:
        """The signer's row of local trust, by peer id."""
        return {e.peer: e.value for e in self.trust}


def make_summary(
    identity: NodeIdentity,
    trust: Mapping[str, float],
    now: datetime,
    *,
    limits: RecordLimits = DEFAULT_LIMITS,
) -> bytes:
    """This node's summary of ``trust`` (peer -> [0, 1]), signed, as canonical bytes.

    The signer's own id is left out; past ``limits.max_list_items`` peers, the most trusted
    are kept (ties by id), since trust at or below a receiver's floor lends nothing anyway.
    Non-finite or out-of-range values are a bug at the caller (``ValueError``).
    """
    rows = {p: v for p, v in trust.items() if p != identity.node_id}
    for peer, value in rows.items():
        if not 0.0 <= value <= 1.0:  # also refuses NaN
            raise ValueError(f"trust in {peer} must be in [0, 1], got {value!r}")
    kept = sorted(rows.items(), key=lambda kv: (-kv[1], kv[0]))[: limits.max_list_items]
    obj = {
        "schema_version": "1.0",
        "kind": "trust_summary",
        "signer_id": identity.node_id,
        "issued_at": format_ts(now),
        "trust": [{"peer": p, "value": v} for p, v in sorted(kept)],
    }
    raw = canonical_bytes(sign_object(RecordKind.trust_summary, obj, identity))
    TrustSummary.from_json(raw, limits=limits)  # what we sign, we can read back
    return raw


def read_summary(raw: bytes, *, limits: RecordLimits = DEFAULT_LIMITS) -> TrustSummary:
    """Verify and parse received summary bytes; ``InvalidRecord`` says why not, and
    :func:`summary_fault` whose fault it is (the module docstring gives the order of checks)."""
    if len(raw) > limits.max_record_bytes:
        raise _refused(
            f"summary is {len(raw)} bytes, limit {limits.max_record_bytes}", "too_large", "channel"
        )
    # (1) The signature, over the exact bytes, by the key of the id the record names.
    try:
        obj = verify_raw(RecordKind.trust_summary, raw, signer_id_path=SIGNER_ID_PATH)
    except VerificationError as e:
        raise _refused(str(e), e.reason, "channel") from None
    # (2) The signer signed it: anything wrong with its content is the signer's.
    try:
        return TrustSummary.from_json(raw, limits=limits)
    except InvalidRecord as e:
        signer = str(obj["signer_id"])  # bound to the verified key by (1)
        raise _refused(str(e), e.reason, "signer", signer) from None
