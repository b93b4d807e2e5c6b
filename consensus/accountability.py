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

from collections.abc import Iterable
from datetime import datetime

from lamarck.consensus.votes import Verdict, verdict_of
from lamarck.proto.vote import Vote
from lamarck.reputation.events import EventKind, ReputationEvent

__all__ = ["voter_events"]


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
