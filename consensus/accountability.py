"""Voters answer to reality: when a lesson's truth is later seen, who voted right.

When this node's own outcome later confirms or contradicts a lesson that a quorum decided,
each voter that took a side is judged by it: VALIDATE on a confirmed lesson or CONTRADICT on a
contradicted one is right (``vote_right``, a small raise), the opposite is wrong
(``vote_wrong``). Abstaining is never judged (no evidence, no claim). Only the votes of the
certificate count (callers pass ``verify_certificate``'s ``counted`` votes), one judgement per
voter and record: the events are keyed by record hash, so a second outcome on the same lesson
does not judge the voters again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from lamarck.consensus.votes import Verdict, verdict_of
from lamarck.proto.vote import Vote
from lamarck.reputation.events import EventKind, ReputationEvent

if TYPE_CHECKING:
    from lamarck.consensus.certificate import QuorumCertificate

__all__ = ["CertificateLookup", "voter_events", "voter_events_for_reality"]

CertificateLookup = Callable[[str], "QuorumCertificate | None"]
"""The certificate a record was accepted with, by record hash (None: no quorum decided it)."""

#: Reality events whose verdict judges the voters, and whether reality confirmed.
_REALITY = {EventKind.LESSON_CONFIRMED: True, EventKind.LESSON_CONTRADICTED: False}


def voter_events(
    votes: Iterable[Vote],
    *,
    record_hash: str,
    reality_confirmed: bool,
    at: datetime,
) -> tuple[ReputationEvent, ...]:
    """The reputation events for the voters of ``record_hash`` once reality has spoken.

    Each event's weight is the voter's stated confidence: being sure and wrong costs more.
    A voter with votes on both sides (which ``tally`` never counts) is not judged here.
    """
    sides: dict[str, set[Verdict]] = {}
    confidence: dict[str, float] = {}
    for vote in votes:
        if vote.memory_hash != record_hash:
            continue
        verdict = verdict_of(vote)
        if verdict is Verdict.ABSTAIN:
            continue
        sides.setdefault(vote.voter_id, set()).add(verdict)
        confidence[vote.voter_id] = max(confidence.get(vote.voter_id, 0.0), vote.confidence)
    events: list[ReputationEvent] = []
    for voter in sorted(sides):
        if len(sides[voter]) != 1:
            continue
        (verdict,) = sides[voter]
        right = (verdict is Verdict.VALIDATE) == reality_confirmed
        kind = EventKind.VOTE_RIGHT if right else EventKind.VOTE_WRONG
        detail = "reality confirmed" if reality_confirmed else "reality contradicted"
        events.append(
            ReputationEvent(
                kind=kind,
                node_id=voter,
                at=at,
                weight=confidence[voter],
                record_hash=record_hash,
                detail=f"voted {verdict.name.lower()}; {detail} the lesson",
            )
        )
    return tuple(events)


def voter_events_for_reality(
    reality: Iterable[ReputationEvent], certificate_of: CertificateLookup
) -> tuple[ReputationEvent, ...]:
    """The voters' events for the reality events one outcome produced.

    Each ``lesson_confirmed`` / ``lesson_contradicted`` event about a record accepted with a
    quorum certificate judges that certificate's voters (``voter_events``); other events and
    records no quorum decided judge nobody.
    """
    out: list[ReputationEvent] = []
    for event in reality:
        confirmed = _REALITY.get(event.kind)
        if confirmed is None or not event.record_hash:
            continue
        cert = certificate_of(event.record_hash)
        if cert is None:
            continue
        out.extend(
            voter_events(
                cert.votes, record_hash=event.record_hash, reality_confirmed=confirmed, at=event.at
            )
        )
    return tuple(out)
