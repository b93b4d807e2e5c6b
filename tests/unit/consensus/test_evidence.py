"""A voter's own evidence: which of its outcomes bear on a lesson, and on which side."""

from __future__ import annotations

from lamarck.consensus.evidence import OutcomeFacts, bearing, own_evidence
from lamarck.consensus.params import QuorumParams
from lamarck.consensus.votes import OwnOutcome, Verdict, verdict_from_outcomes

OP = "shell:make build"
AVOID = "shell:make all"


def facts(n: int, passed: bool, *steps: tuple[str, str]) -> OutcomeFacts:
    """An outcome with id ``o<n>``."""
    return OutcomeFacts(f"o{n}", passed, tuple(steps))


def test_a_passing_run_that_used_the_operation_supports_the_lesson() -> None:
    assert bearing(facts(1, True, (OP, "ok")), OP, None) is True


def test_a_failed_step_on_the_operation_speaks_against_it_even_if_the_run_passed() -> None:
    assert bearing(facts(1, True, (OP, "failed"), (OP, "ok")), OP, None) is False
    assert bearing(facts(2, True, (OP, "refused")), OP, None) is False


def test_a_failed_run_that_used_the_operation_speaks_against_it() -> None:
    assert bearing(facts(1, False, (OP, "ok")), OP, None) is False


def test_an_outcome_that_never_ran_the_operation_has_no_bearing() -> None:
    assert bearing(facts(1, True, ("shell:ls", "ok")), OP, None) is None
    assert bearing(facts(2, True), OP, None) is None


def test_the_avoided_operation_working_speaks_against_an_avoid_lesson() -> None:
    assert bearing(facts(1, True, (AVOID, "ok")), OP, AVOID) is False
    assert bearing(facts(2, False, (AVOID, "failed")), OP, AVOID) is True


def test_own_evidence_keeps_each_outcome_once_and_drops_the_irrelevant() -> None:
    got = own_evidence(
        [
            facts(1, True, (OP, "ok")),
            facts(1, True, (OP, "ok")),
            facts(2, False, (OP, "failed")),
            facts(3, True, ("shell:ls", "ok")),
        ],
        operation=OP,
    )
    assert got == (OwnOutcome("o1", True), OwnOutcome("o2", False))


def test_no_evidence_means_abstain() -> None:
    verdict, ids, confidence = verdict_from_outcomes(own_evidence([], operation=OP), QuorumParams())
    assert (verdict, ids, confidence) == (Verdict.ABSTAIN, (), 0.0)
