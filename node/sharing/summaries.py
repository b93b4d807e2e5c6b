"""Signed local-trust summaries at the edge: taken in from Sync, signed, served, counted.

``SummaryIntake.receive`` takes the summaries a peer's Sync answer carried, in this order:
(1) verify and parse (``lamarck.proto.trust_summary.read_summary``): a signature that does not
verify is the channel's fault, charged ``bad_signature`` (once per record) to the peer that
handed the bytes over only when it is the signer the bytes name (``charged_sender``: a relay
forwards summaries it did not write, and bytes broken on the way prove nothing about who broke
them); a verified signature over malformed content is the signer's (charged ``rejected``);
(2) the signer's standing: registered with this key and not revoked (``registry.pins``), and
not graylisted in this node's book; a summary refused for standing charges nobody (a relay
cannot know this node's view); (3) newest per signer (bytes already held are a duplicate
before any of this: every Sync answer relays them) (``lamarck.reputation.summaries``).
``rows`` gives what counts at a recomputation: held summaries of signers not graylisted and
not revoked *now*.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from lamarck.errors import InvalidRecord
from lamarck.gossip.audience import BandOf
from lamarck.policy.decision import charged_sender
from lamarck.proto.canonical import sha256_hex
from lamarck.proto.clock import Clock
from lamarck.proto.identity import NodeIdentity
from lamarck.proto.limits import DEFAULT_LIMITS, too_deep
from lamarck.proto.trust_summary import make_summary, read_summary, summary_fault
from lamarck.registry.pins import KeyPins, pin_refusal
from lamarck.reputation.events import EventKind, ReputationEvent
from lamarck.reputation.port import ReputationSink
from lamarck.reputation.scores import PeerBand
from lamarck.reputation.summaries import SummaryOutcome, TrustSummaries

__all__ = ["SummaryIntake", "SummaryTally"]

_log = logging.getLogger("lamarck.node.sharing")


@dataclass(slots=True)
class SummaryTally:
    """What one batch of received summaries did: kept, already held, refused by reason."""

    accepted: int = 0
    duplicate: int = 0
    refused: dict[str, int] = field(default_factory=dict)

    def refuse(self, reason: str) -> None:
        """Count one refusal."""
        self.refused[reason] = self.refused.get(reason, 0) + 1


def _claimed_signer(raw: bytes) -> str:
    """The ``signer_id`` broken bytes name, read as plain JSON ("" when they name none)."""
    if too_deep(raw, DEFAULT_LIMITS.max_depth):
        return ""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return ""
    signer = obj.get("signer_id") if isinstance(obj, dict) else None
    return signer if isinstance(signer, str) else ""


class SummaryIntake:
    """This node's held summaries, its own signed one, and the checks on received ones."""

    def __init__(
        self,
        held: TrustSummaries,
        *,
        identity: NodeIdentity,
        pins: Callable[[], KeyPins | None],
        band_of: BandOf,
        reputation: ReputationSink,
        clock: Clock,
    ) -> None:
        """``pins`` is read on each call (the registry may come and go): ``None`` means no
        registry, and then no summary is believed (``registry_unavailable``)."""
        self.held = held
        self._identity = identity
        self._pins = pins
        self._band_of = band_of
        self._reputation = reputation
        self._clock = clock

    async def receive(self, via: str, raws: Iterable[bytes]) -> SummaryTally:
        """Check and keep the summaries ``via`` handed over (see the module docstring)."""
        tally = SummaryTally()
        now = self._clock.now()
        for raw in raws:
            if self.held.holds(raw):
                tally.duplicate += 1
                continue
            try:
                summary = read_summary(raw)
            except InvalidRecord as e:
                tally.refuse(e.reason)
                fault, signer = summary_fault(e)
                if fault == "channel":
                    culprit = charged_sender(via, _claimed_signer(raw))
                else:
                    culprit = signer
                kind = EventKind.BAD_SIGNATURE if fault == "channel" else EventKind.REJECTED
                if culprit and culprit != self._identity.node_id:
                    self._reputation.emit(
                        ReputationEvent(
                            kind,
                            culprit,
                            now,
                            record_hash=sha256_hex(raw),
                            detail=f"trust summary refused: {e.reason}",
                        )
                    )
                continue
            signer = summary.signer_id
            key = summary.signature.signed_by if summary.signature is not None else None
            refusal = await self._standing_refusal(signer, key)
            if refusal is not None:
                tally.refuse(refusal)
                continue
            outcome, reason = self.held.offer(summary, raw, now)
            if outcome is SummaryOutcome.ACCEPTED:
                tally.accepted += 1
            elif outcome is SummaryOutcome.DUPLICATE:
                tally.duplicate += 1
            else:
                tally.refuse(reason)
        if tally.refused:
            _log.info("trust summaries from %s refused: %s", via, tally.refused)
        return tally

    async def _standing_refusal(self, signer: str, key: str | None) -> str | None:
        if signer == self._identity.node_id:
            return "own_summary"
        if self._band_of(signer) is PeerBand.GRAYLISTED:
            return "graylisted_signer"
        pins = self._pins()
        if pins is None:
            return "registry_unavailable"
        refusal = await pin_refusal(pins, signer, key)
        return None if refusal is None else refusal[0].value

    def rows(self, now: datetime, revoked: Iterable[str]) -> dict[str, dict[str, float]]:
        """The held rows that count now: not of a revoked or a graylisted signer."""
        out = set(revoked)
        out.update(s for s in self.held.signers() if self._band_of(s) is PeerBand.GRAYLISTED)
        return self.held.rows(now, exclude=out)

    def sign_own(self, trust: dict[str, float], now: datetime) -> bytes:
        """Sign this node's summary of ``trust`` and serve it from now on."""
        raw = make_summary(self._identity, trust, now)
        self.held.set_own(raw)
        return raw

    def served(self, now: datetime) -> Sequence[bytes]:
        """What a Sync answer carries (own first, then relayed; never graylisted signers')."""
        graylisted = [s for s in self.held.signers() if self._band_of(s) is PeerBand.GRAYLISTED]
        return self.held.served(now, exclude=graylisted)
