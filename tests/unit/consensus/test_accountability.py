"""When reality speaks, each voter that took a side is judged right or wrong."""

from __future__ import annotations

from consensus_helpers import IDS, NOW, OTHER_HASH, RECORD_HASH, vote

from lamarck.consensus.accountability import voter_events
from lamarck.consensus.votes import Verdict
from lamarck.reputation.events import EventKind

V, C, A = Verdict.VALIDATE, Verdict.CONTRADICT, Verdict.ABSTAIN


def judged(reality_confirmed: bool) -> dict[str, EventKind]:
    cast = [vote(IDS[1], V), vote(IDS[2], C), vote(IDS[3], A), vote(IDS[4], V, confidence=0.5)]
    events = voter_events(
        cast, record_hash=RECORD_HASH, reality_confirmed=reality_confirmed, at=NOW
    )
    return {e.node_id: e.kind for e in events}


def test_reality_confirming_a_lesson_rewards_validators_and_charges_contradictors() -> None:
    assert judged(True) == {
        IDS[1].node_id: EventKind.VOTE_RIGHT,
        IDS[2].node_id: EventKind.VOTE_WRONG,
        IDS[4].node_id: EventKind.VOTE_RIGHT,
    }


def test_reality_contradicting_a_lesson_charges_validators() -> None:
    assert judged(False) == {
        IDS[1].node_id: EventKind.VOTE_WRONG,
        IDS[2].node_id: EventKind.VOTE_RIGHT,
        IDS[4].node_id: EventKind.VOTE_WRONG,
    }


def test_events_weigh_the_voters_confidence_and_are_keyed_once_per_record() -> None:
    once = voter_events(
        [vote(IDS[4], V, confidence=0.5)], record_hash=RECORD_HASH, reality_confirmed=False, at=NOW
    )
    later = voter_events(
        [vote(IDS[4], V, confidence=0.5)],
        record_hash=RECORD_HASH,
        reality_confirmed=False,
        at=NOW.replace(hour=20),
    )
    assert once[0].weight == 0.5
    assert once[0].key == later[0].key  # a second outcome does not judge the voter again


def test_abstainers_equivocators_and_other_records_are_not_judged() -> None:
    cast = [
        vote(IDS[1], A),
        vote(IDS[2], V),
        vote(IDS[2], C, n=1),
        vote(IDS[3], V, record_hash=OTHER_HASH),
    ]
    assert voter_events(cast, record_hash=RECORD_HASH, reality_confirmed=True, at=NOW) == ()
