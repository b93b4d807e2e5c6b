"""Reality events judge the voters of the certificate a record was accepted with."""

from __future__ import annotations

from consensus_helpers import IDS, NOW, RECORD_HASH, vote

from lamarck.consensus.accountability import voter_events_for_reality
from lamarck.consensus.certificate import QuorumCertificate
from lamarck.consensus.votes import Verdict
from lamarck.reputation.events import EventKind, ReputationEvent

CERT = QuorumCertificate(
    record_hash=RECORD_HASH,
    voters=(IDS[1].node_id, IDS[2].node_id, IDS[3].node_id),
    opened_at=NOW,
    closes_at=NOW,
    votes=(
        vote(IDS[1], Verdict.VALIDATE),
        vote(IDS[2], Verdict.CONTRADICT),
        vote(IDS[3], Verdict.ABSTAIN),
    ),
)


def lookup(record_hash: str) -> QuorumCertificate | None:
    """The one certificate of these tests."""
    return CERT if record_hash == RECORD_HASH else None


def reality(kind: EventKind, record_hash: str = RECORD_HASH) -> ReputationEvent:
    """A reality event about the record's source."""
    return ReputationEvent(kind=kind, node_id=IDS[0].node_id, at=NOW, record_hash=record_hash)


def test_a_confirmed_lesson_rewards_validators_and_charges_contradictors() -> None:
    events = voter_events_for_reality([reality(EventKind.LESSON_CONFIRMED)], lookup)
    assert {(e.node_id, e.kind) for e in events} == {
        (IDS[1].node_id, EventKind.VOTE_RIGHT),
        (IDS[2].node_id, EventKind.VOTE_WRONG),
    }


def test_a_contradicted_lesson_turns_the_judgement_around() -> None:
    events = voter_events_for_reality([reality(EventKind.LESSON_CONTRADICTED)], lookup)
    assert {(e.node_id, e.kind) for e in events} == {
        (IDS[1].node_id, EventKind.VOTE_WRONG),
        (IDS[2].node_id, EventKind.VOTE_RIGHT),
    }


def test_records_no_quorum_decided_and_other_events_judge_nobody() -> None:
    assert voter_events_for_reality([reality(EventKind.LESSON_CONFIRMED, "00" * 32)], lookup) == ()
    assert voter_events_for_reality([reality(EventKind.REJECTED)], lookup) == ()
