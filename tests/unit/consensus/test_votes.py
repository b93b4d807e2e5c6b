"""A voter votes from its own outcomes only; its vote is signed and checked by proto."""

from __future__ import annotations

import random

import pytest
from consensus_helpers import IDS, MEMORY_ID, NOW, RECORD_HASH, tampered, uid

from lamarck.consensus.params import QuorumParams
from lamarck.consensus.votes import (
    OwnOutcome,
    Verdict,
    make_vote,
    verdict_from_outcomes,
    verdict_of,
    verify_vote,
)
from lamarck.errors import ConfigError, VerificationError

PARAMS = QuorumParams()


def test_without_outcomes_of_its_own_a_voter_abstains() -> None:
    assert verdict_from_outcomes([], PARAMS) == (Verdict.ABSTAIN, (), 0.0)


def test_the_side_with_more_own_outcomes_wins_and_names_them_as_evidence() -> None:
    outcomes = [OwnOutcome(uid(1), True), OwnOutcome(uid(2), True), OwnOutcome(uid(3), False)]
    verdict, evidence, confidence = verdict_from_outcomes(outcomes, PARAMS)
    assert (verdict, evidence) == (Verdict.VALIDATE, (uid(1), uid(2)))
    assert confidence == pytest.approx(2 / 3)
    failing = [OwnOutcome(uid(4), False), OwnOutcome(uid(5), False)]
    assert verdict_from_outcomes(failing, PARAMS)[0] is Verdict.CONTRADICT


def test_a_tie_or_too_little_evidence_abstains() -> None:
    tie = [OwnOutcome(uid(1), True), OwnOutcome(uid(2), False)]
    assert verdict_from_outcomes(tie, PARAMS)[0] is Verdict.ABSTAIN
    strict = QuorumParams(min_outcomes_for_verdict=2)
    assert verdict_from_outcomes([OwnOutcome(uid(1), True)], strict)[0] is Verdict.ABSTAIN


def test_the_same_outcome_listed_twice_is_one_outcome() -> None:
    twice = [OwnOutcome(uid(1), True), OwnOutcome(uid(1), True), OwnOutcome(uid(2), False)]
    assert verdict_from_outcomes(twice, PARAMS)[0] is Verdict.ABSTAIN


def test_a_made_vote_is_signed_by_its_voter_and_any_change_breaks_it() -> None:
    v = make_vote(
        identity=IDS[1],
        memory_id=MEMORY_ID,
        memory_hash=RECORD_HASH,
        outcomes=[OwnOutcome(uid(9), False)],
        now=NOW,
        rng=random.Random(5),
        params=PARAMS,
    )
    verify_vote(v)
    assert verdict_of(v) is Verdict.CONTRADICT and v.voter_id == IDS[1].node_id
    assert v.outcome_ids == (uid(9),)
    with pytest.raises(VerificationError):
        verify_vote(tampered(v))


def test_quorum_params_are_validated() -> None:
    for bad in (
        {"min_voters": 3},
        {"voters": 3},
        {"vote_timeout_s": float("nan")},
        {"retry_after_s": 1.0},
        {"min_outcomes_for_verdict": 0},
    ):
        with pytest.raises(ConfigError):
            QuorumParams(**bad)  # type: ignore[arg-type]
