"""Why an outcome taught nothing: the first rule that stopped it, most basic first."""

from __future__ import annotations

from dataclasses import replace

from lamarck.learning.outcomes import CheckRun, derive_verdict
from lamarck.learning.why import NothingLearned, why_nothing_learned


def run(order: int, *, ran: bool = True, failed: bool = False, stale: bool = False) -> CheckRun:
    """One run of the test check on the suite."""
    return CheckRun("pytest", "test", order, ran, failed, "suite", stale)


PASSED = derive_verdict([run(0)], claim_ok=True)


def why(checks: list[CheckRun] | None = None, **flags: object) -> str:
    """The reason for ``checks`` with defaults: an honest run that learned nothing."""
    verdict = derive_verdict(checks if checks is not None else [run(0)], claim_ok=True)
    args: dict[str, object] = {"claim_ok": True, "injected_instruction": False, "learned": False}
    args.update(flags)
    return why_nothing_learned(verdict, **args)  # type: ignore[arg-type]


def test_something_learned_needs_no_reason() -> None:
    assert why(learned=True) == ""
    assert why([run(0, failed=True)], learned=True, duplicate=True) == ""


def test_an_honest_passing_run_without_a_pair_says_so() -> None:
    assert why() == "no_failed_then_ok_pair"


def test_lessons_in_play_that_nothing_touched_are_not_attributed() -> None:
    assert why(in_play=2) == NothingLearned.NOT_ATTRIBUTED


def test_each_check_rule_is_named() -> None:
    assert why([]) == "no_check_ran"
    assert why([run(0, ran=False)]) == "check_not_run"
    assert why([run(0), run(1, failed=True)]) == "check_failed"
    assert why([run(0, stale=True)]) == "check_stale"


def test_the_latest_run_of_a_check_counts() -> None:
    assert why([run(0, failed=True), run(1)]) == "no_failed_then_ok_pair"


def test_the_most_basic_reason_comes_first() -> None:
    failing = [run(0, failed=True)]
    assert why(failing, duplicate=True, incognito=True) == "duplicate"
    assert why(failing, incognito=True, injected_instruction=True) == "incognito"
    assert why(failing, injected_instruction=True, claim_ok=False) == "injected_instruction"
    assert why(failing, claim_ok=False) == "claim_not_ok"
    assert why(failing, in_play=1) == "check_failed"


def test_a_loop_verdict_more_pessimistic_than_its_checks_is_named() -> None:
    verdict = replace(PASSED, passed=False)
    reason = why_nothing_learned(verdict, claim_ok=True, injected_instruction=False, learned=False)
    assert reason == "not_passed"
