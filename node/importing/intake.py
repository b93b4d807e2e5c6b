"""Stages (0)..(3) of the import pipeline (``lamarck.node.importing.pipeline``): the bytes
parsed and verified, and the signing key checked against the registry's pins. A refusal is
``Refused``, with the reputation event it charges and to whom.

A record refused at (1)..(3) is charged to the *delivering* peer only when that peer is the
source the record names (``decision.charged_sender``): a relay forwards bytes it received, and
bytes broken on the way prove nothing about who broke them. A malformed record names nobody
provably, so it charges nobody. A refusal that charges nobody is counted as ``uncharged`` in
``IMPORTS`` (and so in the node's status) by its reason.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime

from lamarck.domain.rows import QuarantineRow, Vector
from lamarck.errors import InvalidRecord, LamarckError, PolicyRejected, VerificationError
from lamarck.node.importing.results import ImportSource
from lamarck.policy.decision import charged_sender
from lamarck.policy.effects import HoldReason
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.limits import RecordLimits
from lamarck.proto.signed import SignedMemory
from lamarck.proto.timefmt import parse_ts
from lamarck.registry.pins import KeyPins, pin_refusal
from lamarck.registry.rules import PinReason
from lamarck.reputation.events import EventKind

__all__ = [
    "PIN_CHARGES",
    "ImportCall",
    "Refused",
    "check_key_pin",
    "parse_and_verify",
    "pin_hold",
]

#: The reputation event each stage (3) refusal charges to the delivering peer when it is the
#: source the record names. An unreachable registry is nobody's fault; a key that is not the
#: pinned one is a bad signature.
PIN_CHARGES: dict[PinReason, EventKind | None] = {
    PinReason.REGISTRY_UNAVAILABLE: None,
    PinReason.REVOKED_SOURCE: EventKind.REJECTED,
    PinReason.UNREGISTERED_SOURCE: EventKind.REJECTED,
    PinReason.KEY_NOT_PINNED: EventKind.BAD_SIGNATURE,
    # A compromised key's records are its thief's, not the relay's fault.
    PinReason.REVOKED_KEY: None,
}


async def check_key_pin(pins: KeyPins, signed: SignedMemory) -> None:
    """Stage (3): the claimed source is registered, not revoked, and pinned to the signing key
    (or the key its verified rotation chain retired after the record was last signed).

    Raises ``PolicyRejected`` (unregistered, revoked, registry unavailable: fail closed) or
    ``VerificationError`` (``key_not_pinned``), each with a ``PinReason`` as its reason.
    """
    signature = signed.memory.signature
    # Signed when last updated: a key retired by a rotation after that still verifies it.
    signed_at = parse_ts(signed.memory.provenance.updated_at)
    refusal = await pin_refusal(
        pins, signed.source_agent_id, signature.signed_by if signature else None, signed_at
    )
    if refusal is not None:
        reason, why = refusal
        error = VerificationError if reason is PinReason.KEY_NOT_PINNED else PolicyRejected
        raise error(f"source {why}", reason=reason)


class Refused(Exception):
    """Internal: a stage (1)..(3) refusal with its error and the event kind to charge."""

    def __init__(self, error: LamarckError, charge: EventKind | None, subject: str) -> None:
        super().__init__(error.reason)
        self.error = error
        self.charge = charge
        self.subject = subject


@dataclass(frozen=True, slots=True)
class ImportCall:
    """One pipeline call: where the record came from and how to answer."""

    source: ImportSource
    via: str
    now: datetime
    label: str = ""
    dry_run: bool = False
    held: QuarantineRow | None = None
    # A quorum certificate that came with the record (its wire bytes), if any.
    certificate: bytes | None = None
    # Vectors the filters asked for (``texts_to_embed``), computed with the content's (the
    # dict is filled before the lock; the call itself stays frozen).
    text_vectors: dict[str, Vector] = dataclasses.field(default_factory=dict)

    @property
    def detail(self) -> str:
        """The rejection log's detail: who delivered it, or which path and file."""
        if self.via:
            return f"via {self.via}"
        return f"{self.source.value} {self.label}".strip()

    @property
    def records(self) -> bool:
        """Whether refusals are recorded and charged (not for a dry run, an approval or a
        quorum's certification: the record was judged when it arrived)."""
        return not self.dry_run and self.source not in (ImportSource.APPROVAL, ImportSource.QUORUM)


def parse_and_verify(
    raw: bytes, call: ImportCall, *, limits: RecordLimits, max_future_skew_s: float
) -> SignedMemory:
    """Stages (1) and (2), and for an approval (0) the bytes its row was filed under;
    raises ``Refused`` with the event to charge."""
    via = call.via
    held = call.held
    if held is not None and sha256_hex(raw) != held.content_hash:
        # (0) an approval: the bytes are the ones the row was filed under.
        error = VerificationError(
            f"quarantine {held.id}: stored bytes do not match their content hash",
            reason="hash_mismatch",
            id=held.id,
        )
        raise Refused(error, None, "")
    # (1) size and schema.
    try:
        signed = SignedMemory.from_json(raw, limits=limits)
    except InvalidRecord as e:
        # Unparsed bytes name no signer: nobody provably made them.
        raise Refused(e, None, "") from None
    # (2) signature and hash (the clock check inside verify comes after the signature).
    try:
        signed.verify(call.now, max_future_skew_s)
    except VerificationError as e:
        if e.reason == "future_timestamp":
            # The signature held, so the date is the signer's choice.
            raise Refused(e, EventKind.REJECTED, signed.source_agent_id) from None
        sender = charged_sender(via, signed.source_agent_id)
        raise Refused(e, EventKind.BAD_SIGNATURE, sender) from None
    if held is not None and signed.source_agent_id != held.source_node_id:
        error = VerificationError(
            f"quarantine {held.id}: record names a different source than its row",
            reason="key_mismatch",
            id=held.id,
        )
        raise Refused(error, None, "")
    return signed


async def pin_hold(
    signed: SignedMemory, call: ImportCall, *, pins: KeyPins | None, self_node_id: str
) -> HoldReason | None:
    """(3) the claimed source must be registered, not revoked, and pinned to this key.

    Returns ``unknown_signer`` for a bundle whose signer no registry knows (held for an
    operator); raises ``Refused`` for any other refusal.
    """
    if signed.source_agent_id == self_node_id:
        return None  # verify bound the id to the key: this node knows its own key
    held = call.held
    if pins is None:
        if call.source is ImportSource.BUNDLE:
            return HoldReason.UNKNOWN_SIGNER
        if held is not None:
            return None  # no registry to ask again: the operator's word stands
        error = PolicyRejected(
            f"source {signed.source_agent_id} cannot be checked: this node has no registry",
            reason=PinReason.REGISTRY_UNAVAILABLE,
        )
        raise Refused(error, None, call.via)
    try:
        await check_key_pin(pins, signed)
    except (PolicyRejected, VerificationError) as e:
        reason = PinReason(e.reason)
        if reason is PinReason.UNREGISTERED_SOURCE:
            if call.source is ImportSource.BUNDLE:
                return HoldReason.UNKNOWN_SIGNER
            if held is not None and HoldReason.UNKNOWN_SIGNER in held.reasons:
                return None  # the operator vouched for a key no registry knows
        sender = charged_sender(call.via, signed.source_agent_id)
        raise Refused(e, PIN_CHARGES[reason], sender) from None
    return None
